/** What the cursors folder offers the others: nothing else of it is theirs to import. */
export { CursorSignerService } from './cursor-signer.service.js';
export { CursorsModule } from './cursors.module.js';
