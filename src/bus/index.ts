/** What the bus folder offers the others: nothing else of it is theirs to import. */
export { BusModule } from './bus.module.js';
export { BusUnavailableError, NameEventBus } from './name-event-bus.js';
export type { BusSubscription } from './name-event-bus.js';
