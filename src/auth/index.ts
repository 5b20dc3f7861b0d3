/** What the auth folder offers the others: nothing else of it is theirs to import. */
export { ApiOffResponse, AuthenticatedAs, callerOf, RequireToken } from './token.guard.js';
export type { Caller } from './token.guard.js';
