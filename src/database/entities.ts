import { KnownName } from '../name-events/known-name.entity.js';
import { NameChangeEvent } from '../name-events/name-change-event.entity.js';
import { UserOptOut } from '../name-events/user-opt-out.entity.js';

/** Every entity the data source maps. */
export const entities = [NameChangeEvent, KnownName, UserOptOut];
