import { NO_LISTENERS, PUBLISH } from './support/api.js';
import { useApp } from './support/app.js';
import {
  feedRows,
  historyRows,
  states,
  until,
  useBrowser,
  waitForFeedCount,
  waitForFeedName,
  waitForState,
} from './support/browser.js';
import { nameEvent, uniqueUserId } from './support/events.js';
import { post } from './support/http.js';

/**
 * The live feed of the page in Chromium, against the real application with real Postgres
 * and Redis: what a POST shows, escaped, filtered, and across a restart of the service.
 */

const HOSTILE = '<img src=x onerror=alert(1)>';

const browser = useBrowser();

describe('the live feed, in Chromium, on PostgreSQL and Redis', () => {
  // A short retry hint, so the browser reconnects quickly after the restart below; a port
  // out of the kernel's ephemeral range, which the restart binds again.
  const fx = useApp({ env: { SSE_RETRY_MS: '300', SSE_KEEPALIVE_MS: '1000' }, fixedPort: true });

  it('shows POSTed events in the live feed, newest on top, in the viewer’s time zone', async () => {
    const p = await browser.openPage(fx.url);
    await waitForState(p, 'live');
    expect(await p.locator('#connection-text').textContent()).toBe('Live');
    expect(await p.locator('#feed-empty').isVisible()).toBe(true);

    const first = nameEvent({ type: 'username', name: 'first_old_name' });
    const second = nameEvent({
      type: 'displayname',
      name: 'Second Old Name',
      changedAt: '2024-12-31T23:59:59.000Z',
    });
    expect((await fx.publish(first)).body).toEqual({ success: true });
    await waitForFeedCount(p, 1);
    expect((await fx.publish(second)).body).toEqual({ success: true });
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
    const p = await browser.openPage(fx.url);
    await waitForState(p, 'live');
    const userId = `<script>alert(2)</script>${uniqueUserId('hostile')}`;
    const names = [HOSTILE, '</li><li>injected', `"quoted" & 'single' &amp;`, '  two\nlines  '];
    for (const [i, name] of names.entries()) {
      const res = await fx.publish({
        userId,
        type: 'displayname',
        name,
        changedAt: `2024-01-0${i + 1}T00:00:00.000Z`,
      });
      expect(res.status).toBe(200);
    }
    // Sent last, a sentinel's row shows every row before it is in.
    const sentinel = nameEvent({ name: 'sentinel' });
    expect((await fx.publish(sentinel)).status).toBe(200);
    await waitForFeedName(p, sentinel.name);

    const rows = await feedRows(p);
    expect(rows.map((row) => row.name)).toEqual([sentinel.name, ...[...names].reverse()]);
    expect(rows.map((row) => row.userId)).toEqual([sentinel.userId, ...names.map(() => userId)]);
    expect(await p.locator('#feed > li').count()).toBe(names.length + 1);

    await p.locator('#feed > li').nth(1).locator('.event-user-id').click();
    await p.locator('#history-result table').waitFor();
    expect((await historyRows(p)).map((row) => row.cells[2])).toEqual(names);
    expect(await p.locator('#history-result caption').textContent()).toBe(
      `Previous names of user ${userId} (4 names), oldest first`,
    );

    expect(await p.locator('img, script:not([src])').count()).toBe(0);
    expect(await p.getByText(HOSTILE, { exact: true }).count()).toBe(2);
  });

  it('filters the live feed to one user with ?userId=, and back to everyone', async () => {
    const mine = uniqueUserId('mine');
    const p = await browser.openPage(`${fx.url}/?userId=${encodeURIComponent(mine)}`);
    await waitForState(p, 'live');
    expect(await p.getByRole('textbox', { name: 'Only this user id' }).inputValue()).toBe(mine);
    expect(await p.locator('#feed-scope').textContent()).toBe(
      `Showing only user ${mine}, newest first.`,
    );

    const other = nameEvent({ name: 'not-mine' });
    expect((await fx.publish(other)).status).toBe(200);
    expect((await fx.publish(nameEvent({ userId: mine, name: 'mine-1' }))).status).toBe(200);
    // Events reach a listener in id order: "not-mine" would have arrived before "mine-1".
    await waitForFeedName(p, 'mine-1');
    expect((await feedRows(p)).map((row) => row.name)).toEqual(['mine-1']);

    await p.getByRole('button', { name: 'Show everyone' }).click();
    await waitForState(p, 'live');
    expect(new URL(p.url()).search).toBe('');
    expect(await p.locator('#feed > li').count()).toBe(0);
    expect((await fx.publish(nameEvent({ name: 'anyone' }))).status).toBe(200);
    await waitForFeedCount(p, 1);
    expect((await feedRows(p)).map((row) => row.name)).toEqual(['anyone']);

    const typed = uniqueUserId('typed');
    await p.getByRole('textbox', { name: 'Only this user id' }).fill(typed);
    await p.getByRole('textbox', { name: 'Only this user id' }).press('Enter');
    await waitForState(p, 'live');
    expect(new URL(p.url()).searchParams.get('userId')).toBe(typed);
    expect(await p.locator('#feed > li').count()).toBe(0);
    expect((await fx.publish(nameEvent({ name: 'not-typed' }))).status).toBe(200);
    expect((await fx.publish(nameEvent({ userId: typed, name: 'typed-1' }))).status).toBe(200);
    await waitForFeedName(p, 'typed-1');
    expect((await feedRows(p)).map((row) => row.name)).toEqual(['typed-1']);
  });

  it('comes back after a restart under the open page, with the missed event exactly once', async () => {
    const p = await browser.openPage(fx.url);
    await waitForState(p, 'live');
    const userId = uniqueUserId('restart');
    const before = nameEvent({ userId, name: 'before-restart' });
    expect((await fx.publish(before)).status).toBe(200);
    await waitForFeedCount(p, 1);

    await fx.stop();
    // From the recorded states: the browser may already be past it (a reconnect that reached
    // the closing app is handed over with a short retry, and the page tries again on its own).
    await until(p, `window.__states.includes('reconnecting: Reconnecting…')`, 5_000);

    // While it is down, another instance stores an event; nobody listens there.
    const other = await fx.startInstance();
    try {
      const missed = await post(`${other.url}${PUBLISH}`, nameEvent({ userId, name: 'missed' }));
      expect(missed.body).toEqual(NO_LISTENERS);
    } finally {
      await other.close();
    }

    await fx.start();
    await waitForState(p, 'live');
    await waitForFeedCount(p, 2);
    // A repeat of an event the page shows is broadcast with its original id: dropped. The
    // event after it shows that it arrived.
    expect((await fx.publish(before)).status).toBe(200);
    expect((await fx.publish(nameEvent({ userId, name: 'after-restart' }))).status).toBe(200);
    await waitForFeedName(p, 'after-restart');

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
});
