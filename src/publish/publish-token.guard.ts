import { CanActivate, ExecutionContext, Injectable, UnauthorizedException } from '@nestjs/common';
import { ConfigService } from '@nestjs/config';
import type { Request } from 'express';
import { createHash, timingSafeEqual } from 'node:crypto';
import type { AppConfig } from '../config/configuration.js';

/**
 * With PUBLISH_TOKEN set, publishing needs `Authorization: Bearer <token>`. Both sides are
 * hashed first, so the comparison takes the same time whatever the length of the guess.
 */
@Injectable()
export class PublishTokenGuard implements CanActivate {
  private readonly expected?: Buffer;

  constructor(config: ConfigService<AppConfig, true>) {
    const token = config.get('publish', { infer: true }).token;
    this.expected = token === undefined ? undefined : digest(token);
  }

  canActivate(context: ExecutionContext): boolean {
    if (!this.expected) return true;
    const header = context.switchToHttp().getRequest<Request>().headers.authorization ?? '';
    const match = /^Bearer (.+)$/i.exec(header);
    if (!match || !timingSafeEqual(digest(match[1]), this.expected)) {
      throw new UnauthorizedException('Missing or invalid bearer token');
    }
    return true;
  }
}

function digest(value: string): Buffer {
  return createHash('sha256').update(value).digest();
}
