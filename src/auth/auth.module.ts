import {
  Inject,
  type MiddlewareConsumer,
  Module,
  type NestModule,
  type Type,
  NotFoundException,
} from '@nestjs/common';
import { DiscoveryModule, DiscoveryService, Reflector } from '@nestjs/core';
import type { NextFunction, Request, Response } from 'express';
import { CONFIGURATION } from '../config/configuration.module.js';
import type { Configuration } from '../config/load-configuration.js';
import { Owns } from '../config/owns.decorator.js';
import { adminConfig } from './admin.config.js';
import { acceptedTokens, RequiredToken, TOKEN_RULES } from './token.guard.js';

/**
 * The operator's bearer tokens (`@RequireToken`; ADMIN_TOKEN is declared here, the others by
 * the module whose routes they open). A controller whose token is off (`whenUnset: 'off'` and
 * none of the tokens it accepts set) answers the very 404 Nest gives an unknown route,
 * before anything else looks at the request (guards, pipes), so that a scan cannot tell its
 * routes are there.
 */
@Owns({ config: [adminConfig] })
@Module({ imports: [DiscoveryModule] })
export class AuthModule implements NestModule {
  constructor(
    private readonly discovery: DiscoveryService,
    private readonly reflector: Reflector,
    @Inject(CONFIGURATION) private readonly config: Configuration,
  ) {}

  configure(consumer: MiddlewareConsumer): void {
    const off = this.discovery.getControllers().flatMap(({ metatype }) => {
      const name = metatype && this.reflector.get(RequiredToken, metatype);
      if (!name || TOKEN_RULES[name].whenUnset !== 'off') return [];
      return acceptedTokens(this.config, name).length === 0 ? [metatype as Type] : [];
    });
    if (off.length > 0) consumer.apply(answerAsUnknownRoute).forRoutes(...off);
  }
}

/** The 404 of a route that does not exist. */
function answerAsUnknownRoute(req: Request, _res: Response, next: NextFunction): void {
  next(new NotFoundException(`Cannot ${req.method} ${req.originalUrl}`));
}
