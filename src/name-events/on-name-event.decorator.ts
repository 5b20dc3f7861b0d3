import { OnEvent } from '@nestjs/event-emitter';
import type { NameDomainEvents } from './name-event.types.js';

/**
 * Handles a domain event (NameDomainEvents): `@OnNameEvent('user.erased')` on a provider's
 * method, whose parameter the event map types.
 */
export function OnNameEvent<K extends keyof NameDomainEvents>(name: K) {
  return OnEvent(name) as <T extends (event: NameDomainEvents[K]) => unknown>(
    target: object,
    key: string | symbol,
    descriptor: TypedPropertyDescriptor<T>,
  ) => void;
}
