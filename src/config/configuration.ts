import type { ConfigOf } from './config-section.js';
import type { appConfig } from './app.config.js';
import type { httpConfig } from './http.config.js';

/**
 * The sections read through `ConfigService` by namespace (`config.get('http', { infer: true })`)
 * rather than injected with `@InjectConfig`: the process's own, which main.ts and app.setup.ts
 * read before and outside dependency injection.
 */
export interface AppConfig {
  app: ConfigOf<typeof appConfig>;
  http: ConfigOf<typeof httpConfig>;
}
