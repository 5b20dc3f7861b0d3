import { copyFile, mkdir } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type BrowserContextOptions, type Page } from 'playwright-core';
import { redisEnv, startApp, type TestApp } from './support/app.js';
import { TestDatabase } from './support/database.js';
import { http, post } from './support/http.js';
import { freePort } from './support/ports.js';
import { settle } from './support/sse.js';

/**
 * The live page (src/public) in a real browser: Debian's Chromium driven by playwright-core,
 * against the real application with real Postgres and Redis. Each test leaves a screenshot in
 * test/artifacts/. `UPDATE_README_SCREENSHOT=1` also refreshes docs/screenshot.png.
 */

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const DOCS_HOST = 'name-history.test';
const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
  // A host name that is not localhost (which browsers treat as secure), for Swagger UI.
  `--host-resolver-rules=MAP ${DOCS_HOST} 127.0.0.1`,
];
const ARTIFACTS = fileURLToPath(new URL('artifacts/', import.meta.url));
const README_SCREENSHOT = fileURLToPath(new URL('../docs/screenshot.png', import.meta.url));
const PUBLISH = '/api/webhooks/prevnames';
const HOSTILE = '<img src=x onerror=alert(1)>';

/**
 * Records every state the connection indicator shows ("state: text"), from before the page's
 * own script runs, so a test can check the sequence and not only the state it happens to see.
 */
const RECORD_STATES = `
  window.__states = [];
  new MutationObserver(() => {
    const indicator = document.getElementById('connection');
    if (!indicator) return;
    const entry = indicator.dataset.state + ': ' + indicator.textContent.trim();
    if (window.__states.at(-1) !== entry) window.__states.push(entry);
  }).observe(document, { subtree: true, childList: true, characterData: true, attributes: true });
`;

const run = randomBytes(3).toString('hex');
let counter = 0;
function uniqueUser(label = 'user'): string {
  counter += 1;
  return `${label}-${run}-${counter}`;
}

interface NameEvent {
  userId: string;
  type: 'username' | 'displayname';
  name: string;
  changedAt: string;
}

function event(overrides: Partial<NameEvent> = {}): NameEvent {
  return {
    userId: uniqueUser(),
    type: 'username',
    name: `name-${counter}`,
    changedAt: '2024-06-07T15:30:00.000Z',
    ...overrides,
  };
}

interface FeedRow {
  id: string | null;
  type: string | null;
  name: string | null;
  userId: string | null;
  time: string | null;
  datetime: string | null;
}

interface HistoryRow {
  cells: string[];
  datetime: string | null;
}

let browser: Browser;
let page: Page | undefined;
/** Uncaught page errors, dialogs (an alert() would mean injected script ran) and CSP refusals. */
let problems: string[] = [];

beforeAll(async () => {
  await mkdir(ARTIFACTS, { recursive: true });
  // launch() gives every run a fresh, throw-away user-data directory.
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: CHROMIUM_ARGS,
  });
});

afterAll(async () => {
  await browser?.close();
});

afterEach(async () => {
  if (page && !page.isClosed()) {
    const name = (expect.getState().currentTestName ?? 'browser')
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '-')
      .replace(/^-|-$/g, '')
      .slice(0, 120);
    await page.screenshot({ path: `${ARTIFACTS}browser-${name}.png`, fullPage: true });
    await page.context().close();
  }
  page = undefined;
  expect(problems).toEqual([]);
  problems = [];
});

async function openPage(url: string, options: BrowserContextOptions = {}): Promise<Page> {
  const context = await browser.newContext({
    locale: 'en-GB',
    timezoneId: 'Asia/Tokyo',
    viewport: { width: 1280, height: 800 },
    ...options,
  });
  await context.addInitScript(RECORD_STATES);
  page = await context.newPage();
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  page.on('dialog', (dialog) => {
    problems.push(`dialog: ${dialog.type()} ${dialog.message()}`);
    void dialog.dismiss();
  });
  page.on('console', (message) => {
    if (/Content Security Policy/i.test(message.text())) problems.push(`CSP: ${message.text()}`);
  });
  const response = await page.goto(url);
  expect(response?.status()).toBe(200);
  return page;
}

