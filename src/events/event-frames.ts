import type { StoredNameEvent } from '../name-events/index.js';
import type { Frame } from './listener-buffer.js';

/** The keep-alive comment, `: keep-alive\n\n`: one frozen message for every listener. */
export const KEEP_ALIVE: Frame = { message: Object.freeze({ comment: 'keep-alive' }), bytes: 14 };

/** Each stored event's frame, held as long as the event object is. */
const frames = new WeakMap<StoredNameEvent, Frame>();

/**
 * The event's message, made once however many listeners get it: every listener is handed the
 * same frozen object.
 */
export function frameOf(event: StoredNameEvent): Frame {
  let frame = frames.get(event);
  if (!frame) {
    const data = JSON.stringify({
      userId: event.userId,
      type: event.type,
      name: event.name,
      changedAt: event.changedAt,
    });
    frame = {
      message: Object.freeze({ id: event.id, data }),
      // `id: <id>\ndata: <data>\n\n`
      bytes: event.id.length + Buffer.byteLength(data) + 12,
    };
    frames.set(event, frame);
  }
  return frame;
}
