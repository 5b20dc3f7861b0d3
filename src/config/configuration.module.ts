import { type DynamicModule, Module, type Provider } from '@nestjs/common';
import { loadConfiguration } from './load-configuration.js';
import { collectOwned, type Owned } from './owns.decorator.js';

/** What the application's modules own, together (see `@Owns`): `Required<Owned>`. */
export const OWNED_BY_MODULES = Symbol('OWNED_BY_MODULES');

/** Every section's value by its namespace (`Configuration`), for a module that reads another's. */
export const CONFIGURATION = Symbol('CONFIGURATION');

/**
 * The configuration of every module, validated at once from `env` before anything starts
 * (a bad variable throws a ConfigurationError of one line), each section's value injectable
 * with `@InjectConfig(section)` and readable by its namespace in `CONFIGURATION`. Global:
 * a module needs no import to read its own section.
 */
@Module({})
export class ConfigurationModule {
  static forRoot(
    env: Record<string, string | undefined>,
    modules: readonly unknown[],
  ): DynamicModule {
    const owned: Required<Owned> = collectOwned(modules);
    const values = loadConfiguration(env, owned.config);
    const providers: Provider[] = [
      ...owned.config.map((section) => ({
        provide: section.KEY,
        useValue: values.get(section.namespace),
      })),
      { provide: OWNED_BY_MODULES, useValue: owned },
      { provide: CONFIGURATION, useValue: values },
    ];
    return {
      module: ConfigurationModule,
      global: true,
      providers,
      exports: providers.map((provider) => (provider as { provide: string | symbol }).provide),
    };
  }
}
