import { createHmac, createSecretKey, randomBytes, type KeyObject } from 'node:crypto';
import type { StoredNameEvent } from '../name-events/index.js';
import type { WebhookFormat } from './webhook-endpoint.entity.js';

/** What one attempt sends: a JSON body and its headers. */
export interface WebhookRequest {
  body: string;
  headers: Record<string, string>;
}

const SECRET_PREFIX = 'whsec_';

/** A Standard Webhooks signing secret: `whsec_` and the base64 of 32 random bytes. */
export function newSecret(): string {
  return SECRET_PREFIX + randomBytes(32).toString('base64');
}

/**
 * The Standard Webhooks signature: `v1,` and the base64 HMAC-SHA256 of
 * `<id>.<timestamp>.<body>`, keyed by the base64 decoding of the secret after `whsec_`.
 * Written with node:crypto: it is one HMAC, and the reference library (`standardwebhooks`)
 * would add two dependencies for it.
 */
export function sign(secret: string, id: string, timestamp: number, body: string): string {
  const key = keyOf(secret);
  const mac = createHmac('sha256', key).update(`${id}.${timestamp}.${body}`).digest('base64');
  return `v1,${mac}`;
}

/** Each secret's key, made once: a key object per HMAC was a visible share of a delivery's CPU. */
const keys = new Map<string, KeyObject>();
const MAX_KEYS = 1_000;

function keyOf(secret: string): KeyObject {
  let key = keys.get(secret);
  if (!key) {
    if (keys.size >= MAX_KEYS) keys.clear();
    key = createSecretKey(Buffer.from(secret.slice(SECRET_PREFIX.length), 'base64'));
    keys.set(secret, key);
  }
  return key;
}

/** The event as a `standard` endpoint gets it, signed, for an attempt at `now`. */
export function standardRequest(event: StoredNameEvent, secret: string, now: Date): WebhookRequest {
  const { id, userId, type, name, changedAt } = event;
  const body = JSON.stringify({
    type: 'name.changed',
    timestamp: now.toISOString(),
    data: { id, userId, type, name, changedAt },
  });
  const timestamp = Math.floor(now.getTime() / 1000);
  return {
    body,
    headers: {
      'webhook-id': id,
      'webhook-timestamp': String(timestamp),
      'webhook-signature': sign(secret, id, timestamp, body),
    },
  };
}

/**
 * Discord shows `\X` as X for any ASCII punctuation X: a backslash before each of them makes a
 * name (or user id) literal text, whatever it holds: no link, heading, subtext, list, quote,
 * code, spoiler, mention, emoji or timestamp, on any of its lines.
 */
export function escapeMarkdown(text: string): string {
  return text.replace(/[!-/:-@[-`{-~]/g, '\\$&');
}

/**
 * The event as a Discord channel webhook's message: who, which kind of name, the previous
 * name, both escaped, and no mention allowed (a name like `@everyone` pings nobody).
 */
export function discordRequest(event: StoredNameEvent): WebhookRequest {
  const kind = event.type === 'username' ? 'username' : 'display name';
  const content = `User ${escapeMarkdown(event.userId)} changed their ${kind}. Previous ${kind}: ${escapeMarkdown(event.name)}`;
  return {
    body: JSON.stringify({ content, allowed_mentions: { parse: [] } }),
    headers: {},
  };
}

/** The request of one attempt to deliver `event` to an endpoint of `format`. */
export function webhookRequest(
  format: WebhookFormat,
  event: StoredNameEvent,
  secret: string | null,
  now: Date,
): WebhookRequest {
  return format === 'discord' || secret === null
    ? discordRequest(event)
    : standardRequest(event, secret, now);
}
