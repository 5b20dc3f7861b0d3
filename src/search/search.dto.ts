import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { IsDefined, IsIn, IsOptional, IsString, MaxLength } from 'class-validator';
import { CodePointLength, IsStorableText, rule } from '../common/string-rules.js';
import { IsIntegerBetween } from '../config/transforms.js';
import { NAME_TYPES, type NameType } from '../name-events/index.js';
import { NAME_MAX_LENGTH, SentNameChangeEventDto } from '../publish/index.js';

export const SEARCH_MATCHES = ['exact', 'prefix'] as const;
export type SearchMatch = (typeof SEARCH_MATCHES)[number];

export const SEARCH_DEFAULT_LIMIT = 100;
export const SEARCH_MAX_LIMIT = 1000;
/** A prefix shorter than this would match a large part of every table. */
export const PREFIX_MIN_LENGTH = 2;

const LIMIT_MESSAGE = `limit must be an integer between 1 and ${SEARCH_MAX_LIMIT}`;
export const CURSOR_MESSAGE =
  'cursor must be one this service issued, in a Link header of a name search';
export const OTHER_QUERY_MESSAGE =
  'cursor was issued for another search: name, type and match must stay as they were';
export const PREFIX_MESSAGE = `name must be at least ${PREFIX_MIN_LENGTH} characters long with match=prefix`;
/**
 * Longer than any cursor issued: a name of 256 characters is at most 1,536 bytes of JSON (a
 * control character is escaped in 6), and the cursor is its base64 and a few dozen more.
 */
const CURSOR_MAX_LENGTH = 4096;

/** A query key given twice (`?name=a&name=b`) arrives as an array: refused, naming the key. */
const Once = () => rule('once', '$property must be given once', (value) => !Array.isArray(value));

export class SearchQueryDto {
  @ApiProperty({
    description:
      'The name to look for, as the publish body takes a name: 1-256 characters (Unicode code points), any Unicode but NUL. Compared ignoring case (Unicode lower case) and Unicode normalisation (NFC). Decoded as a URL query value: `+` is a space, `%2B` a plus.',
    minLength: 1,
    maxLength: NAME_MAX_LENGTH,
    example: 'old_name',
  })
  @IsString({ message: 'name must be a string' })
  @CodePointLength(1, NAME_MAX_LENGTH)
  @IsStorableText()
  @Once()
  @IsDefined({ message: '$property is required' })
  name: string;

  @ApiPropertyOptional({
    enum: NAME_TYPES,
    enumName: 'NameType',
    description: 'Only names of this kind. Default: both.',
  })
  @IsOptional()
  @IsIn(NAME_TYPES, { message: `type must be one of: ${NAME_TYPES.join(', ')}` })
  @Once()
  type?: NameType;

  @ApiPropertyOptional({
    enum: SEARCH_MATCHES,
    description: `\`exact\` (default): names equal to \`name\` ignoring case. \`prefix\`: names that start with it ignoring case (\`name\` of at least ${PREFIX_MIN_LENGTH} characters).`,
  })
  @IsOptional()
  @IsIn(SEARCH_MATCHES, { message: `match must be one of: ${SEARCH_MATCHES.join(', ')}` })
  @Once()
  match?: SearchMatch;

  @ApiPropertyOptional({
    description: `At most this many matches per page (1-${SEARCH_MAX_LIMIT}, default ${SEARCH_DEFAULT_LIMIT}). While more remain, the answer carries a \`Link\` header (RFC 8288) to the next page; the limit may change from page to page.`,
    minimum: 1,
    maximum: SEARCH_MAX_LIMIT,
    default: SEARCH_DEFAULT_LIMIT,
    type: 'integer',
  })
  @IsIntegerBetween(1, SEARCH_MAX_LIMIT, LIMIT_MESSAGE)
  @Once()
  limit?: number;

  @ApiPropertyOptional({
    description:
      'Where a page continues: opaque, taken from the `Link` header of the previous page. It carries `name`, `type` and `match`: a cursor that was changed, or is sent with other values of them, is a 400.',
    maxLength: CURSOR_MAX_LENGTH,
    example:
      'WyJvbGRfbmFtZSIsbnVsbCwiZXhhY3QiLCIyMDI0LTA2LTA3VDE1OjMwOjAwLjAwMDAwMFoiLCI0MiJd.I_8sekirjAKhDrycT3vW1g',
  })
  @IsOptional()
  @IsString({ message: CURSOR_MESSAGE })
  @MaxLength(CURSOR_MAX_LENGTH, { message: CURSOR_MESSAGE })
  @Once()
  cursor?: string;
}

/** One match: a recorded previous name, with its user. */
export class SearchMatchDto extends SentNameChangeEventDto {}

export class SearchResponseDto {
  @ApiProperty({ description: 'The name searched for, as it was asked.', example: 'old_name' })
  name: string;

  @ApiProperty({
    type: [SearchMatchDto],
    description:
      'The recorded previous names that match, oldest `changedAt` first, then in the order they were stored; empty when none match.',
  })
  matches: SearchMatchDto[];

  @ApiProperty({ enum: [200], example: 200, type: 'integer' })
  code: 200;
}
