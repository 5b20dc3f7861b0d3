import { PUBLISH } from './api.js';
import { nameEvent, streamed, uniqueUserId, type NameEventBody } from './events.js';
import { post } from './http.js';
import { frame, type SseStream } from './sse.js';

/** An event sent last, to close a stream of checks. */
export interface Sentinel {
  /** The id it was stored under. */
  id: string;
  /** Its data, as the streams carry it. */
  data: NameEventBody;
  /** Its bytes on a stream: where the stream's exact expected bytes end. */
  frame: string;
}

/**
 * Proves that nothing else arrived, without a sleep: publishes one more event through
 * `appUrl` that every stream in `streams` is to receive (to their user, when they are
 * filtered to one), and resolves once each has it. A listener gets events in id order, so
 * by then each stream holds everything published before the sentinel: asserting its exact
 * events (the sentinel last) shows that nothing more, and nothing twice, came.
 *
 * `body` is the sentinel to send (an event of the test's own, say); by default a new event
 * of the streams' user, or of a new user when none is filtered.
 */
export async function sendSentinel(
  appUrl: string,
  streams: readonly SseStream[],
  body?: NameEventBody,
): Promise<Sentinel> {
  if (streams.length === 0) throw new Error('A sentinel needs a stream to arrive on');
  const users = new Set(streams.flatMap((s) => (s.userFilter === undefined ? [] : [s.userFilter])));
  if (users.size > 1) {
    throw new Error(`One sentinel cannot reach streams of several users: ${[...users].join(', ')}`);
  }
  const [user] = users;
  const sentinel = body ?? sentinelOf(user ?? uniqueUserId('sentinel'));
  if (user !== undefined && sentinel.userId !== user) {
    throw new Error(`A sentinel of ${sentinel.userId} never reaches a stream of ${user}`);
  }
  const res = await post(`${appUrl}${PUBLISH}`, sentinel);
  if (res.status !== 200) throw new Error(`The sentinel was refused: ${res.status} ${res.text}`);
  return sentinelArrived(streams, sentinel);
}

/**
 * The second half of `sendSentinel`, for a sentinel the test published itself (retrying it
 * while a dependency comes back, say): resolves once every stream in `streams` has it.
 */
export async function sentinelArrived(
  streams: readonly SseStream[],
  body: NameEventBody,
): Promise<Sentinel> {
  if (streams.length === 0) throw new Error('A sentinel needs a stream to arrive on');
  const data = streamed(body);
  const json = JSON.stringify(data);
  const ids = new Set<string>();
  for (const stream of streams) {
    await stream.until((s) => s.messages.some((m) => m.data === json));
    ids.add(stream.messages.find((m) => m.data === json)!.id!);
  }
  if (ids.size !== 1) throw new Error(`The sentinel arrived with several ids: ${[...ids].join()}`);
  const [id] = ids;
  return { id, data, frame: frame(id, data) };
}

function sentinelOf(userId: string): NameEventBody {
  const event = nameEvent({ userId });
  return { ...event, name: `sentinel ${event.name}` };
}
