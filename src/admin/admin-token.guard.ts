import {
  applyDecorators,
  CanActivate,
  ExecutionContext,
  Injectable,
  NotFoundException,
  UnauthorizedException,
  type MiddlewareConsumer,
  type Type,
} from '@nestjs/common';
import { ApiBearerAuth, ApiResponse } from '@nestjs/swagger';
import type { NextFunction, Request, Response } from 'express';
import { BearerToken } from '../common/bearer-token.js';
import { ErrorResponseDto } from '../common/error-response.dto.js';
import { InjectConfig, type ConfigOf } from '../config/config-section.js';
import { adminConfig } from './admin.config.js';

const UNAUTHORIZED_MESSAGE = 'Missing or invalid bearer token';

/** In OpenAPI, what an administration route needs: the admin bearer token, or a 401. */
export const ApiAdminAuth = () =>
  applyDecorators(
    ApiBearerAuth('admin'),
    ApiResponse({
      status: 401,
      description: 'The bearer token is missing or is not ADMIN_TOKEN.',
      type: ErrorResponseDto,
      example: { message: UNAUTHORIZED_MESSAGE, code: 401 },
    }),
  );

/**
 * The administration routes need `Authorization: Bearer <ADMIN_TOKEN>`. With ADMIN_TOKEN
 * unset they do not exist: `hideUnlessEnabled` answers them first.
 */
@Injectable()
export class AdminTokenGuard implements CanActivate {
  private readonly expected?: BearerToken;

  constructor(@InjectConfig(adminConfig) { token }: ConfigOf<typeof adminConfig>) {
    this.expected = token === undefined ? undefined : new BearerToken(token);
  }

  /** Whether the administration is on (ADMIN_TOKEN is set). */
  get enabled(): boolean {
    return this.expected !== undefined;
  }

  /** Whether an `Authorization` header carries the admin token. */
  accepts(authorization: string | undefined): boolean {
    return this.expected?.matches(authorization) ?? false;
  }

  canActivate(context: ExecutionContext): boolean {
    const request = context.switchToHttp().getRequest<Request>();
    if (!this.accepts(request.headers.authorization)) {
      throw new UnauthorizedException(UNAUTHORIZED_MESSAGE);
    }
    return true;
  }

  /**
   * With the administration off, the routes of `controllers` answer the very 404 Nest gives an
   * unknown route, before anything else looks at the request (guards, pipes), so that a scan
   * cannot tell the routes are there. For a module's `configure()`.
   */
  hideUnlessEnabled(consumer: MiddlewareConsumer, ...controllers: Type[]): void {
    if (!this.enabled) consumer.apply(answerAsUnknownRoute).forRoutes(...controllers);
  }
}

/** The 404 of a route that does not exist. */
export function answerAsUnknownRoute(req: Request, _res: Response, next: NextFunction): void {
  next(new NotFoundException(`Cannot ${req.method} ${req.originalUrl}`));
}
