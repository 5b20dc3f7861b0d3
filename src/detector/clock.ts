import { Injectable } from '@nestjs/common';

/** The time of detection, injected so tests can fix it. */
@Injectable()
export class Clock {
  now(): Date {
    return new Date();
  }
}
