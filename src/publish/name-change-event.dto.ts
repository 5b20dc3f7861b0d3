import { ApiProperty } from '@nestjs/swagger';
import { IsDefined, IsIn, IsString } from 'class-validator';
import { CodePointLength, IsStorableText } from '../common/string-rules.js';
import { IsZonedTimestamp } from '../common/timestamp.js';
import { IsUserId, USER_ID_MAX_LENGTH } from '../common/user-id.js';
import { NAME_TYPES, type NameType } from '../name-events/index.js';

export const NAME_MAX_LENGTH = 256;

/**
 * A name change event on the wire: the one definition of its four fields, their rules and
 * their documentation. The publish body is this class; what the service sends back (the
 * stream's data in events/, the history's entries in history/) derives from
 * `SentNameChangeEventDto` below, with `OmitType` where it leaves a field out, so a rule or a
 * description is changed here. (The module boundaries list this file as public.)
 */
export class NameChangeEventDto {
  @ApiProperty({
    description: 'The user whose name changed: 1-64 characters, no control characters.',
    minLength: 1,
    maxLength: USER_ID_MAX_LENGTH,
    example: '123456789012345678',
  })
  @IsUserId()
  @IsDefined({ message: '$property is required' })
  userId: string;

  @ApiProperty({ enum: NAME_TYPES, enumName: 'NameType', description: 'Kind of name.' })
  @IsIn(NAME_TYPES, { message: `type must be one of: ${NAME_TYPES.join(', ')}` })
  @IsDefined({ message: '$property is required' })
  type: NameType;

  @ApiProperty({
    description:
      'The name recorded in the history: the name the user had before the change. Stored and returned byte-for-byte; 1-256 characters (Unicode code points), any Unicode but NUL.',
    minLength: 1,
    maxLength: NAME_MAX_LENGTH,
    example: 'old_name',
  })
  @IsString({ message: 'name must be a string' })
  @CodePointLength(1, NAME_MAX_LENGTH)
  @IsStorableText()
  @IsDefined({ message: '$property is required' })
  name: string;

  @ApiProperty({
    description:
      'When the change occurred: ISO 8601 with an explicit zone (Z or ±hh:mm); stored and sent back in UTC with milliseconds.',
    format: 'date-time',
    example: '2024-06-07T15:30:00.000Z',
  })
  @IsString({ message: 'changedAt must be a string' })
  @IsZonedTimestamp()
  @IsDefined({ message: '$property is required' })
  changedAt: string;
}

/**
 * A stored event as the service sends it: the same fields, `changedAt` normalised to UTC
 * with milliseconds. (It is never validated: the rules it inherits apply to what is received.)
 */
export class SentNameChangeEventDto extends NameChangeEventDto {
  @ApiProperty({
    description: 'When the change occurred, in UTC with milliseconds.',
    pattern: '^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}:\\d{2}\\.\\d{3}Z$',
  })
  declare changedAt: string;
}
