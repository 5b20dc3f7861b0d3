import { EventStreamService } from '../../src/events/event-stream.service.js';
import { historyPath, LISTEN, PUBLISH, type HistoryBody } from './api.js';
import type { TestApp } from './app.js';
import type { NameEventBody } from './events.js';
import { http, post, type HttpResult } from './http.js';
import { waitFor } from './ports.js';
import { rawCommand } from './redis-protocol.js';
import { sendSentinel, type Sentinel } from './sentinel.js';
import { streamsClosedAfterEach, type SseStream } from './sse.js';

/** The ways tests talk to an application of `useApp` and its other instances. */
export interface AppClient {
  /** Opens a stream on the app, closed after the test. */
  listen(query?: string, headers?: Record<string, string>): Promise<SseStream>;
  /**
   * Opens a stream once the app can: a listen is answered 500 while Redis (or, resuming,
   * the database) is down, and that answer is closed and the listen tried again.
   */
  listenWhenUp(query?: string, headers?: Record<string, string>): Promise<SseStream>;
  /** Opens a stream on another instance (`startInstance`), closed after the test. */
  listenTo(
    instance: { url: string },
    query?: string,
    headers?: Record<string, string>,
  ): Promise<SseStream>;
  /** POSTs an event (or anything) to the publish route. */
  publish(body: unknown, headers?: Record<string, string>): Promise<HttpResult>;
  /** GETs a user's history. */
  history(userId: string, query?: string): Promise<HttpResult<HistoryBody>>;
  /** See `sendSentinel`: publishes through this app. */
  sentinel(streams: readonly SseStream[], body?: NameEventBody): Promise<Sentinel>;
  /** Listeners on the app (or on `instance`), counting those being set up. */
  listenerCount(instance?: TestApp): number;
  /**
   * Waits until no stream is open or being set up on the app and its other instances, and
   * (with Redis) until none of them is subscribed: then a publish finds nobody listening.
   */
  untilNobodyListens(): Promise<void>;
}

/**
 * The client of the app `running()` gives and of its `others` instances, which run with
 * `env()`. Call in a describe block's body: streams opened through it are closed after each
 * of its tests.
 */
export function appClient(
  running: () => TestApp,
  others: ReadonlySet<TestApp>,
  env: () => Record<string, string | undefined>,
): AppClient {
  const open = streamsClosedAfterEach();
  const count = (instance: TestApp) => instance.app.get(EventStreamService).listenerCount;
  return {
    listen: (query = '', headers = {}) => open(`${running().url}${LISTEN}${query}`, headers),
    listenWhenUp: (query = '', headers = {}) =>
      waitFor('a listen to succeed', async () => {
        const stream = await open(`${running().url}${LISTEN}${query}`, headers);
        if (stream.status === 200) return stream;
        stream.close();
        return undefined;
      }),
    listenTo: (instance, query = '', headers = {}) =>
      open(`${instance.url}${LISTEN}${query}`, headers),
    publish: (body, headers = {}) => post(`${running().url}${PUBLISH}`, body, headers),
    history: (userId, query = '') =>
      http<HistoryBody>(`${running().url}${historyPath(userId, query)}`),
    sentinel: (streams, body) => sendSentinel(running().url, streams, body),
    listenerCount: (instance = running()) => count(instance),
    untilNobodyListens: async () => {
      const instances = [running(), ...others];
      await waitFor('no listener left', () => instances.every((i) => count(i) === 0));
      const redisUrl = env().REDIS_URL;
      const prefix = env().REDIS_KEY_PREFIX;
      if (redisUrl && prefix) {
        await waitFor('no instance subscribed', async () => {
          const { hostname, port: redisPort } = new URL(redisUrl);
          const reply = await rawCommand(
            Number(redisPort || 6379),
            ['PUBSUB', 'NUMSUB', `${prefix}:name-events`],
            hostname,
          );
          return reply.endsWith('\r\n:0');
        });
      }
    },
  };
}
