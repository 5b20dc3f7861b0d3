/**
 * The artifact that ships: the production image's file tree, built from the Dockerfile by
 * scripts/image-tree.mjs (its install, prune and copies, without a Docker engine), started as
 * the image starts it (its CMD in its WORKDIR, its ENV: NODE_ENV=production), with nothing of
 * the development tree where Node looks for packages. Every other test runs on the
 * development tree, where every package is installed: here each feature is touched once, so
 * that a package the service loads and the image lacks fails (a delivery never made, an
 * error logged). `npm run test:image` builds the tree and runs this file; `npm test` does not.
 */
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { GatewayIntentBits, GatewayOpcodes } from 'discord.js';
import {
  HEALTH_READY,
  historyPath,
  JSON_TYPE,
  LISTEN,
  PUBLISH,
  PUBLISHED,
} from '../support/api.js';
import { uniqueRedisPrefix } from '../support/app.js';
import { TestDatabase } from '../support/database.js';
import { changesOfOnceStored, newUser } from '../support/detector.js';
import { detectorProcessEnv, GUILD_A } from '../support/detector-app.js';
import { reconciled } from '../support/detector-metrics.js';
import { apiMember, FakeDiscord, TEST_DISCORD_TOKEN } from '../support/fake-discord.js';
import { eventsOf, historyEntry, nameEvent, streamed, uniqueUserId } from '../support/events.js';
import { target } from '../support/history-pages.js';
import { http } from '../support/http.js';
import { healthcheck, imageTree, nodeModulesAbove, startImageTree } from '../support/image-tree.js';
import { PROCESS_TIMEOUT_MS } from '../support/instances.js';
import { sample } from '../support/metrics.js';
import { waitFor } from '../support/ports.js';
import { admin, ADMIN_TOKEN, UNAUTHORIZED } from '../support/privacy.js';
import { matchOf, SEARCH, SEARCH_AUTH, SEARCH_TOKEN, searchQuery } from '../support/search.js';
import type { ServiceProcess } from '../support/service-process.js';
import { frame, opening, SseStream } from '../support/sse.js';
import { WebhookReceiver } from '../support/webhook-receiver.js';
import { createEndpoint, deliveries, signatureValid, statusOf } from '../support/webhooks.js';

/** Throws without IMAGE_TREE: the file fails rather than passing on nothing. */
const tree = imageTree();

const PUBLISH_TOKEN = 'a-publish-token-for-the-image-smoke';
const PUBLISH_AUTH = { authorization: `Bearer ${PUBLISH_TOKEN}` };
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** pino's level of each line the process wrote; a line that is not a JSON log is kept whole. */
function logLines(output: string): { level?: number; line: string }[] {
  return output
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => {
      try {
        const { level } = JSON.parse(line) as { level?: unknown };
        return typeof level === 'number' ? { level, line } : { line };
      } catch {
        return { line };
      }
    });
}

/** Every line is a JSON log (NODE_ENV=production), and none is at error level or above. */
function expectNoErrorLogged(service: ServiceProcess): void {
  const lines = logLines(service.output);
  expect(lines.length).toBeGreaterThan(0);
  expect(lines.filter((l) => l.level === undefined).map((l) => l.line)).toEqual([]);
  expect(lines.filter((l) => l.level! >= 50).map((l) => l.line)).toEqual([]);
}

/** POSTs an event with the publish token, expecting it delivered to a listener. */
async function publish(service: ServiceProcess, body: object) {
  const res = await http(`${service.url}${PUBLISH}`, {
    method: 'POST',
    json: body,
    headers: PUBLISH_AUTH,
  });
  expect({ status: res.status, body: res.body }).toEqual({ status: 200, body: PUBLISHED });
}

describe('the tree the image ships', () => {
  it('stands alone: no node_modules above it, no development tools in it, NODE_ENV=production', () => {
    expect(nodeModulesAbove(tree.dir)).toEqual([]);
    const { dependencies } = JSON.parse(readFileSync(join(tree.dir, 'package.json'), 'utf8')) as {
      dependencies: Record<string, string>;
    };
    for (const name of Object.keys(dependencies)) {
      expect([name, existsSync(join(tree.dir, 'node_modules', name, 'package.json'))]).toEqual([
        name,
        true,
      ]);
    }
    for (const tool of ['jest', 'ts-jest', 'eslint', 'prettier', '@nestjs/cli', 'supertest']) {
      expect([tool, existsSync(join(tree.dir, 'node_modules', tool))]).toEqual([tool, false]);
    }
    expect(tree.env.NODE_ENV).toBe('production');
  });
});

