import {
  applyDecorators,
  type CanActivate,
  createParamDecorator,
  type ExecutionContext,
  Inject,
  Injectable,
  Logger,
  UnauthorizedException,
  UseGuards,
} from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { ApiBearerAuth, ApiResponse } from '@nestjs/swagger';
import type { Request } from 'express';
import { createHash, timingSafeEqual } from 'node:crypto';
import { ErrorResponseDto } from '../common/error-response.dto.js';
import { CONFIGURATION } from '../config/configuration.module.js';
import type { Configuration } from '../config/load-configuration.js';

/** The operator's bearer tokens, each the `token` of the configuration section of its name. */
export type TokenName = 'publish' | 'search' | 'admin';

/** Which token a request came with, as the logs and the search's rate limit name it. */
export type Caller = `${TokenName}-token`;

const UNAUTHORIZED_MESSAGE = 'Missing or invalid bearer token';

/**
 * What each `@RequireToken(name)` accepts, and what its routes do while none of those tokens
 * is set: publishing is open to anyone; the search and the administration are off (their
 * routes answer as unknown ones, see AuthModule).
 */
export const TOKEN_RULES: Record<TokenName, { accepts: TokenName[]; whenUnset: 'open' | 'off' }> = {
  publish: { accepts: ['publish'], whenUnset: 'open' },
  search: { accepts: ['search', 'admin'], whenUnset: 'off' },
  admin: { accepts: ['admin'], whenUnset: 'off' },
};

/** The token a route or controller requires (`@RequireToken` sets it). */
export const RequiredToken = Reflector.createDecorator<TokenName>();

const CALLER = Symbol('caller');

/** The token the guard found on the request (none on a route open to anyone). */
export function callerOf(request: Request): Caller | undefined {
  return (request as Request & { [CALLER]?: Caller })[CALLER];
}

/** The token the guard found on the request, as a handler's parameter. */
export const AuthenticatedAs = createParamDecorator((_: unknown, context: ExecutionContext) =>
  callerOf(context.switchToHttp().getRequest<Request>()),
);

/**
 * The tokens `name` accepts that the operator set. Both sides of a comparison are hashed
 * first, so that it takes the same time whatever the length of the guess.
 */
export function acceptedTokens(
  config: Configuration,
  name: TokenName,
): { caller: Caller; hash: Buffer }[] {
  return TOKEN_RULES[name].accepts.flatMap((accepted) => {
    const token = (config.get(accepted) as { token?: string } | undefined)?.token;
    return token === undefined ? [] : [{ caller: `${accepted}-token`, hash: digest(token) }];
  });
}

/** `Authorization: Bearer <token>` with one of the tokens the route requires, else 401. */
@Injectable()
export class TokenGuard implements CanActivate {
  private readonly logger = new Logger('Auth');
  private readonly accepted = new Map<TokenName, ReturnType<typeof acceptedTokens>>();

  constructor(
    private readonly reflector: Reflector,
    @Inject(CONFIGURATION) config: Configuration,
  ) {
    for (const name of Object.keys(TOKEN_RULES) as TokenName[]) {
      this.accepted.set(name, acceptedTokens(config, name));
    }
  }

  canActivate(context: ExecutionContext): boolean {
    const name = this.reflector.getAllAndOverride(RequiredToken, [
      context.getHandler(),
      context.getClass(),
    ]);
    const accepted = this.accepted.get(name) ?? [];
    if (accepted.length === 0 && TOKEN_RULES[name].whenUnset === 'open') return true;
    const request = context.switchToHttp().getRequest<Request & { [CALLER]?: Caller }>();
    const presented = /^Bearer (.+)$/i.exec(request.headers.authorization ?? '')?.[1];
    const hash = presented === undefined ? undefined : digest(presented);
    const match = hash && accepted.find((token) => timingSafeEqual(hash, token.hash));
    if (!match) {
      // The route's template, not its path: a path may hold a user id.
      const route = (request.route as { path?: string } | undefined)?.path ?? request.path;
      this.logger.warn(
        `${request.method} ${route} refused (401) from ${request.ip}: no valid bearer token`,
      );
      throw new UnauthorizedException(UNAUTHORIZED_MESSAGE);
    }
    request[CALLER] = match.caller;
    return true;
  }
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}

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

/** What a 404 means while the token is off (see TOKEN_RULES). */
const OFF: Record<'search' | 'admin', string> = {
  search: 'Neither SEARCH_TOKEN nor ADMIN_TOKEN is set: the search is off',
  admin: 'ADMIN_TOKEN is not set: administration is off',
};

/**
 * The 404 of a route of a `@RequireToken(name)` controller while the token is off: `message`
 * as the example (`Cannot GET /api/…`), and `alsoWhen`, what else the route's 404 means.
 */
export const ApiOffResponse = (name: 'search' | 'admin', message: string, alsoWhen?: string) =>
  ApiResponse({
    status: 404,
    description: `${alsoWhen ? `${alsoWhen}; or ` : ''}${OFF[name]}, and the route answers as an unknown one.`,
    type: ErrorResponseDto,
    example: { message, code: 404 },
  });
