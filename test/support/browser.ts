import { mkdir } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type BrowserContextOptions, type Page } from 'playwright-core';
import { waitFor } from './ports.js';

/**
 * The live page (src/public) in a real browser: Debian's Chromium driven by playwright-core.
 * Each test leaves a screenshot in test/artifacts/.
 */

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
/** A host name the browser resolves to 127.0.0.1 (see CHROMIUM_ARGS). */
export const DOCS_HOST = 'name-history.test';
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
export const ARTIFACTS = fileURLToPath(new URL('../artifacts/', import.meta.url));

/**
 * Records every state the connection indicator shows ("state: text"), from before the page's
 * own script runs, so a test can check the sequence and not only the state it happens to see.
 */
const RECORD_STATES = `
  window.__states = [];
  new MutationObserver(() => {
    const indicator = document.getElementById('connection');
    // Not yet whole: the parser has given the element but not its text (seen under load).
    if (!indicator || indicator.textContent.trim() === '') return;
    const entry = indicator.dataset.state + ': ' + indicator.textContent.trim();
    if (window.__states.at(-1) !== entry) window.__states.push(entry);
  }).observe(document, { subtree: true, childList: true, characterData: true, attributes: true });
`;

export interface FeedRow {
  id: string | null;
  type: string | null;
  name: string | null;
  userId: string | null;
  time: string | null;
  datetime: string | null;
}

export interface HistoryRow {
  cells: string[];
  datetime: string | null;
}

/**
 * One browser for the file, launched before its tests and closed after them (call at the
 * top of the file). After each test, the page it opened is screenshotted and closed, and
 * the test fails if the page threw, opened a dialog (an alert() would mean injected script
 * ran) or broke its Content Security Policy.
 */
export function useBrowser(): {
  openPage(url: string, options?: BrowserContextOptions): Promise<Page>;
} {
  let browser: Browser;
  let page: Page | undefined;
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
    const seen = problems;
    problems = [];
    expect(seen).toEqual([]);
  });

  return {
    async openPage(url, options = {}) {
      const context = await browser.newContext({
        locale: 'en-GB',
        timezoneId: 'Asia/Tokyo',
        viewport: { width: 1280, height: 800 },
        ...options,
      });
      await context.addInitScript(RECORD_STATES);
      const opened = await context.newPage();
      page = opened;
      opened.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
      opened.on('dialog', (dialog) => {
        problems.push(`dialog: ${dialog.type()} ${dialog.message()}`);
        void dialog.dismiss();
      });
      opened.on('console', (message) => {
        if (/Content Security Policy/i.test(message.text())) {
          problems.push(`CSP: ${message.text()}`);
        }
      });
      const response = await opened.goto(url);
      expect(response?.status()).toBe(200);
      return opened;
    },
  };
}

export function waitForState(p: Page, state: string, timeout = 10_000): Promise<void> {
  return p.locator(`#connection[data-state="${state}"]`).waitFor({ state: 'attached', timeout });
}

/** Every state the connection indicator has shown, in order. */
export function states(p: Page): Promise<string[]> {
  return p.evaluate<string[]>('window.__states');
}

export async function feedRows(p: Page): Promise<FeedRow[]> {
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

export async function waitForFeedCount(p: Page, count: number, timeout = 10_000): Promise<void> {
  await p
    .locator('#feed > li')
    .nth(count - 1)
    .waitFor({ state: 'attached', timeout });
}

/**
 * Waits for the feed row of the event named `name`. Sent last, it is a sentinel: events
 * reach the page in id order, so every row of an event sent before it is there too.
 */
export async function waitForFeedName(p: Page, name: string, timeout = 10_000): Promise<void> {
  await p
    .locator('#feed > li')
    .filter({ has: p.locator('.event-name .name').getByText(name, { exact: true }) })
    .waitFor({ state: 'attached', timeout });
}

/**
 * Polls an expression in the page until it is true. Not page.waitForFunction: its polling
 * evaluates strings inside the page, which the page's CSP (rightly) refuses.
 */
export async function until(p: Page, expression: string, timeoutMs = 10_000): Promise<void> {
  await waitFor(expression, () => p.evaluate<boolean>(expression), { timeoutMs, intervalMs: 25 });
}

export async function historyRows(p: Page): Promise<HistoryRow[]> {
  const rows = await p.locator('#history-result table tbody tr').all();
  return Promise.all(
    rows.map(async (row) => ({
      cells: await row.locator('td').allTextContents(),
      datetime: await row.locator('time').getAttribute('datetime'),
    })),
  );
}

export async function lookUp(p: Page, userId: string): Promise<void> {
  await p.getByLabel('User id', { exact: true }).fill(userId);
  await p.getByRole('button', { name: 'Look up', exact: true }).click();
  await p.locator('#history-result:not([aria-busy])').waitFor({ state: 'attached' });
}