function waitForState(p: Page, state: string, timeout = 10_000): Promise<void> {
  return p.locator(`#connection[data-state="${state}"]`).waitFor({ state: 'attached', timeout });
}

function states(p: Page): Promise<string[]> {
  return p.evaluate<string[]>('window.__states');
}

async function feedRows(p: Page): Promise<FeedRow[]> {
  const rows = await p.locator('#feed > li').all();
  return Promise.all(
    rows.map(async (row) => ({
      id: await row.getAttribute('data-id'),
      type: await row.locator('.badge').textContent(),
      name: await row.locator('.event-name .name').textContent(),
      userId: await row.locator('.event-user-id').textContent(),
      time: await row.locator('time').textContent(),
      datetime: await row.locator('time').getAttribute('datetime'),
    })),
  );
}

async function waitForFeedCount(p: Page, count: number, timeout = 10_000): Promise<void> {
  await p
    .locator('#feed > li')
    .nth(count - 1)
    .waitFor({ state: 'attached', timeout });
}

/**
 * Polls an expression in the page until it is true. Not page.waitForFunction: its polling
 * evaluates strings inside the page, which the page's CSP (rightly) refuses.
 */
async function until(p: Page, expression: string, timeout = 10_000): Promise<void> {
  const deadline = Date.now() + timeout;
  while (!(await p.evaluate<boolean>(expression))) {
    if (Date.now() > deadline) throw new Error(`Not true within ${timeout} ms: ${expression}`);
    await settle(25);
  }
}

async function historyRows(p: Page): Promise<HistoryRow[]> {
  const rows = await p.locator('#history-result table tbody tr').all();
  return Promise.all(
    rows.map(async (row) => ({
      cells: await row.locator('td').allTextContents(),
      datetime: await row.locator('time').getAttribute('datetime'),
    })),
  );
}

async function lookUp(p: Page, userId: string): Promise<void> {
  await p.getByLabel('User id', { exact: true }).fill(userId);
  await p.getByRole('button', { name: 'Look up', exact: true }).click();
  await p.locator('#history-result:not([aria-busy])').waitFor({ state: 'attached' });
}

