/** What the auth folder offers the others: nothing else of it is theirs to import. */
export { RequireToken } from './require-token.decorator.js';
export { AuthenticatedAs, callerOf } from './token.guard.js';
export type { Caller } from './token.guard.js';
