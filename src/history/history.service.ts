import { Injectable } from '@nestjs/common';
import { parseZonedTimestamp } from '../common/timestamp.js';
import type { HistoryQueryDto, HistoryResponseDto } from './history.dto.js';
import { NameChangeEventRepository } from '../name-events/name-change-event.repository.js';

@Injectable()
export class HistoryService {
  constructor(private readonly events: NameChangeEventRepository) {}

  async getNameHistory(userId: string, query: HistoryQueryDto): Promise<HistoryResponseDto> {
    const prevnames = await this.events.findHistory(userId, {
      limit: query.limit,
      before: query.before === undefined ? undefined : parseZonedTimestamp(query.before),
      after: query.after === undefined ? undefined : parseZonedTimestamp(query.after),
    });
    return { userId, prevnames, code: 200 };
  }
}
