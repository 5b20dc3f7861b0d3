import { ForbiddenException, InternalServerErrorException } from '@nestjs/common';
import { ExpectedServerErrorException } from '../common/http-exception.filter.js';

/**
 * Spec 4.3 rule 2, in the contract's words. The event is stored all the same; nobody
 * listening is a normal state, so it is logged as a warning.
 */
export class NoListenersException extends ExpectedServerErrorException {
  constructor() {
    super('Failed to deliver event: no active listeners');
  }
}

export class DeliveryFailedException extends InternalServerErrorException {
  constructor(reason: 'event bus unavailable' | 'storage unavailable', cause: unknown) {
    super(`Failed to deliver event: ${reason}`, { cause });
  }
}

/** The user opted out (PUT /users/:userId/opt-out): nothing was stored or broadcast. */
export class UserOptedOutException extends ForbiddenException {
  constructor(cause: unknown) {
    super('The user has opted out: their names are not recorded', { cause });
  }
}
