import { NameChangeEvent } from '../history/name-change-event.entity.js';
import { KnownName } from '../name-events/known-name.entity.js';

/** Every entity the data source maps. */
export const entities = [NameChangeEvent, KnownName];
