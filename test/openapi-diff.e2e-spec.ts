import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const SCRIPT = fileURLToPath(new URL('../scripts/openapi-diff.mjs', import.meta.url));
/** The first release: committed once and never changed, so these cases do not move with the API. */
const RELEASE = readFileSync(new URL('../openapi/released/0.1.0.json', import.meta.url), 'utf8');
/** Both heading forms CHANGELOG.md uses, for every version the cases give. */
const CHANGELOG = '# Changelog\n\n## 1.0.0 — 2026-12-24\n\n## 0.2.0\n\n## 0.1.0 — 2026-11-25\n';
const HEADER = 'current.json (%s) against released/0.1.0.json (0.1.0)';

interface Parameter {
  name: string;
  in: string;
  required?: boolean;
}
interface Operation {
  operationId?: string;
  tags?: string[];
  parameters?: Parameter[];
  responses: Record<string, unknown>;
}
interface Document {
  info: { version: string; description: string };
  tags: { name: string }[];
  paths: Record<string, Record<string, Operation>>;
  components: {
    schemas: Record<string, { properties: Record<string, unknown>; required?: string[] }>;
    securitySchemes: Record<string, unknown>;
  };
}

/** A fresh copy of the 0.1.0 document, at `version`, for a case to change. */
function release(version = '0.1.0'): Document {
  const document = JSON.parse(RELEASE) as Document;
  document.info.version = version;
  return document;
}

/**
 * Runs the script in a directory of its own: current.json, released/ (0.1.0.json, byte for
 * byte, unless `released` says otherwise) and CHANGELOG.md (none when `changelog` is null).
 */
