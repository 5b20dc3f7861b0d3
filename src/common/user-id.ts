import {
  applyDecorators,
  BadRequestException,
  Injectable,
  Param,
  type ArgumentMetadata,
  type PipeTransform,
} from '@nestjs/common';
import { ApiParam } from '@nestjs/swagger';
import { IsString } from 'class-validator';
import {
  CODE_POINT_LENGTH_MESSAGE,
  CodePointLength,
  hasCodePointLength,
  IsPrintableText,
  isPrintableText,
  PRINTABLE_TEXT_MESSAGE,
  ruleMessage,
} from './string-rules.js';

export const USER_ID_MAX_LENGTH = 64;

/** A user id as the contract defines it: a string of 1-64 characters, no control characters. */
export function IsUserId() {
  return applyDecorators(
    IsString({ message: '$property must be a string' }),
    CodePointLength(1, USER_ID_MAX_LENGTH),
    IsPrintableText(),
  );
}

/**
 * A path's user id, checked by IsUserId's rules in their order, with their messages. A pipe
 * rather than a DTO: a route parameter is one string, and class-validator's walk of a DTO's
 * metadata was a measurable share of every history read (BENCHMARKS.md). An empty segment
 * (`/users//prevnames`) is an id of length 0.
 */
@Injectable()
export class ParseUserIdPipe implements PipeTransform<string | undefined, string> {
  transform(value: string | undefined, { data }: ArgumentMetadata): string {
    const userId = value ?? '';
    const property = data ?? 'userId';
    if (!hasCodePointLength(userId, 1, USER_ID_MAX_LENGTH)) {
      const limits = [1, USER_ID_MAX_LENGTH];
      throw new BadRequestException(ruleMessage(CODE_POINT_LENGTH_MESSAGE, property, limits));
    }
    if (!isPrintableText(userId)) {
      throw new BadRequestException(ruleMessage(PRINTABLE_TEXT_MESSAGE, property));
    }
    return userId;
  }
}

/** The route's `:userId`, validated: `@UserIdParam() userId: string`. */
export const UserIdParam = (): ParameterDecorator => Param('userId', ParseUserIdPipe);

/** The route's `:userId` in the OpenAPI document. */
export const ApiUserIdParam = () =>
  ApiParam({
    name: 'userId',
    description: 'The user id on the chat platform (URL-encoded).',
    schema: {
      type: 'string',
      minLength: 1,
      maxLength: USER_ID_MAX_LENGTH,
      example: '123456789012345678',
    },
  });
