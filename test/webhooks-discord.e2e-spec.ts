import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { useApp } from './support/app.js';
import { nameEvent } from './support/events.js';
import { metric } from './support/metrics.js';
import { waitFor } from './support/ports.js';
import { WebhookReceiver } from './support/webhook-receiver.js';
import {
  createEndpoint,
  deliveries,
  endpointsOf,
  statusOf,
  store,
  WEBHOOK_ENV,
} from './support/webhooks.js';

interface DiscordBody {
  content: string;
  allowed_mentions: { parse: string[] };
}

describe('discord webhooks', () => {
  const fx = useApp({ env: WEBHOOK_ENV });
  let receiver: WebhookReceiver;

  beforeAll(async () => {
    receiver = await WebhookReceiver.start();
  });
  afterAll(() => receiver.close());

  it('posts a message naming the user, the kind and the escaped previous name, mentioning nobody', async () => {
    const { id, secret } = await createEndpoint(fx.url, { url: receiver.url, format: 'discord' });
    expect(secret).toBeNull();
    const username = nameEvent({ name: 'a\\b*c_d~e`f|g>h @everyone <@1>' });
    const display = nameEvent({ type: 'displayname', name: '**bold** __x__' });
    await store(fx.url, username);
    await store(fx.url, display);
    await waitFor('both messages', () => receiver.received.length >= 2);

    const [first, second] = receiver.received;
    expect(first.headers['content-type']).toBe('application/json');
    expect(first.headers['webhook-signature']).toBeUndefined();
    const body = first.json as DiscordBody;
    expect(Object.keys(body).sort()).toEqual(['allowed_mentions', 'content']);
    expect(body.allowed_mentions).toEqual({ parse: [] });
    // The user id is escaped too: `-` is ASCII punctuation.
    const escaped = (userId: string) => userId.replaceAll('-', '\\-');
    expect(body.content).toBe(
      `User ${escaped(username.userId)} changed their username. Previous username: ` +
        'a\\\\b\\*c\\_d\\~e\\`f\\|g\\>h \\@everyone \\<\\@1\\>',
    );
    expect((second.json as DiscordBody).content).toBe(
      `User ${escaped(display.userId)} changed their display name. Previous display name: ` +
        '\\*\\*bold\\*\\* \\_\\_x\\_\\_',
    );
    await waitFor('delivered', async () => (await statusOf(fx.url, id)).pending === 0);
    expect((await endpointsOf(fx.url).delete(id)).status).toBe(200);
  });

  it('makes every markdown construct literal text, across line breaks, in the name and the user id', async () => {
    receiver.received.length = 0;
    receiver.answer = () => ({ status: 204 });
    // Each name, and what Discord is sent: a backslash before every ASCII punctuation character.
    const constructs: [string, string][] = [
      ['[click me](https://phish.example)', '\\[click me\\]\\(https\\:\\/\\/phish\\.example\\)'],
      ['see https://phish.example/a?b=1', 'see https\\:\\/\\/phish\\.example\\/a\\?b\\=1'],
      ['x\n# Official notice\n## Two', 'x\n\\# Official notice\n\\#\\# Two'],
      ['-# small print', '\\-\\# small print'],
      ['- item\n* other\n1. first', '\\- item\n\\* other\n1\\. first'],
      ['> quoted\n>>> block', '\\> quoted\n\\>\\>\\> block'],
      ['`code` ```js\nx```', '\\`code\\` \\`\\`\\`js\nx\\`\\`\\`'],
      ['||spoiler||', '\\|\\|spoiler\\|\\|'],
      ['**b** __u__ ~~s~~ *i*', '\\*\\*b\\*\\* \\_\\_u\\_\\_ \\~\\~s\\~\\~ \\*i\\*'],
      [
        '<@123> <@!4> <@&5> <#6> @everyone @here',
        '\\<\\@123\\> \\<\\@\\!4\\> \\<\\@\\&5\\> \\<\\#6\\> \\@everyone \\@here',
      ],
      ['<:pepe:123> <a:dance:456>', '\\<\\:pepe\\:123\\> \\<a\\:dance\\:456\\>'],
      ['<t:1700000000:R>', '\\<t\\:1700000000\\:R\\>'],
      ['é 名前 🎉 plain', 'é 名前 🎉 plain'],
    ];
    const userId = '[u](https://x.example) <@1>';
    const escapedUserId = '\\[u\\]\\(https\\:\\/\\/x\\.example\\) \\<\\@1\\>';
    const { id } = await createEndpoint(fx.url, { url: receiver.url, format: 'discord' });
    for (const [name] of constructs) await store(fx.url, nameEvent({ userId, name }));
    await waitFor('every message', () => receiver.received.length >= constructs.length);
    expect(receiver.received.map((request) => (request.json as DiscordBody).content)).toEqual(
      constructs.map(
        ([, escaped]) =>
          `User ${escapedUserId} changed their username. Previous username: ${escaped}`,
      ),
    );
    await waitFor('delivered', async () => (await statusOf(fx.url, id)).pending === 0);
    expect((await endpointsOf(fx.url).delete(id)).status).toBe(200);
  });

  it("waits for a 429's retry_after (the body's, not the header's), then sends the same message", async () => {
    receiver.received.length = 0;
    receiver.answer = (_request, index) =>
      index === 0
        ? {
            status: 429,
            headers: { 'content-type': 'application/json', 'retry-after': '3600' },
            body: JSON.stringify({
              message: 'You are being rate limited.',
              retry_after: 0.25,
              global: false,
            }),
          }
        : { status: 204 };
    const { id } = await createEndpoint(fx.url, { url: receiver.url, format: 'discord' });
    const event = nameEvent();
    await store(fx.url, event);
    // The header's hour would time this out: the body's quarter second is what counts.
    await waitFor('the retry', () => receiver.received.length >= 2);
    expect(receiver.received[1].body).toBe(receiver.received[0].body);
    expect((receiver.received[0].json as DiscordBody).content).toContain(
      event.userId.replaceAll('-', '\\-'),
    );
    expect(await metric(fx.url, deliveries(id, 'rejected'))).toBe(1);
    await waitFor('delivered', async () => (await statusOf(fx.url, id)).pending === 0);
    expect((await statusOf(fx.url, id)).failingSince).toBeNull();
  });

  it("waits for a 429's Retry-After header when its body gives no retry_after", async () => {
    // Its own path: the endpoints of the tests before get the event too.
    const url = new URL('/header-only', receiver.url).href;
    const ours: { body: string; at: number }[] = [];
    receiver.answer = ({ path, body }) => {
      if (path !== '/header-only') return { status: 204 };
      ours.push({ body, at: Date.now() });
      return ours.length === 1 ? { status: 429, headers: { 'retry-after': '2' } } : { status: 204 };
    };
    const { id } = await createEndpoint(fx.url, { url, format: 'discord' });
    await store(fx.url, nameEvent());
    await waitFor('the retry', () => ours.length >= 2, { timeoutMs: 10_000 });
    expect(ours[1].at - ours[0].at).toBeGreaterThanOrEqual(1_950);
    expect(ours[1].body).toBe(ours[0].body);
    await waitFor('delivered', async () => (await statusOf(fx.url, id)).pending === 0);
    expect((await endpointsOf(fx.url).delete(id)).status).toBe(200);
  });
});