function diff(
  current: Document | string,
  {
    released = { '0.1.0.json': RELEASE },
    changelog = CHANGELOG,
  }: { released?: Record<string, string>; changelog?: string | null } = {},
) {
  const dir = mkdtempSync(join(tmpdir(), 'openapi-diff-'));
  try {
    mkdirSync(join(dir, 'released'));
    for (const [name, text] of Object.entries(released)) {
      writeFileSync(join(dir, 'released', name), text);
    }
    writeFileSync(
      join(dir, 'current.json'),
      typeof current === 'string' ? current : JSON.stringify(current, null, 2),
    );
    const args = ['--current', 'current.json', '--released-dir', 'released'];
    if (changelog !== null) writeFileSync(join(dir, 'CHANGELOG.md'), changelog);
    const run = spawnSync(process.execPath, [SCRIPT, ...args, '--changelog', 'CHANGELOG.md'], {
      cwd: dir,
      encoding: 'utf8',
    });
    return { status: run.status, stdout: run.stdout.split('\n'), stderr: run.stderr };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const header = (version: string) => HEADER.replace('%s', version);
const BREAKING = (version: string) =>
  `FAIL: a breaking change needs a major version (${version} has the major version of 0.1.0) and a CHANGELOG entry\n`;

/** CI: npm run openapi:diff, openapi/openapi.json against the newest openapi/released/ document. */
describe('the API document against the newest release', () => {
  it('passes the released document itself', () => {
    expect(diff(RELEASE)).toEqual({
      status: 0,
      stdout: [header('0.1.0'), 'OK: 0.1.0 against 0.1.0: identical', ''],
      stderr: '',
    });
  });

  it('fails a changed document that kept the released version', () => {
    const current = release();
    current.info.description += ' More.';
    expect(diff(current)).toEqual({
      status: 1,
      stdout: [header('0.1.0'), ''],
      stderr:
        'FAIL: the document changed: bump info.version (package.json version) and add a CHANGELOG entry\n',
    });
  });

  it('fails a version older than the newest release, which is chosen by semver', () => {
    const run = diff(RELEASE, {
      // By string 0.9.0 would be the newest; 0.10.0 is.
      released: {
        '0.9.0.json': JSON.stringify(release('0.9.0')),
        '0.10.0.json': JSON.stringify(release('0.10.0')),
      },
    });
    expect(run.status).toBe(1);
    expect(run.stdout[0]).toBe('current.json (0.1.0) against released/0.10.0.json (0.10.0)');
    expect(run.stderr).toBe('FAIL: info.version 0.1.0 is older than the newest release 0.10.0\n');
  });

  it('fails a renamed operationId under a minor version, naming it', () => {
    const current = release('0.2.0');
    current.paths['/api/metrics'].get.operationId = 'metrics';
    expect(diff(current)).toEqual({
      status: 1,
      stdout: [
        header('0.2.0'),
        '1 breaking change:',
        '  - GET /api/metrics: operationId getMetrics renamed to metrics',
        '',
      ],
      stderr: BREAKING('0.2.0'),
    });
  });

  it('fails the stream losing its first tag, events (as 9a5c0cb did)', () => {
    const current = release('0.2.0');
    current.paths['/api/webhooks/prevnames/listen'].get.tags = ['stream'];
    expect(diff(current)).toEqual({
      status: 1,
      stdout: [
        header('0.2.0'),
        '1 breaking change:',
        '  - GET /api/webhooks/prevnames/listen: tags [events, stream] became [stream] (removed events)',
        '',
      ],
      stderr: BREAKING('0.2.0'),
    });
  });

  it('fails a property removed from a response (openapi-diff) and a schema renamed (ours)', () => {
    const current = release('0.2.0');
    const { schemas } = current.components;
    delete schemas.ErasureResponseDto.properties.deleted;
    schemas.ErasureResponseDto.required = ['userId', 'code'];
    // The same type under another name: the same bodies, another generated type name.
    schemas.OptOutDto = schemas.OptOutResponseDto;
    delete schemas.OptOutResponseDto;
    const renamed = JSON.stringify(current).replaceAll(
      '#/components/schemas/OptOutResponseDto',
      '#/components/schemas/OptOutDto',
    );
    expect(diff(renamed)).toEqual({
      status: 1,
      stdout: [
        header('0.2.0'),
        '2 breaking changes:',
        '  - response.body.scope.add: DELETE /api/users/{userId}/prevnames responses.200.content.application/json.schema',
        '  - schema OptOutResponseDto removed or renamed',
        '',
      ],
      stderr: BREAKING('0.2.0'),
    });
  });

  it('passes breaking changes under a major version, listing them', () => {
    const current = release('1.0.0');
    current.paths['/api/metrics'].get.operationId = 'metrics';
    current.paths['/api/webhooks/prevnames/listen'].get.tags = ['stream'];
    expect(diff(current)).toEqual({
      status: 0,
      stdout: [
        header('1.0.0'),
        '2 breaking changes:',
        '  - GET /api/metrics: operationId getMetrics renamed to metrics',
        '  - GET /api/webhooks/prevnames/listen: tags [events, stream] became [stream] (removed events)',
        'OK: 1.0.0 against 0.1.0: 2 breaking changes, 0 non-breaking, 0 unclassified',
        '',
      ],
      stderr: '',
    });
  });

  it('passes an added operation under a minor version, and prints unclassified changes', () => {
    const current = release('0.2.0') as Document & Record<string, unknown>;
    current.paths['/api/things'] = {
      get: {
        operationId: 'getThings',
        tags: ['history'],
        responses: { 200: { description: 'Ok' } },
      },
    };
    // openapi-diff's only unclassified changes: the document's own x- extensions.
    current['x-internal'] = true;
    expect(diff(current)).toEqual({
      status: 0,
      stdout: [
        header('0.2.0'),
        '1 non-breaking change:',
        '  - path.add: /api/things',
        '1 unclassified change (not counted as breaking):',
        '  - unclassified.add: x-internal',
        'OK: 0.2.0 against 0.1.0: 0 breaking changes, 1 non-breaking, 1 unclassified',
        '',
      ],
      stderr: '',
    });
  });

  it('fails a version CHANGELOG.md has no section for, or no CHANGELOG.md', () => {
    const current = release('0.3.0');
    expect(diff(current).stderr).toBe('FAIL: CHANGELOG.md has no section ## 0.3.0\n');
    expect(diff(current, { changelog: null })).toMatchObject({
      status: 1,
      stderr: 'FAIL: CHANGELOG.md does not exist: add it with a section ## 0.3.0\n',
    });
  });

  it('gives no verdict (2) on a document openapi-diff cannot read', () => {
    const current = release('0.2.0');
    delete current.components.schemas.ErrorResponseDto;
    const run = diff(current);
    expect(run.status).toBe(2);
    expect(run.stderr).toMatch(/^cannot compare: Validation errors in ".*current\.json"/);
  });
});

interface Rules {
  compareDocuments(released: Document, current: Document): string[];
}

/** The rules openapi-diff does not have, on the pure function (no openapi-diff run). */
describe('the breaking changes openapi-diff does not report', () => {
  let rules: Rules;
  const load = (url: string) => import(url) as Promise<Rules>;
  beforeAll(async () => {
    rules = await load(new URL('../scripts/openapi-diff.mjs', import.meta.url).href);
  });
  /** compareDocuments from 0.1.0 to 0.1.0 as `change` leaves it. */
  const compare = (change: (document: Document) => void) => {
    const current = release();
    change(current);
    return rules.compareDocuments(release(), current);
  };
  const HISTORY = '/api/users/{userId}/prevnames';

  it('has none for the same document, or for tags and operations only added', () => {
    expect(compare(() => {})).toEqual([]);
    expect(
      compare((document) => {
        document.paths['/api/webhooks/prevnames/listen'].get.tags!.push('more');
        document.tags.push({ name: 'more' });
        document.paths['/api/things'] = { post: { operationId: 'addThing', responses: {} } };
        document.paths[HISTORY].get.parameters!.push({ name: 'q', in: 'query' });
      }),
    ).toEqual([]);
  });

  it('names each operation whose tags moved, operationId went or moved', () => {
    expect(
      compare((document) => {
        const listen = document.paths['/api/webhooks/prevnames/listen'].get;
        listen.tags = ['stream', 'events'];
        delete document.paths['/api/metrics'].get.operationId;
        document.paths[HISTORY].post = document.paths[HISTORY].delete;
        delete document.paths[HISTORY].delete;
      }),
    ).toEqual([
      'GET /api/metrics: operationId getMetrics removed',
      'GET /api/webhooks/prevnames/listen: tags [events, stream] became [stream, events] (first tag events is now stream)',
      `operationId eraseNameHistory moved from DELETE ${HISTORY} to POST ${HISTORY}`,
    ]);
  });

  it('names each parameter removed, renamed, moved, newly required or added required', () => {
    expect(
      compare((document) => {
        const [userId, limit, before, after] = document.paths[HISTORY].get.parameters!;
        limit.name = 'max';
        before.in = 'header';
        after.required = true;
        document.paths[HISTORY].get.parameters = [userId, limit, before, after];
        document.paths['/api/metrics'].get.parameters = [
          { name: 'format', in: 'query', required: true },
        ];
      }),
    ).toEqual([
      'GET /api/metrics: required parameter format (query) added',
      `GET ${HISTORY}: parameter limit (query) removed or renamed`,
      `GET ${HISTORY}: parameter before moved from query to header`,
      `GET ${HISTORY}: parameter after (query) became required`,
      `GET ${HISTORY}: parameter cursor (query) removed or renamed`,
    ]);
  });

  it('names each schema, document tag and security scheme removed', () => {
    expect(
      compare((document) => {
        delete document.components.schemas.NameType;
        document.tags = document.tags.filter((tag) => tag.name !== 'operations');
        delete document.components.securitySchemes.admin;
      }),
    ).toEqual([
      'schema NameType removed or renamed',
      "tag operations removed from the document's tags",
      'security scheme admin removed',
    ]);
  });
});
