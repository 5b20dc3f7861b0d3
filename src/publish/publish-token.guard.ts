import { CanActivate, ExecutionContext, Injectable, UnauthorizedException } from '@nestjs/common';
import type { Request } from 'express';
import { BearerToken } from '../common/bearer-token.js';
import { InjectConfig, type ConfigOf } from '../config/config-section.js';
import { publishConfig } from './publish.config.js';

/** With PUBLISH_TOKEN set, publishing needs `Authorization: Bearer <token>`. */
@Injectable()
export class PublishTokenGuard implements CanActivate {
  private readonly expected?: BearerToken;

  constructor(@InjectConfig(publishConfig) { token }: ConfigOf<typeof publishConfig>) {
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
