import { applyDecorators, type CanActivate, type ExecutionContext } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Response } from 'express';
import { skipAccessLog } from './access-log.js';
import { withoutApiSecurityHeaders } from './security-headers.js';

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
}

/**
 * Applies what a route declares with the decorators above to its request. The access log and
 * the security headers are Express middlewares, which run before any route is chosen (and
 * must, to cover the requests no route takes); this is the first step that knows the route.
 * A guard, and the first of them, so that it runs before anything can refuse the request,
 * for every route alike; an interceptor would also wrap a stream's Observable, and every
 * event with it. It lets every request through.
 */
export class RouteTraitsGuard implements CanActivate {
  private readonly byHandler = new WeakMap<object, Traits>();

  constructor(private readonly reflector: Reflector) {}

  canActivate(context: ExecutionContext): boolean {
    if (context.getType() !== 'http') return true;
    const traits = this.traitsOf(context);
    if (traits.accessLog && traits.apiSecurityHeaders) return true;
    const res = context.switchToHttp().getResponse<Response>();
    if (!traits.accessLog) skipAccessLog(res);
    if (!traits.apiSecurityHeaders) withoutApiSecurityHeaders(res);
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
      };
      this.byHandler.set(handler, traits);
    }
    return traits;
  }
}
