import { CanActivate, ExecutionContext, Injectable, UnauthorizedException } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import type { Request } from 'express';
import { BearerToken } from '../common/bearer-token.js';
import type { AppConfig } from '../config/configuration.js';

/** With PUBLISH_TOKEN set, publishing needs `Authorization: Bearer <token>`. */
@Injectable()
export class PublishTokenGuard implements CanActivate {
  private readonly expected?: BearerToken;

  constructor(config: ConfigService<AppConfig, true>) {
    const token = config.get('publish', { infer: true }).token;
    this.expected = token === undefined ? undefined : new BearerToken(token);
  }

  canActivate(context: ExecutionContext): boolean {
    if (!this.expected) return true;
    const request = context.switchToHttp().getRequest<Request>();
    if (!this.expected.matches(request.headers.authorization)) {
      throw new UnauthorizedException('Missing or invalid bearer token');
    }
    return true;
  }
}
