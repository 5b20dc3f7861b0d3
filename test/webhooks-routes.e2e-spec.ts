import { describe, expect, it } from '@jest/globals';
import { useApp } from './support/app.js';
import { ADMIN_TOKEN, UNAUTHORIZED } from './support/privacy.js';
import { endpointsOf, ENDPOINTS } from './support/webhooks.js';
import { http } from './support/http.js';

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const SECRET = /^whsec_[A-Za-z0-9+/]+={0,2}$/;

describe('the webhook-endpoint routes', () => {
  const fx = useApp({ env: { ADMIN_TOKEN, WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' } });
  const api = () => endpointsOf(fx.url);

  it('registers an endpoint (201), with defaults, a secret and the URL normalised', async () => {
    const res = await api().create({ url: 'HTTP://127.0.0.1:80/a/../hook?x=1#frag' });
    expect(res.status).toBe(201);
    expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
    const { id, secret, createdAt, ...rest } = res.body;
    expect(rest).toEqual({
      url: 'http://127.0.0.1/hook?x=1#frag',
      format: 'standard',
      userId: null,
      type: null,
      description: null,
      code: 201,
    });
    expect(typeof id).toBe('string');
    expect(createdAt).toMatch(ISO);
    expect(secret).toMatch(SECRET);
    expect(Buffer.from(secret!.slice(6), 'base64').length).toBeGreaterThanOrEqual(24);
  });

  it('takes the filters and the description, and gives a discord endpoint no secret', async () => {
    const res = await api().create({
      url: 'http://127.0.0.1:9/x',
      format: 'discord',
      userId: '123456789012345678',
      type: 'displayname',
      description: 'mod-log 🚓 "quoted"',
    });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({
      format: 'discord',
      userId: '123456789012345678',
      type: 'displayname',
      description: 'mod-log 🚓 "quoted"',
      secret: null,
    });
  });

  it('lists, reads and deletes endpoints; an unknown or deleted one is 404', async () => {
    const created = (await api().create({ url: 'http://127.0.0.1:9/one', type: 'username' })).body;
    const { secret: _secret, code: _code, ...fields } = created;
    const status = { ...fields, lastDeliveredEventId: null, pending: 0, failingSince: null };

    const one = await api().get(created.id);
    expect({ status: one.status, body: one.body }).toEqual({
      status: 200,
      body: { ...status, code: 200 },
    });
    const list = await api().list();
    expect(list.status).toBe(200);
    expect(list.body.code).toBe(200);
    expect(list.body.endpoints).toContainEqual(status);
    const ids = list.body.endpoints.map((e) => BigInt(e.id));
    expect(ids).toEqual([...ids].sort((a, b) => (a < b ? -1 : 1)));

    const deleted = await api().delete(created.id);
    expect({ status: deleted.status, body: deleted.body }).toEqual({
      status: 200,
      body: { id: created.id, deleted: true, code: 200 },
    });
    const gone = { message: `No webhook endpoint ${created.id}`, code: 404 };
    expect((await api().get(created.id)).body).toEqual(gone);
    expect((await api().delete(created.id)).body).toEqual(gone);
    expect((await api().list()).body.endpoints.map((e) => e.id)).not.toContain(created.id);
    for (const id of ['999999999', 'abc', '0', '99999999999999999999999']) {
      const res = await api().get(id);
      expect({ status: res.status, body: res.body }).toEqual({
        status: 404,
        body: { message: `No webhook endpoint ${id}`, code: 404 },
      });
    }
  });

  it('answers 401 without the admin token, or with a wrong one', async () => {
    const wrong = { authorization: 'Bearer wrong-token-wrong-token' };
    for (const headers of [{}, wrong] as Record<string, string>[]) {
      for (const res of [
        await api().create({ url: 'http://127.0.0.1:9/' }, headers),
        await api().list(headers),
        await api().get('1', headers),
        await api().delete('1', headers),
      ]) {
        expect({ status: res.status, body: res.body }).toEqual({
          status: 401,
          body: UNAUTHORIZED,
        });
      }
    }
  });

  it.each([
    [{}, 'url is required'],
    [{ url: 42 }, 'url must be a string'],
    [{ url: '' }, 'url must be between 1 and 2048 characters long'],
    [
      { url: `http://127.0.0.1/${'a'.repeat(2048)}` },
      'url must be between 1 and 2048 characters long',
    ],
    [{ url: '/relative/path' }, 'url must be an absolute http or https URL'],
    [{ url: 'ftp://127.0.0.1/' }, 'url must be an absolute http or https URL'],
    [{ url: 'javascript:alert(1)' }, 'url must be an absolute http or https URL'],
    [{ url: 'http://' }, 'url must be an absolute http or https URL'],
    [{ url: 'http://127.0.0.1/', format: 'slack' }, 'format must be one of: standard, discord'],
    [{ url: 'http://127.0.0.1/', type: 'nickname' }, 'type must be one of: username, displayname'],
    [{ url: 'http://127.0.0.1/', userId: '' }, 'userId must be between 1 and 64 characters long'],
    [
      { url: 'http://127.0.0.1/', userId: 'a'.repeat(65) },
      'userId must be between 1 and 64 characters long',
    ],
    [
      { url: 'http://127.0.0.1/', userId: 'a\nb' },
      'userId must not contain control characters or unpaired surrogates',
    ],
    [{ url: 'http://127.0.0.1/', userId: 7 }, 'userId must be a string'],
    [
      { url: 'http://127.0.0.1/', description: 'é'.repeat(257) },
      'description must be between 0 and 256 characters long',
    ],
    [
      { url: 'http://127.0.0.1/', description: 'a\u0000b' },
      'description must not contain NUL characters or unpaired surrogates',
    ],
    [{ url: 'http://127.0.0.1/', description: 3 }, 'description must be a string'],
    // An optional field is left out, not sent as null (the answers' nulls say "none").
    [{ url: 'http://127.0.0.1/', format: null }, 'format must be one of: standard, discord'],
    [{ url: 'http://127.0.0.1/', userId: null }, 'userId must be a string'],
    [{ url: 'http://127.0.0.1/', type: null }, 'type must be one of: username, displayname'],
    [{ url: 'http://127.0.0.1/', description: null }, 'description must be a string'],
    [{ url: 'http://127.0.0.1/', secret: 'whsec_x' }, 'property secret should not exist'],
  ])('refuses %j with 400 naming the field', async (body, message) => {
    const res = await api().create(body);
    expect({ status: res.status, body: res.body }).toEqual({
      status: 400,
      body: { message, code: 400 },
    });
  });

  it('counts the URL as sent (2048 characters pass) and the description in code points', async () => {
    const url = `http://127.0.0.1/${'a'.repeat(2048 - 'http://127.0.0.1/'.length)}`;
    expect((await api().create({ url })).status).toBe(201);
    expect(
      (await api().create({ url: 'http://127.0.0.1/', description: '😀'.repeat(256) })).status,
    ).toBe(201);
  });
});

describe('the webhook-endpoint routes without ADMIN_TOKEN', () => {
  const fx = useApp();

  it('answer 404 as unknown routes do', async () => {
    const auth = { authorization: `Bearer ${ADMIN_TOKEN}` };
    for (const [method, path] of [
      ['POST', ENDPOINTS],
      ['GET', ENDPOINTS],
      ['GET', `${ENDPOINTS}/1`],
      ['DELETE', `${ENDPOINTS}/1`],
    ]) {
      const res = await http(`${fx.url}${path}`, {
        method,
        headers: auth,
        json: method === 'POST' ? { url: 'http://127.0.0.1/' } : undefined,
      });
      expect({ status: res.status, body: res.body }).toEqual({
        status: 404,
        body: { message: `Cannot ${method} ${path}`, code: 404 },
      });
    }
  });
});
