/** What the name-events folder offers the others: nothing else of it is theirs to import. */
export { NameEventConsumer } from './consumers/name-event-consumer.decorator.js';
export type { NameEventHandler } from './consumers/name-event-consumer.decorator.js';
export { KnownNamesRepository } from './known-names.repository.js';
export type {
  KnownNameField,
  KnownNameKey,
  KnownNameValue,
  ObservedMember,
} from './known-names.repository.js';
export { NameChangeEvent } from './name-change-event.entity.js';
export { NameEventLogRepository } from './name-event-log.repository.js';
export { NameEventRemovalsService } from './name-event-removals.service.js';
export { ListenerOverflowError } from './name-event-stream.js';
export type { NameEventStream, StreamPacing } from './name-event-stream.js';
export { NameEventStreamsService } from './name-event-streams.service.js';
export {
  NAME_TYPES,
  RecordingRefusedError,
  StorageUnavailableError,
  USER_PARTITIONS,
  userPartitionOf,
} from './name-event.types.js';
export type {
  NameEntry,
  NameType,
  NewNameEvent,
  PublishOutcome,
  StoredNameEvent,
} from './name-event.types.js';
export { NameEventsModule } from './name-events.module.js';
export { NameEventsService } from './name-events.service.js';
export { HISTORY_END, HISTORY_START, NameHistoryRepository } from './name-history.repository.js';
export { NameSearchRepository, SEARCH_START } from './name-search.repository.js';
export { OnNameEvent } from './on-name-event.decorator.js';
export { RecordingGuardsService } from './recording-guards.service.js';
export type { RecordingGuard } from './recording-guards.service.js';