describe('the tree on Postgres and Redis, the detector on the fake Discord', () => {
  let db: TestDatabase;
  let discord: FakeDiscord;
  let receiver: WebhookReceiver;
  let service: ServiceProcess;
  /** Open throughout: someone listens, so that each publish is answered 200. */
  let listener: SseStream;
  const streams: SseStream[] = [];
  const member = newUser('smoke-member');
  const pagedUser = uniqueUserId('paged');
  let endpointId: string;

  const listen = async (query = '') => {
    const stream = await SseStream.open(`${service.url}${LISTEN}${query}`);
    streams.push(stream);
    expect(stream.status).toBe(200);
    await stream.until((s) => s.messages.length > 0);
    return stream;
  };

  beforeAll(async () => {
    db = await TestDatabase.create();
    discord = await FakeDiscord.start({
      guilds: [{ id: GUILD_A, members: [apiMember(member, { nick: 'Smokey' })] }],
    });
    receiver = await WebhookReceiver.start();
    service = await startImageTree(
      tree,
      detectorProcessEnv(db, discord, uniqueRedisPrefix(), {
        ADMIN_TOKEN,
        SEARCH_TOKEN,
        PUBLISH_TOKEN,
        WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
      }),
    );
    listener = await listen();
  }, PROCESS_TIMEOUT_MS);

  afterAll(async () => {
    for (const stream of streams) stream.close();
    await service?.stop('SIGKILL');
    await receiver?.close();
    await discord?.close();
    await db?.drop();
  });

  it('serves the page and Swagger UI from the files the tree holds', async () => {
    const page = await http(`${service.url}/`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(page.text).toBe(readFileSync(join(tree.dir, 'dist/public/index.html'), 'utf8'));
    const bundle = await fetch(`${service.url}/api/docs/swagger-ui-bundle.js`);
    expect(bundle.status).toBe(200);
    expect(await bundle.text()).toBe(
      readFileSync(join(tree.dir, 'node_modules/swagger-ui-dist/swagger-ui-bundle.js'), 'utf8'),
    );
  });

  it("passes the image's HEALTHCHECK", async () => {
    expect(await healthcheck(tree, service.port)).toBe(0);
  });

  it('logs in to Discord, and records a username change the gateway sends', async () => {
    expect(discord.rest).toEqual([
      {
        method: 'GET',
        path: '/api/v10/gateway/bot',
        authorization: `Bot ${TEST_DISCORD_TOKEN}`,
        at: expect.any(Number),
      },
    ]);
    await waitFor('an IDENTIFY', () => discord.identifies.length > 0);
    const identify = discord.identifies[0].received.find(
      (payload) => payload.op === (GatewayOpcodes.Identify as number),
    );
    expect(identify?.d).toMatchObject({
      token: TEST_DISCORD_TOKEN,
      intents: GatewayIntentBits.Guilds | GatewayIntentBits.GuildMembers,
    });
    await reconciled(service.url, 1);

    discord.changeUser(member.id, { username: 'smoke-member-renamed' });
    expect(await changesOfOnceStored(db, [member], 1)).toEqual([
      { userId: member.id, type: 'username', name: 'smoke-member' },
    ]);
    const history = await http<{ prevnames: { changedAt: string }[] }>(
      `${service.url}${historyPath(member.id)}`,
    );
    expect(history.status).toBe(200);
    expect(history.body).toEqual({
      userId: member.id,
      prevnames: [
        { type: 'username', name: 'smoke-member', changedAt: expect.stringMatching(ISO) },
      ],
      code: 200,
    });
    expect(discord.breaches).toEqual([]);
  });

  it('publishes with its token only, and streams the event to a listener byte for byte', async () => {
    const body = nameEvent({ changedAt: '2024-06-07T17:30:00+02:00' });
    const stream = await listen(`?userId=${body.userId}`);
    const startId = stream.messages[0].id!;
    const refused = await http(`${service.url}${PUBLISH}`, { method: 'POST', json: body });
    expect({ status: refused.status, body: refused.body }).toEqual({
      status: 401,
      body: UNAUTHORIZED,
    });
    await publish(service, body);
    await stream.untilEvents(1);
    expect(stream.raw).toBe(`${opening(startId)}${frame(stream.events[0].id!, streamed(body))}`);
  });

  it('answers a history in pages, following its Link header', async () => {
    const next = eventsOf(pagedUser);
    const bodies = [next(), next(), next()];
    for (const body of bodies) await publish(service, body);
    const first = await http(`${service.url}${historyPath(pagedUser, '?limit=2')}`);
    expect(first.status).toBe(200);
    expect(first.headers.get('content-type')).toBe(JSON_TYPE);
    expect(first.body).toEqual({
      userId: pagedUser,
      prevnames: bodies.slice(0, 2).map(historyEntry),
      code: 200,
    });
    const second = await http(`${service.url}${target(first.headers.get('link'), 'next')}`);
    expect(second.status).toBe(200);
    expect(second.body).toEqual({
      userId: pagedUser,
      prevnames: [historyEntry(bodies[2])],
      code: 200,
    });
    expect(second.headers.get('link')).toBeNull();
  });

  it('delivers an event to a webhook receiver, signed per Standard Webhooks', async () => {
    const userId = uniqueUserId('hooked');
    const { id, secret } = await createEndpoint(service.url, { url: receiver.url, userId });
    endpointId = id;
    const body = nameEvent({ userId });
    await publish(service, body);
    await waitFor('the delivery', () => receiver.received.length > 0);

    expect(receiver.received).toHaveLength(1);
    const [request] = receiver.received;
    expect([request.method, request.path, request.headers['content-type']]).toEqual([
      'POST',
      '/hook',
      'application/json',
    ]);
    expect(request.json).toEqual({
      type: 'name.changed',
      timestamp: expect.stringMatching(ISO),
      data: { id: expect.any(String), ...streamed(body) },
    });
    expect(request.headers['webhook-id']).toBe(receiver.data[0].id);
    expect(signatureValid(secret!, request.headers, request.body)).toBe(true);
    await waitFor(
      'the delivery recorded',
      async () => (await statusOf(service.url, id)).lastDeliveredEventId === receiver.data[0].id,
    );
    expect(await statusOf(service.url, id)).toMatchObject({ pending: 0, failingSince: null });
  });

  it('searches names with its token only', async () => {
    const body = nameEvent({ name: `smoke-${randomBytes(4).toString('hex')}` });
    await publish(service, body);
    const found = await http(`${service.url}${SEARCH}${searchQuery({ name: body.name })}`, {
      headers: SEARCH_AUTH,
    });
    expect({ status: found.status, body: found.body }).toEqual({
      status: 200,
      body: { name: body.name, matches: [matchOf(body)], code: 200 },
    });
    const refused = await http(`${service.url}${SEARCH}${searchQuery({ name: body.name })}`);
    expect({ status: refused.status, body: refused.body }).toEqual({
      status: 401,
      body: UNAUTHORIZED,
    });
  });

  it("erases a user's history", async () => {
    const res = await admin(service.url, 'DELETE', `${encodeURIComponent(pagedUser)}/prevnames`);
    expect({ status: res.status, body: res.body }).toEqual({
      status: 200,
      body: { userId: pagedUser, deleted: 3, code: 200 },
    });
    const history = await http(`${service.url}${historyPath(pagedUser)}`);
    expect(history.body).toEqual({ userId: pagedUser, prevnames: [], code: 200 });
  });

  it('counts the delivery, the erasure and the detector in its metrics', async () => {
    const res = await http<string>(`${service.url}/api/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(res.text.split('\n')).toEqual(
      expect.arrayContaining([
        `${deliveries(endpointId, 'delivered')} 1`,
        'name_history_events_erased_total{reason="erasure"} 3',
      ]),
    );
    expect(sample(res.text, deliveries(endpointId, 'error'))).toBe(0);
    expect(sample(res.text, 'name_history_detector_changes_total{source="live"}')).toBe(1);
  });

  it('stops on SIGTERM (exit 0), and logged JSON lines only, none at error level', async () => {
    expect(listener.ended).toBe(false);
    expect(await service.stop('SIGTERM')).toEqual({ code: 0, signal: null });
    expect(await healthcheck(tree, service.port)).toBe(1);
    expectNoErrorLogged(service);
  });
});

describe('the tree on its defaults: the embedded database in its data directory', () => {
  let service: ServiceProcess;
  const dataDir = join(tree.dir, 'data');
  const before = existsSync(dataDir) ? readdirSync(dataDir) : [];

  beforeAll(async () => {
    service = await startImageTree(tree, {});
  }, PROCESS_TIMEOUT_MS);

  afterAll(async () => {
    await service?.stop('SIGKILL');
    // The tree as it was built: what the service made in its data directory goes.
    for (const entry of readdirSync(dataDir).filter((e) => !before.includes(e))) {
      rmSync(join(dataDir, entry), { recursive: true, force: true });
    }
  });

  it('stores, streams and answers a history, then stops cleanly with no error logged', async () => {
    expect((await http(`${service.url}${HEALTH_READY}`)).status).toBe(200);
    const body = nameEvent();
    const stream = await SseStream.open(`${service.url}${LISTEN}?userId=${body.userId}`);
    try {
      await stream.until((s) => s.messages.length > 0);
      const res = await http(`${service.url}${PUBLISH}`, { method: 'POST', json: body });
      expect({ status: res.status, body: res.body }).toEqual({ status: 200, body: PUBLISHED });
      await stream.untilEvents(1);
      expect(stream.events.map((e) => e.data)).toEqual([streamed(body)]);
    } finally {
      stream.close();
    }
    const history = await http(`${service.url}${historyPath(body.userId)}`);
    expect(history.body).toEqual({
      userId: body.userId,
      prevnames: [historyEntry(body)],
      code: 200,
    });
    expect(readdirSync(dataDir)).toContain('pgdata');
    expect(await service.stop('SIGTERM')).toEqual({ code: 0, signal: null });
    expectNoErrorLogged(service);
  });
});
