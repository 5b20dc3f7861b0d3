import { DataSource } from 'typeorm';
import { JSON_TYPE, PUBLISH } from './support/api.js';
import { STREAM_BACKENDS, useApp } from './support/app.js';
import { http } from './support/http.js';
import type { SseStream } from './support/sse.js';

/** POST bodies the contract refuses: the exact 4xx, and nothing stored or broadcast. */
describe.each(STREAM_BACKENDS)('publishing bad input, on $name', ({ backend }) => {
  const fx = useApp({ backend });
  const storedCount = async () => {
    const [{ n }] = await fx.app
      .get(DataSource)
      .query<{ n: number }[]>('SELECT count(*)::int AS n FROM name_change_events');
    return n;
  };

  const invalid: [string, unknown, number, string][] = [
    ['a missing field', { userId: 'u', type: 'username', name: 'n' }, 400, 'changedAt is required'],
    [
      'a wrong type',
      { userId: 1, type: 'username', name: 'n', changedAt: '2024-06-07T15:30:00Z' },
      400,
      'userId must be a string',
    ],
    [
      'a bad enum',
      { userId: 'u', type: 'nickname', name: 'n', changedAt: '2024-06-07T15:30:00Z' },
      400,
      'type must be one of: username, displayname',
    ],
    [
      'a zone-less date',
      { userId: 'u', type: 'username', name: 'n', changedAt: '2024-06-07T15:30:00' },
      400,
      'changedAt must be an ISO 8601 timestamp with a zone (Z or ±hh:mm), e.g. 2024-06-07T15:30:00.000Z',
    ],
    [
      'an impossible date',
      { userId: 'u', type: 'username', name: 'n', changedAt: '2024-02-30T15:30:00Z' },
      400,
      'changedAt must be an ISO 8601 timestamp with a zone (Z or ±hh:mm), e.g. 2024-06-07T15:30:00.000Z',
    ],
    [
      'an array',
      [{ userId: 'u', type: 'username', name: 'n', changedAt: '2024-06-07T15:30:00Z' }],
      400,
      'Request body must be a JSON object',
    ],
    ['a string', 'hello', 400, 'Request body must be a JSON object'],
    ['null', null, 400, 'Request body must be a JSON object'],
    ['a number', 42, 400, 'Request body must be a JSON object'],
    [
      'an extra property',
      { userId: 'u', type: 'username', name: 'n', changedAt: '2024-06-07T15:30:00Z', extra: 1 },
      400,
      'property extra should not exist',
    ],
    [
      'an empty userId',
      { userId: '', type: 'username', name: 'n', changedAt: '2024-06-07T15:30:00Z' },
      400,
      'userId must be between 1 and 64 characters long',
    ],
    [
      'a 65-character userId',
      { userId: 'u'.repeat(65), type: 'username', name: 'n', changedAt: '2024-06-07T15:30:00Z' },
      400,
      'userId must be between 1 and 64 characters long',
    ],
    [
      'a 257-character name',
      { userId: 'u', type: 'username', name: 'n'.repeat(257), changedAt: '2024-06-07T15:30:00Z' },
      400,
      'name must be between 1 and 256 characters long',
    ],
    [
      'a NUL in the name',
      { userId: 'u', type: 'username', name: 'a\u0000b', changedAt: '2024-06-07T15:30:00Z' },
      400,
      'name must not contain NUL characters or unpaired surrogates',
    ],
    [
      'a prototype key',
      JSON.parse(
        '{"__proto__":{"polluted":true},"userId":"u","type":"username","name":"n","changedAt":"2024-06-07T15:30:00Z"}',
      ),
      400,
      'property __proto__ should not exist',
    ],
  ];

  const unreadable: [string, Record<string, string>, string, number, string][] = [
    [
      'a non-JSON content type',
      { 'content-type': 'text/plain' },
      '{"userId":"u"}',
      415,
      'Content-Type must be application/json',
    ],
    ['no content type', {}, '{"userId":"u"}', 415, 'Content-Type must be application/json'],
    [
      'broken JSON',
      { 'content-type': 'application/json' },
      '{"userId":',
      400,
      'Request body is not valid JSON',
    ],
    [
      'a 20 KiB body',
      { 'content-type': 'application/json' },
      JSON.stringify({
        userId: 'u',
        type: 'username',
        name: 'x'.repeat(20 * 1024),
        changedAt: '2024-06-07T15:30:00Z',
      }),
      413,
      'Request body exceeds the 16 KiB limit',
    ],
  ];

  let watcher: SseStream;
  let rowsBefore: number;
  beforeEach(async () => {
    watcher = await fx.listen();
    rowsBefore = await storedCount();
  });

  /** Nothing stored, and nothing broadcast before a sentinel sent after the request. */
  async function expectNothingStoredOrBroadcast() {
    expect(await storedCount()).toBe(rowsBefore);
    const sentinel = await fx.sentinel([watcher]);
    expect(watcher.events).toEqual([{ id: sentinel.id, data: sentinel.data }]);
  }

  it.each(invalid)(
    'rejects %s, storing and broadcasting nothing',
    async (_case, body, status, message) => {
      const res = await http(`${fx.url}${PUBLISH}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
      expect(res.status).toBe(status);
      expect(res.headers.get('content-type')).toBe(JSON_TYPE);
      expect(res.body).toEqual({ message, code: status });
      await expectNothingStoredOrBroadcast();
    },
  );

  it.each(unreadable)('rejects %s', async (_case, headers, body, status, message) => {
    const res = await http(`${fx.url}${PUBLISH}`, { method: 'POST', headers, body });
    expect(res.status).toBe(status);
    expect(res.body).toEqual({ message, code: status });
    await expectNothingStoredOrBroadcast();
  });

  it('rejects a body that is not valid UTF-8', async () => {
    const res = await http(`${fx.url}${PUBLISH}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: Buffer.from([0x7b, 0x22, 0x6e, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]),
    });
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ message: 'Request body is not valid UTF-8', code: 400 });
  });
});
