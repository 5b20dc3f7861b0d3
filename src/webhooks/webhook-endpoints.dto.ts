import { ApiProperty, ApiPropertyOptional, PickType } from '@nestjs/swagger';
import { IsDefined, IsIn, IsString } from 'class-validator';
import { CodePointLength, IsStorableText, rule } from '../common/string-rules.js';
import { IsUserId, USER_ID_MAX_LENGTH } from '../common/user-id.js';
import { IsOmittable } from '../common/validation.js';
import { NAME_TYPES, type NameType } from '../name-events/index.js';
import { WEBHOOK_FORMATS, type WebhookFormat } from './webhook-endpoint.entity.js';
import { isHttpUrl } from './webhook-targets.js';

export const URL_MAX_LENGTH = 2048;
export const DESCRIPTION_MAX_LENGTH = 256;

const IsHttpUrl = () => rule('isHttpUrl', 'url must be an absolute http or https URL', isHttpUrl);

export class CreateWebhookEndpointDto {
  @ApiProperty({
    description:
      'Where events are POSTed: an absolute http or https URL, at most 2048 characters. Refused when it is (or its host name resolves to) a loopback, private, link-local, unique-local or unspecified address, however written, or when its name does not resolve, unless the operator set WEBHOOK_ALLOW_PRIVATE_TARGETS.',
    maxLength: URL_MAX_LENGTH,
    example: 'https://example.com/hooks/name-changes',
  })
  // class-validator runs these bottom-up: the first to fail names the fault.
  @IsHttpUrl()
  @CodePointLength(1, URL_MAX_LENGTH)
  @IsString({ message: 'url must be a string' })
  @IsDefined({ message: '$property is required' })
  url: string;

  @ApiPropertyOptional({
    enum: WEBHOOK_FORMATS,
    enumName: 'WebhookFormat',
    description:
      '`standard` (the default): Standard Webhooks, signed with the secret. `discord`: a Discord channel webhook message.',
  })
  @IsOmittable()
  @IsIn(WEBHOOK_FORMATS, { message: `format must be one of: ${WEBHOOK_FORMATS.join(', ')}` })
  format?: WebhookFormat;

  @ApiPropertyOptional({
    description: "Only this user's events (1-64 characters, no control characters).",
    minLength: 1,
    maxLength: USER_ID_MAX_LENGTH,
    example: '123456789012345678',
  })
  @IsOmittable()
  @IsUserId()
  userId?: string;

  @ApiPropertyOptional({ enum: NAME_TYPES, enumName: 'NameType', description: 'Only this kind.' })
  @IsOmittable()
  @IsIn(NAME_TYPES, { message: `type must be one of: ${NAME_TYPES.join(', ')}` })
  type?: NameType;

  @ApiPropertyOptional({
    description: 'Free text, at most 256 characters (Unicode code points), any Unicode but NUL.',
    maxLength: DESCRIPTION_MAX_LENGTH,
    example: 'mod-log channel',
  })
  @IsStorableText()
  @CodePointLength(0, DESCRIPTION_MAX_LENGTH)
  @IsString({ message: 'description must be a string' })
  @IsOmittable()
  description?: string;
}

export class WebhookEndpointDto {
  @ApiProperty({ description: "The endpoint's id.", example: '1' })
  id: string;

  @ApiProperty({
    description: 'The URL, WHATWG-normalised.',
    example: 'https://example.com/hooks/name-changes',
  })
  url: string;

  @ApiProperty({
    enum: WEBHOOK_FORMATS,
    enumName: 'WebhookFormat',
    description: 'How events are sent to it.',
  })
  format: WebhookFormat;

  @ApiProperty({
    type: String,
    nullable: true,
    description: "Only this user's events; null: every user's.",
    example: null,
  })
  userId: string | null;

  // No null among the enum's values: openapi-zod-client writes them into a z.enum, which
  // does not compile with null; `nullable` says it, as generators read it.
  @ApiProperty({
    type: String,
    enum: NAME_TYPES,
    nullable: true,
    description: 'Only this kind of name; null: both.',
    example: null,
  })
  type: NameType | null;

  @ApiProperty({ type: String, nullable: true, example: 'mod-log channel' })
  description: string | null;

  @ApiProperty({ format: 'date-time', example: '2024-06-07T15:30:00.000Z' })
  createdAt: string;
}

export class CreatedWebhookEndpointDto extends WebhookEndpointDto {
  @ApiProperty({
    type: String,
    nullable: true,
    description:
      "The `standard` format's signing secret (`whsec_` and base64), shown only here; null for `discord`. Verify `webhook-signature` with it, as the Standard Webhooks specification says.",
    example: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw3y8Pu2XIY8o=',
  })
  secret: string | null;

  @ApiProperty({ enum: [201], example: 201, type: 'integer' })
  code: 201;
}

export class WebhookEndpointStatusDto extends WebhookEndpointDto {
  @ApiProperty({
    type: String,
    nullable: true,
    description: 'The id of the last event delivered to it (a 2xx), or null.',
    example: '42',
  })
  lastDeliveredEventId: string | null;

  @ApiProperty({
    type: 'integer',
    minimum: 0,
    description: 'Matching events stored and not yet delivered (erased ones do not count).',
    example: 0,
  })
  pending: number;

  @ApiProperty({
    type: String,
    format: 'date-time',
    nullable: true,
    description:
      'When the first attempt without a 2xx since the last 2xx was made, or null. Set for good by a 410 Gone, which stops the deliveries.',
    example: null,
  })
  failingSince: string | null;
}

export class WebhookEndpointResponseDto extends WebhookEndpointStatusDto {
  @ApiProperty({ enum: [200], example: 200, type: 'integer' })
  code: 200;
}

export class WebhookEndpointListDto {
  @ApiProperty({ type: [WebhookEndpointStatusDto] })
  endpoints: WebhookEndpointStatusDto[];

  @ApiProperty({ enum: [200], example: 200, type: 'integer' })
  code: 200;
}

export class DeletedWebhookEndpointDto extends PickType(WebhookEndpointDto, ['id']) {
  @ApiProperty({ enum: [true], example: true })
  deleted: true;

  @ApiProperty({ enum: [200], example: 200, type: 'integer' })
  code: 200;
}
