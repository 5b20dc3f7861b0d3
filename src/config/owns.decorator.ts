import type { DynamicModule } from '@nestjs/common';
import 'reflect-metadata';
import type { ConfigSection } from './config-section.js';

/** A TypeORM migration class. */
export type MigrationClass = new () => { name?: string };

/** What a module brings with it, besides its providers and controllers. */
export interface Owned {
  /** Its environment variables: validated at boot with everyone's, documented by script. */
  config?: readonly ConfigSection<unknown, object>[];
  /** Its migrations: run at start-up with everyone's, in timestamp order, under one lock. */
  migrations?: readonly MigrationClass[];
  /** Its TypeORM entities: the schema its migrations are generated from. */
  entities?: readonly (abstract new (...args: never[]) => object)[];
  /** Its OpenAPI tags, with the description the document gives each. */
  apiTags?: readonly { name: string; description: string }[];
}

const OWNED = Symbol('owned');

/**
 * Declares what a module owns, on the module class, so that adding the module to
 * `app.module.ts` is all it takes: the application finds its configuration, migrations and
 * OpenAPI tags there (`collectOwned`).
 */
export function Owns(owned: Owned): ClassDecorator {
  return (target) => Reflect.defineMetadata(OWNED, owned, target);
}

/**
 * Everything the given modules own, each module once. Only the modules listed (those of
 * `app.module.ts`), not what they import: every module is listed there, so nothing is missed,
 * and no framework metadata is read.
 */
export function collectOwned(modules: readonly unknown[]): Required<Owned> {
  // A module's class, or a dynamic module's.
  const classes = modules.map((entry) =>
    typeof entry === 'function' ? entry : (entry as DynamicModule).module,
  );
  const owned = [...new Set(classes)].map(
    (module) => (Reflect.getMetadata(OWNED, module) ?? {}) as Owned,
  );
  return {
    config: owned.flatMap((each) => each.config ?? []),
    migrations: owned.flatMap((each) => each.migrations ?? []),
    entities: owned.flatMap((each) => each.entities ?? []),
    apiTags: owned.flatMap((each) => each.apiTags ?? []),
  };
}
