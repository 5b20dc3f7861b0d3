import createClient from 'openapi-fetch';
import { readFileSync } from 'node:fs';
import {
  NameChangeStream,
  NameChangeStreamRefused,
  type ReceivedNameChange,
} from '../clients/typescript/name-change-stream.js';
import type { components, paths } from '../clients/typescript/openapi.js';
import { useApp } from './support/app.js';
import { http } from './support/http.js';
import { assertMatchesSchema } from './support/openapi-contract.js';
import { SseStream } from './support/sse.js';

type NameChangeEvent = components['schemas']['NameChangeEventDto'];
type ErrorResponse = components['schemas']['ErrorResponseDto'];
/** What the generated client says one message of the stream is: not a string. */
type ListenMessage =
  paths['/api/webhooks/prevnames/listen']['get']['responses'][200]['content']['text/event-stream'];
type StreamedEvent = components['schemas']['NameChangeEvent'];
// Compile-time: the stream's type is the named message schema, whose data is the event type.
const messageIsNamed: ListenMessage extends components['schemas']['NameChangeEventMessage']
  ? true
  : false = true;
const dataIsTheEvent: NonNullable<ListenMessage['data']> extends StreamedEvent ? true : false =
  true;

/** The client users generate from the committed document (see docs/clients.md), against the real app. */
describe('a client generated from the OpenAPI document', () => {
  const fx = useApp();
  let client: ReturnType<typeof createClient<paths>>;

  beforeAll(() => {
    client = createClient<paths>({ baseUrl: fx.url });
  });

  it('publishes a typed event and reads it back from the history', async () => {
    const stream = await fx.listen();
    const event: NameChangeEvent = {
      userId: 'client-1',
      type: 'displayname',
      name: 'Typed 🦊',
      changedAt: '2024-06-07T15:30:00.000Z',
    };
    const published = await client.POST('/api/webhooks/prevnames', { body: event });
    expect(published.response.status).toBe(200);
    expect(published.data).toEqual({ success: true });
    await stream.untilEvents(1);

    const { data, error, response } = await client.GET('/api/users/{userId}/prevnames', {
      params: { path: { userId: 'client-1' }, query: { limit: 10 } },
    });
    expect(response.status).toBe(200);
    expect(error).toBeUndefined();
    expect(data).toEqual({
      userId: 'client-1',
      prevnames: [{ type: 'displayname', name: 'Typed 🦊', changedAt: '2024-06-07T15:30:00.000Z' }],
      code: 200,
    });
  });

  it('reads the stream with the typed helper beside the client: each event as the document names it', async () => {
    const userId = 'client-stream';
    const stream = await NameChangeStream.open(fx.url, { userId });
    try {
      const sent: StreamedEvent = {
        userId,
        type: 'username',
        name: 'streamed "typed" ✓',
        changedAt: '2024-06-07T15:30:00.000Z',
      };
      const published = await client.POST('/api/webhooks/prevnames', {
        body: { ...sent, changedAt: '2024-06-07T17:30:00+02:00' },
      });
      expect(published.response.status).toBe(200);
      const first = await stream.next();
      if (first.done) throw new Error('the stream ended before its first event');
      const received: ReceivedNameChange = first.value;
      expect(received.id).toMatch(/^\d+$/);
      expect(received.event).toEqual(sent);
      expect(stream.lastEventId).toBe(received.id);
      assertMatchesSchema('NameChangeEvent', received.event);

      // Resuming from the id before it replays it, as a reconnecting EventSource would.
      const before = String(BigInt(received.id) - 1n);
      const resumed = await NameChangeStream.open(fx.url, { userId, lastEventId: before });
      for await (const replayed of resumed) {
        expect(replayed).toEqual(received);
        break;
      }
    } finally {
      stream.close();
    }
  });

  it('is refused with the typed error body', async () => {
    const refused = NameChangeStream.open(fx.url, { userId: 'x'.repeat(65) });
    const body: ErrorResponse = {
      message: 'userId must be between 1 and 64 characters long',
      code: 400,
    };
    await expect(refused).rejects.toBeInstanceOf(NameChangeStreamRefused);
    await expect(refused).rejects.toMatchObject({ message: body.message, status: 400, body });
  });

  it('describes each message of the stream as NameChangeEventMessage, whose data is the event', async () => {
    expect([messageIsNamed, dataIsTheEvent]).toEqual([true, true]);
    const stream = await SseStream.open(
      `${fx.url}/api/webhooks/prevnames/listen?userId=client-messages`,
    );
    const sent: StreamedEvent = {
      userId: 'client-messages',
      type: 'displayname',
      name: 'framed',
      changedAt: '2024-06-07T15:30:00.000Z',
    };
    const published = await client.POST('/api/webhooks/prevnames', { body: sent });
    expect(published.response.status).toBe(200);
    await stream.untilEvents(1);
    stream.close();
    // Each message as an SSE parser hands it over, typed with the generated client's types.
    const [opening, event]: ListenMessage[] = stream.messages
      .filter((m) => m.id !== undefined)
      .map((m) => ({
        id: m.id!,
        ...(m.data === undefined ? {} : { data: JSON.parse(m.data) as StreamedEvent }),
        ...(m.retry === undefined ? {} : { retry: Number(m.retry) }),
      }));
    expect(opening).toEqual({ id: expect.stringMatching(/^\d+$/) as unknown, retry: 3000 });
    expect(event).toEqual({ id: expect.stringMatching(/^\d+$/) as unknown, data: sent });
    // The document's schemas accept exactly what was sent.
    for (const message of [opening, event]) assertMatchesSchema('NameChangeEventMessage', message);
  });

  it('gets typed errors', async () => {
    const { data, error, response } = await client.GET('/api/users/{userId}/prevnames', {
      params: { path: { userId: 'x'.repeat(65) } },
    });
    expect(response.status).toBe(400);
    expect(data).toBeUndefined();
    const expected: ErrorResponse = {
      message: 'userId must be between 1 and 64 characters long',
      code: 400,
    };
    expect(error).toEqual(expected);

    await fx.untilNobodyListens();
    const nobody = await client.POST('/api/webhooks/prevnames', {
      body: {
        userId: 'client-2',
        type: 'username',
        name: 'alone',
        changedAt: '2024-06-07T15:30:00Z',
      },
    });
    expect(nobody.response.status).toBe(500);
    expect(nobody.error).toEqual({
      message: 'Failed to deliver event: no active listeners',
      code: 500,
    });
  });

  it('serves the committed document at /api/docs-json and Swagger UI at /api/docs', async () => {
    const committed = JSON.parse(readFileSync('openapi/openapi.json', 'utf8')) as unknown;
    const served = await http(`${fx.url}/api/docs-json`);
    expect(served.status).toBe(200);
    expect(served.body).toEqual(committed);
    const ui = await http(`${fx.url}/api/docs`);
    expect(ui.status).toBe(200);
    expect(ui.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(ui.text).toContain('swagger-ui');
  });
});