describe('the live page, in Chromium, on PostgreSQL and Redis', () => {
  let db: TestDatabase;
  let env: Record<string, string>;
  let app: TestApp;
  const publish = (body: unknown) => post(`${app.url}${PUBLISH}`, body);

  beforeAll(async () => {
    db = await TestDatabase.create();
    // A short retry hint, so the browser reconnects quickly after the restart below.
    env = { ...redisEnv(db.url), SSE_RETRY_MS: '300', SSE_KEEPALIVE_MS: '1000' };
    // A port out of the kernel's ephemeral range: the restart below binds it again.
    app = await startApp(env, await freePort());
  });

  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  it('serves the page and its files at / and keeps the JSON 404 for everything else', async () => {
    const index = await http(`${app.url}/`);
    expect(index.status).toBe(200);
    expect(index.headers.get('content-type')).toBe('text/html; charset=utf-8');
    // A CSP of the page's own (no inline code, this origin only); helmet's other headers stay.
    expect(index.headers.get('content-security-policy')).toBe(
      "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
        "connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
    );
    expect(index.headers.get('x-content-type-options')).toBe('nosniff');
    expect(index.headers.get('x-frame-options')).toBe('SAMEORIGIN');
    expect(index.headers.get('cache-control')).toBe('no-cache');
    expect(index.headers.get('etag')).toBeTruthy();
    expect(index.text).toContain('<script type="module" src="app.js"></script>');
    expect(index.text).not.toMatch(/<script>|<style|style=|\son[a-z]+=/);

    for (const [path, type] of [
      ['/app.js', 'text/javascript; charset=utf-8'],
      ['/app.css', 'text/css; charset=utf-8'],
      ['/favicon.svg', 'image/svg+xml'],
    ]) {
      const res = await http(`${app.url}${path}`);
      expect([path, res.status, res.headers.get('content-type')]).toEqual([path, 200, type]);
    }

    for (const path of ['/api/nope', '/api', '/api/', '/api/index.html', '/api/app.js']) {
      const res = await http(`${app.url}${path}`);
      expect(res.status).toBe(404);
      expect(res.headers.get('content-type')).toBe('application/json; charset=utf-8');
      expect(res.body).toEqual({ message: `Cannot GET ${path}`, code: 404 });
    }
    // Nothing else is served: no other file, no dotfile, no other method on the page.
    for (const [method, path] of [
      ['GET', '/nope.js'],
      ['GET', '/public/app.js'],
      ['GET', '/.env'],
      ['GET', '/../package.json'],
      ['POST', '/'],
    ]) {
      expect([method, path, (await http(`${app.url}${path}`, { method })).status]).toEqual([
        method,
        path,
        404,
      ]);
    }

    // The API itself is untouched.
    const history = await http(`${app.url}/api/users/nobody-${run}/prevnames`);
    expect(history.body).toEqual({ userId: `nobody-${run}`, prevnames: [], code: 200 });
  });

  it('shows POSTed events in the live feed, newest on top, in the viewer’s time zone', async () => {
    const p = await openPage(app.url);
    await waitForState(p, 'live');
    expect(await p.locator('#connection-text').textContent()).toBe('Live');
    expect(await p.locator('#feed-empty').isVisible()).toBe(true);

    const first = event({ type: 'username', name: 'first_old_name' });
    const second = event({
      type: 'displayname',
      name: 'Second Old Name',
      changedAt: '2024-12-31T23:59:59.000Z',
    });
    expect((await publish(first)).body).toEqual({ success: true });
    await waitForFeedCount(p, 1);
    expect((await publish(second)).body).toEqual({ success: true });
    await waitForFeedCount(p, 2);

    const rows = await feedRows(p);
    expect(rows.map(({ id: _id, time: _time, ...row }) => row)).toEqual([
      {
        type: 'Display name',
        name: 'Second Old Name',
        userId: second.userId,
        datetime: '2024-12-31T23:59:59.000Z',
      },
      {
        type: 'Username',
        name: 'first_old_name',
        userId: first.userId,
        datetime: '2024-06-07T15:30:00.000Z',
      },
    ]);
    expect(BigInt(rows[0].id!)).toBeGreaterThan(BigInt(rows[1].id!));
    // 15:30 UTC is 00:30 the next day in Tokyo; 23:59:59 UTC on 31 Dec is 08:59:59 on 1 Jan.
    expect(rows[1].time).toMatch(/^8 Jun 2024, 00:30:00 (GMT\+9|JST)$/);
    expect(rows[0].time).toMatch(/^1 Jan 2025, 08:59:59 (GMT\+9|JST)$/);
    expect(await p.locator('#feed-empty').isVisible()).toBe(false);
  });

  it('renders hostile names and user ids as text, in the feed and in the history', async () => {
    const p = await openPage(app.url);
    await waitForState(p, 'live');
    const userId = `<script>alert(2)</script>${run}`;
    const names = [HOSTILE, '</li><li>injected', `"quoted" & 'single' &amp;`, '  two\nlines  '];
    for (const [i, name] of names.entries()) {
      const res = await publish({
        userId,
        type: 'displayname',
        name,
        changedAt: `2024-01-0${i + 1}T00:00:00.000Z`,
      });
      expect(res.status).toBe(200);
    }
    await waitForFeedCount(p, names.length);
    await settle(200);

    const rows = await feedRows(p);
    expect(rows.map((row) => row.name)).toEqual([...names].reverse());
    expect(rows.map((row) => row.userId)).toEqual(names.map(() => userId));
    expect(await p.locator('#feed > li').count()).toBe(names.length);

    await p.locator('#feed > li').first().locator('.event-user-id').click();
    await p.locator('#history-result table').waitFor();
    expect((await historyRows(p)).map((row) => row.cells[2])).toEqual(names);
    expect(await p.locator('#history-result caption').textContent()).toBe(
      `Previous names of user ${userId} (4 names), oldest first`,
    );

    expect(await p.locator('img, script:not([src])').count()).toBe(0);
    expect(await p.getByText(HOSTILE, { exact: true }).count()).toBe(2);
  });

  it('looks up a history as a table in order, with a plain empty state', async () => {
    const p = await openPage(app.url);
    await waitForState(p, 'live');
    const userId = uniqueUser('history');
    const entries = [
      { type: 'username', name: 'march', changedAt: '2024-03-01T12:00:00.000Z' },
      { type: 'displayname', name: 'january', changedAt: '2024-01-01T12:00:00.000Z' },
      { type: 'username', name: 'february', changedAt: '2024-02-01T12:00:00.000+01:00' },
    ] as const;
    for (const entry of entries) expect((await publish({ userId, ...entry })).status).toBe(200);

    await lookUp(p, userId);
    expect(await p.locator('#history-result caption').textContent()).toBe(
      `Previous names of user ${userId} (3 names), oldest first`,
    );
    expect(await p.locator('#history-result th').allTextContents()).toEqual([
      '#',
      'Type',
      'Name',
      'Changed at',
    ]);
    const rows = await historyRows(p);
    expect(rows.map((row) => [...row.cells.slice(0, 3), row.datetime])).toEqual([
      ['1', 'Display name', 'january', '2024-01-01T12:00:00.000Z'],
      ['2', 'Username', 'february', '2024-02-01T11:00:00.000Z'],
      ['3', 'Username', 'march', '2024-03-01T12:00:00.000Z'],
    ]);
    expect(rows[0].cells[3]).toMatch(/^1 Jan 2024, 21:00:00 (GMT\+9|JST)$/);

    const stranger = uniqueUser('stranger');
    await lookUp(p, stranger);
    expect(await p.locator('#history-result table').count()).toBe(0);
    expect(await p.locator('#history-result .empty').textContent()).toBe(
      `No previous names are recorded for user ${stranger}.`,
    );

    await p.getByLabel('User id', { exact: true }).fill('   ');
    await p.getByRole('button', { name: 'Look up', exact: true }).click();
    expect(await p.locator('#history-result [role="alert"]').textContent()).toBe(
      'Enter a user id to look up.',
    );
  });

  it('filters the live feed to one user with ?userId=, and back to everyone', async () => {
    const mine = uniqueUser('mine');
    const p = await openPage(`${app.url}/?userId=${encodeURIComponent(mine)}`);
    await waitForState(p, 'live');
    expect(await p.getByRole('textbox', { name: 'Only this user id' }).inputValue()).toBe(mine);
    expect(await p.locator('#feed-scope').textContent()).toBe(
      `Showing only user ${mine}, newest first.`,
    );

    const other = event({ name: 'not-mine' });
    expect((await publish(other)).status).toBe(200);
    expect((await publish(event({ userId: mine, name: 'mine-1' }))).status).toBe(200);
    await waitForFeedCount(p, 1);
    // Events reach a listener in id order: "not-mine" would have arrived before "mine-1".
    await settle(200);
    expect((await feedRows(p)).map((row) => row.name)).toEqual(['mine-1']);

    await p.getByRole('button', { name: 'Show everyone' }).click();
    await waitForState(p, 'live');
    expect(new URL(p.url()).search).toBe('');
    expect(await p.locator('#feed > li').count()).toBe(0);
    expect((await publish(event({ name: 'anyone' }))).status).toBe(200);
    await waitForFeedCount(p, 1);
    expect((await feedRows(p)).map((row) => row.name)).toEqual(['anyone']);

    const typed = uniqueUser('typed');
    await p.getByRole('textbox', { name: 'Only this user id' }).fill(typed);
    await p.getByRole('textbox', { name: 'Only this user id' }).press('Enter');
    await waitForState(p, 'live');
    expect(new URL(p.url()).searchParams.get('userId')).toBe(typed);
    expect(await p.locator('#feed > li').count()).toBe(0);
    expect((await publish(event({ name: 'not-typed' }))).status).toBe(200);
    expect((await publish(event({ userId: typed, name: 'typed-1' }))).status).toBe(200);
    await waitForFeedCount(p, 1);
    await settle(200);
    expect((await feedRows(p)).map((row) => row.name)).toEqual(['typed-1']);
  });

  it('is usable with the keyboard and readable on a phone', async () => {
    const p = await openPage(app.url, {
      viewport: { width: 390, height: 844 },
      deviceScaleFactor: 2,
      isMobile: true,
      hasTouch: true,
    });
    await waitForState(p, 'live');
    const userId = uniqueUser('phone');
    const long = 'x'.repeat(256);
    expect((await publish(event({ userId, name: long }))).status).toBe(200);
    expect((await publish(event({ userId, name: 'short and sweet' }))).status).toBe(200);
    await waitForFeedCount(p, 2);

    // Skip link, then straight to the history lookup.
    await p.keyboard.press('Tab');
    expect(await p.evaluate<string>('document.activeElement.textContent')).toBe(
      'Skip to the history lookup',
    );
    await p.keyboard.press('Enter');
    await p.keyboard.press('Tab');
    expect(await p.evaluate<string>('document.activeElement.id')).toBe('history-user');
    expect(
      await p.evaluate<string>('getComputedStyle(document.activeElement).outlineStyle'),
    ).not.toBe('none');
    await p.keyboard.type(userId);
    await p.keyboard.press('Enter');
    await p.locator('#history-result table').waitFor();
    expect((await historyRows(p)).map((row) => row.cells[2])).toEqual([long, 'short and sweet']);

    // From the feed: a user id is a button that looks the user up and moves focus there.
    await p.locator('#feed > li').first().locator('.event-user-id').focus();
    await p.keyboard.press('Enter');
    await p.locator('#history-result table').waitFor();
    expect(await p.evaluate<string>('document.activeElement.id')).toBe('history-result');

    // Every control has a label or a name; nothing is wider than the screen.
    expect(
      await p.evaluate<number>(
        `[...document.querySelectorAll('input')].filter((i) => i.labels.length === 0).length`,
      ),
    ).toBe(0);
    expect(
      await p.evaluate<number>(
        `[...document.querySelectorAll('button')].filter((b) => !(b.getAttribute('aria-label') || b.textContent.trim())).length`,
      ),
    ).toBe(0);
    expect(await p.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(
      390,
    );
    expect(
      await p.evaluate<string>(
        `getComputedStyle(document.getElementById('history-user')).fontSize`,
      ),
    ).toBe('16px');
  });

  it('comes back after a restart under the open page, with the missed event exactly once', async () => {
    const p = await openPage(app.url);
    await waitForState(p, 'live');
    const userId = uniqueUser('restart');
    const before = event({ userId, name: 'before-restart' });
    expect((await publish(before)).status).toBe(200);
    await waitForFeedCount(p, 1);

    const port = Number(new URL(app.url).port);
    await app.close();
    // From the recorded states: the browser may already be past it (a reconnect that reached
    // the closing app gets a 503, and the page retries on its own).
    await until(p, `window.__states.includes('reconnecting: Reconnecting…')`, 5_000);

    // While it is down, another instance stores an event; nobody listens there.
    const other = await startApp(env);
    try {
      const missed = await post(`${other.url}${PUBLISH}`, event({ userId, name: 'missed' }));
      expect(missed.body).toEqual({
        message: 'Failed to deliver event: no active listeners',
        code: 500,
      });
    } finally {
      await other.close();
    }

    app = await startApp(env, port);
    await waitForState(p, 'live');
    await waitForFeedCount(p, 2);
    // A repeat of an event the page shows is broadcast with its original id: dropped.
    expect((await publish(before)).status).toBe(200);
    expect((await publish(event({ userId, name: 'after-restart' }))).status).toBe(200);
    await waitForFeedCount(p, 3);
    await settle(300);

    expect((await feedRows(p)).map((row) => row.name)).toEqual([
      'after-restart',
      'missed',
      'before-restart',
    ]);
    const seen = await states(p);
    expect(seen.slice(0, 3)).toEqual([
      'connecting: Connecting…',
      'live: Live',
      'reconnecting: Reconnecting…',
    ]);
    expect(seen.at(-1)).toBe('live: Live');
  });

  it('looks right (the README screenshot)', async () => {
    const p = await openPage(app.url, { timezoneId: 'Europe/Berlin' });
    await waitForState(p, 'live');
    const samples: NameEvent[] = [
      {
        userId: '80351110224678912',
        type: 'username',
        name: 'nelly',
        changedAt: '2024-06-07T15:30:00.000Z',
      },
      {
        userId: '80351110224678912',
        type: 'displayname',
        name: 'Nélly ✦',
        changedAt: '2024-06-07T15:31:12.000Z',
      },
      {
        userId: '41771983423143937',
        type: 'username',
        name: 'old_handle',
        changedAt: '2024-06-07T15:34:40.000Z',
      },
      {
        userId: '175928847299117063',
        type: 'displayname',
        name: HOSTILE,
        changedAt: '2024-06-07T15:36:05.000Z',
      },
    ];
    for (const sample of samples) expect((await publish(sample)).status).toBe(200);
    await waitForFeedCount(p, samples.length);
    await lookUp(p, '80351110224678912');
    await p.locator('#history-result table').waitFor();
    await settle(1_600); // the highlight of new rows fades out
    const path = `${ARTIFACTS}readme.png`;
    await p.screenshot({ path });
    if (process.env.UPDATE_README_SCREENSHOT) {
      await mkdir(new URL('../docs/', import.meta.url), { recursive: true });
      await copyFile(path, README_SCREENSHOT);
    }
  });
});

describe('the live page when the service is failing', () => {
  let db: TestDatabase;
  let app: TestApp;

  beforeAll(async () => {
    db = await TestDatabase.create();
    app = await startApp({ DATABASE_URL: db.url, REDIS_URL: 'redis://127.0.0.1:1' });
  });

  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  it('shows the stream as down and a history error plainly', async () => {
    const p = await openPage(app.url);
    await waitForState(p, 'down');
    expect(await p.locator('#connection-text').textContent()).toBe('Down: retrying automatically');
    expect(await p.getByRole('button', { name: 'Retry now' }).isVisible()).toBe(true);

    const userId = uniqueUser('failing');
    await lookUp(p, userId);
    expect(await p.locator('#history-result .empty').textContent()).toBe(
      `No previous names are recorded for user ${userId}.`,
    );

    await db.drop();
    await lookUp(p, userId);
    expect(await p.locator('#history-result [role="alert"] p').allTextContents()).toEqual([
      `Could not look up user ${userId}.`,
      'Internal server error (code 500)',
    ]);
    await waitForState(p, 'down');
  });
});

describe('Swagger UI over plain HTTP, at a host name other than localhost', () => {
  let db: TestDatabase;
  let app: TestApp;

  beforeAll(async () => {
    db = await TestDatabase.create();
    // Behind a proxy that says when the client used HTTPS.
    app = await startApp({ DATABASE_URL: db.url, TRUST_PROXY: 'loopback' });
  });

  afterAll(async () => {
    await app?.close();
    await db?.drop();
  });

  it('renders the API, with no request upgraded to https', async () => {
    const url = new URL('/api/docs', app.url);
    url.hostname = DOCS_HOST;
    const p = await openPage(url.toString());
    await p.locator('.swagger-ui .info .title').waitFor({ timeout: 10_000 });
    expect(await p.locator('.swagger-ui .info .title').textContent()).toContain(
      'Name history service',
    );
    await p.locator('.opblock-summary-path[data-path="/api/webhooks/prevnames/listen"]').waitFor();
    expect(
      await p
        .locator('.opblock-summary-path')
        .evaluateAll((paths) => paths.map((path) => path.getAttribute('data-path'))),
    ).toEqual(
      expect.arrayContaining([
        '/api/users/{userId}/prevnames',
        '/api/webhooks/prevnames/listen',
        '/api/webhooks/prevnames',
      ]),
    );
  });

  it('keeps the strict policy everywhere else, and on the docs over HTTPS', async () => {
    const policy = async (path: string, headers: Record<string, string> = {}) =>
      (await http(`${app.url}${path}`, { headers })).headers.get('content-security-policy') ?? '';
    expect(await policy('/api/docs')).not.toContain('upgrade-insecure-requests');
    expect(await policy('/api/docs/swagger-ui-init.js')).not.toContain('upgrade-insecure-requests');
    expect(await policy('/API/Docs')).not.toContain('upgrade-insecure-requests');
    expect(await policy('/api/docs', { 'X-Forwarded-Proto': 'https' })).toContain(
      'upgrade-insecure-requests',
    );
    expect(await policy('/api/users/someone/prevnames')).toContain('upgrade-insecure-requests');
    expect(await policy('/api/health/live')).toContain('upgrade-insecure-requests');
  });
});
