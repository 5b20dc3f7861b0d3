import type { TestApp } from './app.js';
import type { TestDatabase } from './database.js';
import type { HttpResult } from './http.js';

/** The administration's token, set on every instance of the document's test but `noAdmin`. */
export const ADMIN_TOKEN = 'an-admin-token-for-the-document-test';
export const ADMIN = { authorization: `Bearer ${ADMIN_TOKEN}` };

/** The instances a module's cases provoke its documented errors on. */
export interface DocumentedErrorApps {
  db: TestDatabase;
  /** On `db` and Redis, with ADMIN_TOKEN. */
  app: TestApp;
  /** Its database unreachable. */
  noDatabase: TestApp;
  /** Its Redis unreachable. */
  noRedis: TestApp;
  /** ADMIN_TOKEN unset: administration off. */
  noAdmin: TestApp;
  /**
   * An instance of its own, as `app` with `env` over it, closed with the rest: for what a
   * module configures (limits, tokens), so that no module's cases depend on another's.
   */
  start: (env: Record<string, string>) => Promise<TestApp>;
}

/** Answers by `<operationId> <status>`: one for each error the document shows. */
export type DocumentedErrorAnswers = [key: string, answer: HttpResult][];

/**
 * One module's part of the document's test, a file of test/documented-errors/: the requests
 * that provoke each error the document shows for its operations.
 */
export interface DocumentedErrorCases {
  provoke(apps: DocumentedErrorApps): Promise<DocumentedErrorAnswers>;
}
