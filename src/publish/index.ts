/** What the publish folder offers the others: nothing else of it is theirs to import. */
export { NAME_MAX_LENGTH, SentNameChangeEventDto } from './name-change-event.dto.js';
