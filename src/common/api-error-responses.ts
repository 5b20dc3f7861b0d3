import { applyDecorators } from '@nestjs/common';
import { ApiResponse } from '@nestjs/swagger';
import { ErrorResponseDto } from './error-response.dto.js';

const DESCRIPTIONS: Record<number, { description: string; message: string }> = {
  400: {
    description: 'Invalid input; the message names the field(s) at fault.',
    message: 'userId must be between 1 and 64 characters long',
  },
  401: {
    description: 'PUBLISH_TOKEN is set and the bearer token is missing or wrong.',
    message: 'Missing or invalid bearer token',
  },
  403: {
    description: 'The user has opted out of name recording: nothing was stored or broadcast.',
    message: 'The user has opted out: their names are not recorded',
  },
  404: { description: 'No such route.', message: 'Cannot GET /api/nope' },
  413: { description: 'The body is larger than 16 KiB.', message: 'Request body is too large' },
  415: { description: 'The body is not JSON.', message: 'Content-Type must be application/json' },
  429: { description: 'Too many requests.', message: 'Too many requests' },
  500: { description: 'Internal failure.', message: 'Internal server error' },
  503: { description: 'Unavailable.', message: 'Service unavailable' },
};

/** Documents the `{message, code}` body for each of the given error statuses. */
export function ApiErrorResponses(...statuses: number[]) {
  return applyDecorators(
    ...statuses.map((status) =>
      ApiResponse({
        status,
        description: DESCRIPTIONS[status]?.description ?? 'Error',
        type: ErrorResponseDto,
        example: { message: DESCRIPTIONS[status]?.message ?? 'Error', code: status },
      }),
    ),
  );
}
