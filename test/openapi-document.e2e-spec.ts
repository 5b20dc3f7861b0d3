import { readdirSync } from 'node:fs';
import { redisEnv, startApp, type TestApp } from './support/app.js';
import { TestDatabase } from './support/database.js';
import {
  ADMIN_TOKEN,
  type DocumentedErrorApps,
  type DocumentedErrorCases,
} from './support/documented-errors.js';
import type { HttpResult } from './support/http.js';
import { openApiDocument } from './support/openapi-document.js';

interface Example {
  operationId: string;
  method: string;
  path: string;
  status: string;
  example: unknown;
}

const document = openApiDocument;

/** Every error the document shows, with its example body. */
const examples: Example[] = Object.entries(document.paths).flatMap(([path, operations]) =>
  Object.entries(operations).flatMap(([method, operation]) =>
    Object.entries(operation.responses)
      .filter(([status]) => Number(status) >= 400)
      .map(([status, response]) => ({
        operationId: operation.operationId,
        method,
        path,
        status,
        example: response.content?.['application/json']?.example,
      })),
  ),
);

/** Each module's cases: a file of test/documented-errors/ (DocumentedErrorCases). */
const casesDir = new URL('./documented-errors/', import.meta.url);
const moduleCases = readdirSync(casesDir)
  .filter((file) => file.endsWith('.ts'))
  .sort();

/**
 * The document says what is sent: each error it shows, the service answers with exactly
 * that body when the error is provoked. A documented error no case here provokes fails too.
 */
describe('the OpenAPI document against the answers sent', () => {
  let db: TestDatabase;
  const apps: TestApp[] = [];
  const answers = new Map<string, HttpResult>();

  beforeAll(async () => {
    db = await TestDatabase.create();
    const start = async (env: Record<string, string>) => {
      const started = await startApp(env);
      apps.push(started);
      return started;
    };
    const shared: DocumentedErrorApps = {
      db,
      app: await start({ ...redisEnv(db.url), ADMIN_TOKEN }),
      noDatabase: await start({
        DATABASE_URL: 'postgres://postgres@127.0.0.1:1/test',
        ADMIN_TOKEN,
      }),
      noRedis: await start({ DATABASE_URL: db.url, REDIS_URL: 'redis://127.0.0.1:1', ADMIN_TOKEN }),
      noAdmin: await start({ DATABASE_URL: db.url }),
      start: (env) => start({ ...redisEnv(db.url), ADMIN_TOKEN, ...env }),
    };
    for (const file of moduleCases) {
      const cases = (
        (await import(`./documented-errors/${file.replace(/\.ts$/, '.js')}`)) as {
          default: DocumentedErrorCases;
        }
      ).default;
      for (const [key, answer] of await cases.provoke(shared)) {
        if (answers.has(key)) throw new Error(`${file}: ${key} is provoked twice`);
        answers.set(key, answer);
      }
    }
  }, 120_000);

  afterAll(async () => {
    await Promise.all(apps.map((app) => app.close()));
    await db.drop();
  });

  it('provokes every error the document shows', () => {
    expect(examples.map((e) => `${e.operationId} ${e.status}`).sort()).toEqual(
      [...answers.keys()].sort(),
    );
  });

  it.each(examples.map((e) => [`${e.method.toUpperCase()} ${e.path} → ${e.status}`, e] as const))(
    '%s: the example is the body sent',
    (_name, { operationId, status, example }) => {
      const res = answers.get(`${operationId} ${status}`)!;
      expect(res.status).toBe(Number(status));
      expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
      expect(res.body).toEqual(example);
    },
  );

  it('says in the 413 exactly what is sent', () => {
    const res = answers.get('publishNameChange 413')!;
    expect(res.body).toEqual({ message: 'Request body exceeds the 16 KiB limit', code: 413 });
  });

  it('lists the 400 an empty user id gets on history', () => {
    const res = answers.get('getNameHistory 400')!;
    expect(res.body).toEqual({
      message: 'userId must be between 1 and 64 characters long',
      code: 400,
    });
  });
});
