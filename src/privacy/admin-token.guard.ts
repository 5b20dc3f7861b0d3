import {
  CanActivate,
  ExecutionContext,
  Injectable,
  NotFoundException,
  UnauthorizedException,
} from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import type { NextFunction, Request, Response } from 'express';
import { BearerToken } from '../common/bearer-token.js';
import type { AppConfig } from '../config/configuration.js';

/**
 * The administration routes need `Authorization: Bearer <ADMIN_TOKEN>`. With ADMIN_TOKEN
 * unset they do not exist: `answerAsUnknownRoute` answers them first (see PrivacyModule).
 */
@Injectable()
export class AdminTokenGuard implements CanActivate {
  private readonly expected?: BearerToken;

  constructor(config: ConfigService<AppConfig, true>) {
    const token = config.get('privacy', { infer: true }).adminToken;
    this.expected = token === undefined ? undefined : new BearerToken(token);
  }

  canActivate(context: ExecutionContext): boolean {
    const request = context.switchToHttp().getRequest<Request>();
    if (!this.expected?.matches(request.headers.authorization)) {
      throw new UnauthorizedException('Missing or invalid bearer token');
    }
    return true;
  }
}

/**
 * With ADMIN_TOKEN unset, the administration routes answer the very 404 Nest gives an
 * unknown route, before anything else looks at the request (guards, pipes), so that a scan
 * cannot tell the routes are there.
 */
export function answerAsUnknownRoute(req: Request, _res: Response, next: NextFunction): void {
  next(new NotFoundException(`Cannot ${req.method} ${req.originalUrl}`));
}
