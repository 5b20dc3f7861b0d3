import { ForbiddenException, Injectable, InternalServerErrorException } from '@nestjs/common';
import { BusUnavailableError } from '../bus/index.js';
import { ExpectedServerErrorException } from '../common/http-exception.filter.js';
import { parseZonedTimestamp } from '../common/timestamp.js';
import {
  NameEventsService,
  RecordingRefusedError,
  StorageUnavailableError,
} from '../name-events/index.js';
import type { NameChangeEventDto, PublishResponseDto } from './publish.dto.js';

export const NO_LISTENERS_MESSAGE = 'Failed to deliver event: no active listeners';

/**
 * POST's use case: a validated body becomes a name change, published through the domain
 * (stored, then broadcast), and the outcome becomes the contract's answer: 200 once it reached
 * every instance with listeners, the no-listener 500 (stored all the same), the 500s of a
 * failed store or broadcast, the 403 of a user who opted out.
 */
@Injectable()
export class PublishService {
  constructor(private readonly nameEvents: NameEventsService) {}

  async publishNameChange(body: NameChangeEventDto): Promise<PublishResponseDto> {
    let receivers: number;
    try {
      ({ receivers } = await this.nameEvents.publish({
        userId: body.userId,
        type: body.type,
        name: body.name,
        changedAt: parseZonedTimestamp(body.changedAt)!,
      }));
    } catch (error) {
      const failed = (reason: string) =>
        new InternalServerErrorException(`Failed to deliver event: ${reason}`, { cause: error });
      if (error instanceof BusUnavailableError) throw failed('event bus unavailable');
      if (error instanceof StorageUnavailableError) throw failed('storage unavailable');
      if (error instanceof RecordingRefusedError) {
        // The user opted out (PUT /users/:userId/opt-out): nothing was stored or broadcast.
        const message = 'The user has opted out: their names are not recorded';
        throw new ForbiddenException(message, { cause: error });
      }
      throw error;
    }
    // Spec 4.3 rule 2, in the contract's words. The event is stored all the same; nobody
    // listening is a normal state, so it is logged as a warning.
    if (receivers === 0) throw new ExpectedServerErrorException(NO_LISTENERS_MESSAGE);
    return { success: true };
  }
}
