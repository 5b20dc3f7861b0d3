import { applyDecorators, type CanActivate, type ExecutionContext } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Request, Response } from 'express';
import { queryParamsOf, type QueryParams } from '../platform/route-params.js';
import { skipAccessLog } from './access-log.js';
import { withoutApiSecurityHeaders } from './security-headers.js';
import { unknownKeys } from './validation.js';

/** No access log line for this route's requests (on a controller: for all of its routes). */
export const NoAccessLog = Reflector.createDecorator<void, true>({
  key: 'route:no-access-log',
  transform: () => true,
});

/** No API security headers on this route's answers: it does not answer JSON. */
export const NoApiSecurityHeaders = Reflector.createDecorator<void, true>({
  key: 'route:no-api-security-headers',
  transform: () => true,
});

/**
 * An event stream: it logs its own open and close rather than an access log line, and its
 * clients are EventSource readers, not documents or JSON readers, which would hold every
 * header for the life of the connection.
 */
export const StreamRoute = () => applyDecorators(NoAccessLog(), NoApiSecurityHeaders());

interface Traits {
  accessLog: boolean;
  apiSecurityHeaders: boolean;
  /** The query the handler takes, read from the metadata its `@Query()` parameters leave. */
  query: QueryParams;
}

/**
 * Applies what a route declares with the decorators above to its request. The access log and
 * the security headers are Express middlewares, which run before any route is chosen (and
 * must, to cover the requests no route takes); this is the first step that knows the route.
 * A guard, and the first of them, so that it runs before anything can refuse the request,
 * for every route alike; an interceptor would also wrap a stream's Observable, and every
 * event with it.
 *
 * Then it refuses a query key the route does not take, with the message the validation pipe
 * gives for a DTO's unknown key. A handler with a `@Query()` DTO is left to the pipe (see
 * validation.ts); the others would otherwise ignore any query. What a handler takes is read
 * as @nestjs/swagger reads it to document it.
 */
export class RouteTraitsGuard implements CanActivate {
  private readonly byHandler = new WeakMap<object, Traits>();

  constructor(private readonly reflector: Reflector) {}

  canActivate(context: ExecutionContext): boolean {
    if (context.getType() !== 'http') return true;
    const traits = this.traitsOf(context);
    const http = context.switchToHttp();
    if (!traits.accessLog) skipAccessLog(http.getResponse<Response>());
    if (!traits.apiSecurityHeaders) withoutApiSecurityHeaders(http.getResponse<Response>());
    if (traits.query.dto) return true;
    const { names } = traits.query;
    const unknown = Object.keys(http.getRequest<Request>().query).filter((key) => !names.has(key));
    if (unknown.length > 0) throw unknownKeys(unknown);
    return true;
  }

  private traitsOf(context: ExecutionContext): Traits {
    const handler = context.getHandler();
    let traits = this.byHandler.get(handler);
    if (!traits) {
      const targets = [handler, context.getClass()];
      traits = {
        accessLog: !this.reflector.getAllAndOverride(NoAccessLog, targets),
        apiSecurityHeaders: !this.reflector.getAllAndOverride(NoApiSecurityHeaders, targets),
        query: queryParamsOf(context.getClass(), handler.name),
      };
      this.byHandler.set(handler, traits);
    }
    return traits;
  }
}
