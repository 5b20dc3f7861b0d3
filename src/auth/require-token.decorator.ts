import { applyDecorators, UseGuards } from '@nestjs/common';
import { ApiBearerAuth, ApiResponse } from '@nestjs/swagger';
import { ErrorResponseDto } from '../common/error-response.dto.js';
import {
  RequiredToken,
  TOKEN_RULES,
  TokenGuard,
  type TokenName,
  UNAUTHORIZED_MESSAGE,
} from './token.guard.js';

/** Each token's OpenAPI security scheme (publishing's is the document's first, `bearer`). */
const SCHEMES: Record<TokenName, string> = { publish: 'bearer', search: 'search', admin: 'admin' };

/** What the 401 means, in the document. */
const UNAUTHORIZED: Record<TokenName, string> = {
  publish: 'PUBLISH_TOKEN is set and the bearer token is missing or wrong.',
  search: 'The bearer token is missing, or is neither SEARCH_TOKEN nor ADMIN_TOKEN.',
  admin: 'The bearer token is missing or is not ADMIN_TOKEN.',
};

/**
 * The route (or every route of the controller) needs `Authorization: Bearer <token>` with
 * the token `name` (see TOKEN_RULES for what each accepts, and does while unset), else 401;
 * documented as such. On a controller, the routes answer as unknown ones while it is off.
 */
export const RequireToken = (name: TokenName) =>
  applyDecorators(
    RequiredToken(name),
    UseGuards(TokenGuard),
    // Listed last to first, as the document has always listed them.
    ...TOKEN_RULES[name].accepts.toReversed().map((token) => ApiBearerAuth(SCHEMES[token])),
    ApiResponse({
      status: 401,
      description: UNAUTHORIZED[name],
      type: ErrorResponseDto,
      example: { message: UNAUTHORIZED_MESSAGE, code: 401 },
    }),
  );
