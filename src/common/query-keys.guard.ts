import { BadRequestException, type CanActivate, type ExecutionContext } from '@nestjs/common';
import { ROUTE_ARGS_METADATA } from '@nestjs/common/constants.js';
import { RouteParamtypes } from '@nestjs/common/enums/route-paramtypes.enum.js';
import type { Request } from 'express';

/** The query keys a handler takes: a DTO (validated, whitelisted, by the pipe) or names. */
type QueryKeys = { dto: true } | { dto: false; names: ReadonlySet<string> };

/**
 * Every route refuses a query key it does not take, with the message the validation pipe
 * gives for a DTO's unknown key. A handler with a `@Query()` DTO is left to the pipe (see
 * validation.ts); this guard covers the others, which would otherwise ignore any query.
 * What a handler takes is read from the metadata its `@Query()` parameters leave, as
 * @nestjs/swagger does to document them.
 */
export class KnownQueryKeysGuard implements CanActivate {
  private readonly byHandler = new WeakMap<object, QueryKeys>();

  canActivate(context: ExecutionContext): boolean {
    if (context.getType() !== 'http') return true;
    const keys = this.keysOf(context);
    if (keys.dto) return true;
    const query = context.switchToHttp().getRequest<Request>().query;
    const unknown = Object.keys(query).filter((key) => !keys.names.has(key));
    if (unknown.length > 0) {
      throw new BadRequestException(
        unknown.map((key) => `property ${key} should not exist`).join('; '),
      );
    }
    return true;
  }

  private keysOf(context: ExecutionContext): QueryKeys {
    const handler = context.getHandler();
    let keys = this.byHandler.get(handler);
    if (!keys) {
      const args = (Reflect.getMetadata(ROUTE_ARGS_METADATA, context.getClass(), handler.name) ??
        {}) as Record<string, { data?: unknown }>;
      const queries = Object.entries(args)
        .filter(([key]) => Number(key.split(':')[0]) === Number(RouteParamtypes.QUERY))
        .map(([, arg]) => arg.data);
      keys = queries.some((data) => typeof data !== 'string')
        ? { dto: true }
        : { dto: false, names: new Set(queries as string[]) };
      this.byHandler.set(handler, keys);
    }
    return keys;
  }
}
