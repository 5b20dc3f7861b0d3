import {
  CanActivate,
  ExecutionContext,
  Injectable,
  NotFoundException,
  UnauthorizedException,
} from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import type { Request } from 'express';
import { BearerToken } from '../common/bearer-token.js';
import type { AppConfig } from '../config/configuration.js';

/**
 * The administration routes need `Authorization: Bearer <ADMIN_TOKEN>`. With ADMIN_TOKEN
 * unset they do not exist: the answer is the very 404 Nest gives an unknown route, so that
 * a scan cannot tell the routes are there.
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
    if (!this.expected) {
      throw new NotFoundException(`Cannot ${request.method} ${request.originalUrl}`);
    }
    if (!this.expected.matches(request.headers.authorization)) {
      throw new UnauthorizedException('Missing or invalid bearer token');
    }
    return true;
  }
}
