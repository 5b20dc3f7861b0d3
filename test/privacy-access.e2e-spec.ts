/** Who may use the erasure and opt-out routes: nobody without ADMIN_TOKEN, else its holder. */
import { JSON_TYPE } from './support/api.js';
import { STREAM_BACKENDS, useApp } from './support/app.js';
import { historyEntry, nameEvent, uniqueUserId } from './support/events.js';
import { http } from './support/http.js';
import {
  ADMIN_AUTH,
  ADMIN_TOKEN,
  admin as adminOf,
  UNAUTHORIZED,
  usePrivacyApp,
} from './support/privacy.js';

describe('the privacy routes with ADMIN_TOKEN unset', () => {
  const fx = useApp();

  it.each([
    ['DELETE', '/api/users/someone/prevnames'],
    ['PUT', '/api/users/someone/opt-out'],
    ['DELETE', '/api/users/someone/opt-out'],
    ['GET', '/api/users/someone/opt-out'],
    ['GET', '/api/users/someone/opt-out?x=1'],
  ])('answers %s %s 404 like an unknown route, token or not', async (method, path) => {
    for (const headers of [{}, ADMIN_AUTH]) {
      const res = await http(`${fx.url}${path}`, { method, headers });
      expect(res.status).toBe(404);
      expect(res.headers.get('content-type')).toBe(JSON_TYPE);
      expect(res.body).toEqual({ message: `Cannot ${method} ${path}`, code: 404 });
    }
    // The same shape as a route that does not exist at all.
    const unknownPath = path.replace('/api/users', '/api/userz');
    const unknown = await http(`${fx.url}${unknownPath}`, { method });
    expect(unknown.status).toBe(404);
    expect(unknown.body).toEqual({ message: `Cannot ${method} ${unknownPath}`, code: 404 });
  });

  it('erases nothing, and leaves the history route as it was', async () => {
    const userId = uniqueUserId('kept');
    const body = nameEvent({ userId, name: 'still-here' });
    await fx.listen();
    expect((await fx.publish(body)).status).toBe(200);
    const erasure = await adminOf(fx.url, 'DELETE', `${userId}/prevnames`);
    expect(erasure.status).toBe(404);
    expect(erasure.body).toEqual({
      message: `Cannot DELETE /api/users/${userId}/prevnames`,
      code: 404,
    });
    const history = await fx.history(userId);
    expect(history.status).toBe(200);
    expect(history.body).toEqual({ userId, prevnames: [historyEntry(body)], code: 200 });
  });
});

describe.each(STREAM_BACKENDS)('who may use the privacy routes on $name', ({ backend }) => {
  const { admin, publish, historyOf } = usePrivacyApp(backend);

  it.each([
    ['no Authorization header', {}],
    ['a wrong token', { authorization: `Bearer ${ADMIN_TOKEN}x` }],
    ['a prefix of the token', { authorization: `Bearer ${ADMIN_TOKEN.slice(0, -1)}` }],
    ['another scheme', { authorization: `Basic ${ADMIN_TOKEN}` }],
    ['the scheme alone', { authorization: 'Bearer ' }],
  ])('answers 401 to %s, and does nothing', async (_case, headers) => {
    const userId = uniqueUserId('refused');
    await publish(nameEvent({ userId, name: 'kept' }));
    for (const [method, path] of [
      ['DELETE', `${userId}/prevnames`],
      ['PUT', `${userId}/opt-out`],
      ['DELETE', `${userId}/opt-out`],
      ['GET', `${userId}/opt-out`],
    ]) {
      const res = await admin(method, path, headers);
      expect(res.status).toBe(401);
      expect(res.headers.get('content-type')).toBe(JSON_TYPE);
      expect(res.body).toEqual(UNAUTHORIZED);
    }
    expect(await historyOf(userId)).toHaveLength(1);
    expect((await publish(nameEvent({ userId, name: 'still-recorded' }))).status).toBe(200);
  });

  it('checks the token before the user id, and the user id as everywhere else', async () => {
    const tooLong = 'x'.repeat(65);
    const anonymous = await admin('DELETE', `${tooLong}/prevnames`, {});
    expect(anonymous.status).toBe(401);
    expect(anonymous.body).toEqual(UNAUTHORIZED);
    const res = await admin('DELETE', `${tooLong}/prevnames`);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({
      message: 'userId must be between 1 and 64 characters long',
      code: 400,
    });
  });
});
