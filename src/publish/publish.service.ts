import { Injectable } from '@nestjs/common';
import { BusUnavailableError } from '../bus/index.js';
import { parseZonedTimestamp } from '../common/timestamp.js';
import {
  NameEventsService,
  RecordingRefusedError,
  StorageUnavailableError,
} from '../name-events/index.js';
import type { NameChangeEventDto, PublishResponseDto } from './publish.dto.js';
import {
  DeliveryFailedException,
  NoListenersException,
  UserOptedOutException,
} from './publish.errors.js';

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
      if (error instanceof BusUnavailableError)
        throw new DeliveryFailedException('event bus unavailable', error);
      if (error instanceof StorageUnavailableError)
        throw new DeliveryFailedException('storage unavailable', error);
      if (error instanceof RecordingRefusedError) throw new UserOptedOutException(error);
      throw error;
    }
    if (receivers === 0) throw new NoListenersException();
    return { success: true };
  }
}
