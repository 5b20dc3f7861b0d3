import { applyDecorators } from '@nestjs/common';
import { ApiResponse } from '@nestjs/swagger';
import { ErrorResponseDto } from './error-response.dto.js';
import {
  BODY_TOO_LARGE_MESSAGE,
  INTERNAL_ERROR_MESSAGE,
  UNSUPPORTED_MEDIA_TYPE_MESSAGE,
} from './http-exception.filter.js';

/** What each status means, and the message it usually carries (none where it varies). */
const DESCRIPTIONS: Record<number, { description: string; message?: string }> = {
  400: {
    description: 'Invalid input; the message names the field(s) at fault.',
    message: 'userId must be between 1 and 64 characters long',
  },
  403: {
    description: 'The user has opted out of name recording: nothing was stored or broadcast.',
    message: 'The user has opted out: their names are not recorded',
  },
  413: { description: 'The body is larger than 16 KiB.', message: BODY_TOO_LARGE_MESSAGE },
  415: {
    description: 'The body is not JSON, or declares a charset other than utf-8.',
    message: UNSUPPORTED_MEDIA_TYPE_MESSAGE,
  },
  429: { description: 'Too many requests.' },
  500: { description: 'Internal failure.', message: INTERNAL_ERROR_MESSAGE },
  503: { description: 'Unavailable.' },
};

/**
 * Documents the `{message, code}` body for each of the given error statuses, with a message
 * the service really sends as the example: the usual one, or the one given with the status
 * (`[503, 'Too many listeners on this instance']`) where the operation's own differs.
 */
export function ApiErrorResponses(...statuses: (number | [number, string])[]) {
  return applyDecorators(
    ...statuses.map((entry) => {
      const [status, message = DESCRIPTIONS[status]?.message] =
        typeof entry === 'number' ? [entry] : entry;
      if (message === undefined) {
        throw new Error(`ApiErrorResponses: say which message the ${status} carries`);
      }
      return ApiResponse({
        status,
        description: DESCRIPTIONS[status]?.description ?? 'Error',
        type: ErrorResponseDto,
        example: { message, code: status },
      });
    }),
  );
}

/** The 400 of an operation that takes no query: every key is unknown. */
export const UNKNOWN_QUERY_KEY: [number, string] = [400, 'property x should not exist'];

/** A 429 or 503 that says when to come back: its `Retry-After`, and the message it carries. */
export function ApiRetryLaterResponse(status: 429 | 503, description: string, message: string) {
  return ApiResponse({
    status,
    description,
    type: ErrorResponseDto,
    example: { message, code: status },
    headers: { 'Retry-After': { description: 'Seconds to wait.', schema: { type: 'integer' } } },
  });
}

/** The `Link` header (RFC 8288) of a paged answer: what it leads to, and an example. */
export const linkHeader = (description: string, example: string) => ({
  Link: { description, required: false, schema: { type: 'string', example } },
});
