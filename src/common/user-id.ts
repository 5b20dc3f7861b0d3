import { applyDecorators } from '@nestjs/common';
import { IsString } from 'class-validator';
import { CodePointLength, IsPrintableText } from './string-rules.js';

export const USER_ID_MAX_LENGTH = 64;

/** A user id as the contract defines it: a string of 1-64 characters, no control characters. */
export function IsUserId() {
  return applyDecorators(
    IsString({ message: '$property must be a string' }),
    CodePointLength(1, USER_ID_MAX_LENGTH),
    IsPrintableText(),
  );
}
