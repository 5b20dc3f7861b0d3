import { copyFile, mkdir } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { useApp } from './support/app.js';
import {
  ARTIFACTS,
  historyRows,
  lookUp,
  useBrowser,
  waitForFeedCount,
  waitForState,
} from './support/browser.js';
import { nameEvent, uniqueUserId, type NameEventBody } from './support/events.js';

/**
 * The page itself in Chromium, against the real application: the history lookup, the
 * keyboard and a phone, how it looks, and a failing service. What is served:
 * page-files; the live feed: browser-feed; Swagger UI: browser-swagger.
 * `UPDATE_README_SCREENSHOT=1` also refreshes docs/screenshot.png.
 */

const README_SCREENSHOT = fileURLToPath(new URL('../docs/screenshot.png', import.meta.url));
const HOSTILE = '<img src=x onerror=alert(1)>';
const browser = useBrowser();

describe('the page, in Chromium, on PostgreSQL and Redis', () => {
  const fx = useApp({ env: { SSE_RETRY_MS: '300', SSE_KEEPALIVE_MS: '1000' } });

  it('looks up a history as a table in order, with a plain empty state', async () => {
    const p = await browser.openPage(fx.url);
    await waitForState(p, 'live');
    const userId = uniqueUserId('history');
    const entries = [
      { type: 'username', name: 'march', changedAt: '2024-03-01T12:00:00.000Z' },
      { type: 'displayname', name: 'january', changedAt: '2024-01-01T12:00:00.000Z' },
      { type: 'username', name: 'february', changedAt: '2024-02-01T12:00:00.000+01:00' },
    ] as const;
    for (const entry of entries) expect((await fx.publish({ userId, ...entry })).status).toBe(200);

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

    const stranger = uniqueUserId('stranger');
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

  it('is usable with the keyboard and readable on a phone', async () => {
    const p = await browser.openPage(fx.url, {
      viewport: { width: 390, height: 844 },
      deviceScaleFactor: 2,
      isMobile: true,
      hasTouch: true,
    });
    await waitForState(p, 'live');
    const userId = uniqueUserId('phone');
    const long = 'x'.repeat(256);
    expect((await fx.publish(nameEvent({ userId, name: long }))).status).toBe(200);
    expect((await fx.publish(nameEvent({ userId, name: 'short and sweet' }))).status).toBe(200);
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

  it('looks right (the README screenshot)', async () => {
    const p = await browser.openPage(fx.url, { timezoneId: 'Europe/Berlin' });
    await waitForState(p, 'live');
    const samples: NameEventBody[] = [
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
    for (const sample of samples) expect((await fx.publish(sample)).status).toBe(200);
    await waitForFeedCount(p, samples.length);
    await lookUp(p, '80351110224678912');
    await p.locator('#history-result table').waitFor();
    const path = `${ARTIFACTS}readme.png`;
    // The highlight of new rows, an animation, is shown at its end: faded out.
    await p.screenshot({ path, animations: 'disabled' });
    if (process.env.UPDATE_README_SCREENSHOT) {
      await mkdir(new URL('../docs/', import.meta.url), { recursive: true });
      await copyFile(path, README_SCREENSHOT);
    }
  });
});

describe('the page when the service is failing', () => {
  const fx = useApp({ backend: 'postgres', env: { REDIS_URL: 'redis://127.0.0.1:1' } });

  it('shows the stream as down and a history error plainly', async () => {
    const p = await browser.openPage(fx.url);
    await waitForState(p, 'down');
    expect(await p.locator('#connection-text').textContent()).toBe('Down: retrying automatically');
    expect(await p.getByRole('button', { name: 'Retry now' }).isVisible()).toBe(true);

    const userId = uniqueUserId('failing');
    await lookUp(p, userId);
    expect(await p.locator('#history-result .empty').textContent()).toBe(
      `No previous names are recorded for user ${userId}.`,
    );

    await fx.db.drop();
    await lookUp(p, userId);
    expect(await p.locator('#history-result [role="alert"] p').allTextContents()).toEqual([
      `Could not look up user ${userId}.`,
      'Internal server error (code 500)',
    ]);
    await waitForState(p, 'down');
  });
});
