import type { CanActivate, ExecutionContext } from '@nestjs/common';
import type { Request } from 'express';
import { queryParamsOf, type QueryParams } from '../platform/route-params.js';
import { unknownKeys } from './validation.js';

/**
 * Every route refuses a query key it does not take, with the message the validation pipe
 * gives for a DTO's unknown key. A handler with a `@Query()` DTO is left to the pipe (see
 * validation.ts); this guard covers the others, which would otherwise ignore any query.
 * What a handler takes is read from the metadata its `@Query()` parameters leave, as
 * @nestjs/swagger does to document them.
 */
export class KnownQueryKeysGuard implements CanActivate {
  private readonly byHandler = new WeakMap<object, QueryParams>();

  canActivate(context: ExecutionContext): boolean {
    if (context.getType() !== 'http') return true;
    const keys = this.keysOf(context);
    if (keys.dto) return true;
    const query = context.switchToHttp().getRequest<Request>().query;
    const unknown = Object.keys(query).filter((key) => !keys.names.has(key));
    if (unknown.length > 0) throw unknownKeys(unknown);
    return true;
  }

  private keysOf(context: ExecutionContext): QueryParams {
    const handler = context.getHandler();
    let keys = this.byHandler.get(handler);
    if (!keys) {
      keys = queryParamsOf(context.getClass(), handler.name);
      this.byHandler.set(handler, keys);
    }
    return keys;
  }
}
