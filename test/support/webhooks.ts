import { createHmac } from 'node:crypto';
import { NO_LISTENERS, PUBLISH, PUBLISHED } from './api.js';
import type { NameEventBody } from './events.js';
import { http, type HttpResult } from './http.js';
import { ADMIN_AUTH, ADMIN_TOKEN } from './privacy.js';

/** The webhook-endpoint routes, as the tests call them (with the admin token unless told). */

export const ENDPOINTS = '/api/webhook-endpoints';

export interface EndpointBody {
  id: string;
  url: string;
  format: 'standard' | 'discord';
  userId: string | null;
  type: 'username' | 'displayname' | null;
  description: string | null;
  createdAt: string;
}
export interface CreatedBody extends EndpointBody {
  secret: string | null;
  code: 201;
}
export interface StatusBody extends EndpointBody {
  lastDeliveredEventId: string | null;
  pending: number;
  failingSince: string | null;
  code?: 200;
}

export function endpointsOf(baseUrl: string, headers: Record<string, string> = ADMIN_AUTH) {
  return {
    create: (body: unknown, extra: Record<string, string> = headers) =>
      http<CreatedBody>(`${baseUrl}${ENDPOINTS}`, { method: 'POST', json: body, headers: extra }),
    list: (extra: Record<string, string> = headers) =>
      http<{ endpoints: StatusBody[]; code: 200 }>(`${baseUrl}${ENDPOINTS}`, { headers: extra }),
    get: (id: string, extra: Record<string, string> = headers) =>
      http<StatusBody>(`${baseUrl}${ENDPOINTS}/${id}`, { headers: extra }),
    delete: (id: string, extra: Record<string, string> = headers) =>
      http(`${baseUrl}${ENDPOINTS}/${id}`, { method: 'DELETE', headers: extra }),
  };
}

/** Registers an endpoint, expecting the 201. */
export async function createEndpoint(baseUrl: string, body: object): Promise<CreatedBody> {
  const res = await endpointsOf(baseUrl).create(body);
  if (res.status !== 201) throw new Error(`POST ${ENDPOINTS}: ${res.status} ${res.text}`);
  return res.body;
}

/**
 * Stores an event through POST: answered 200 when someone listens, else the no-listener 500
 * (stored all the same, which is all a webhook needs).
 */
export async function store(baseUrl: string, body: NameEventBody): Promise<void> {
  const res = await http(`${baseUrl}${PUBLISH}`, { method: 'POST', json: body });
  expect([JSON.stringify(PUBLISHED), JSON.stringify(NO_LISTENERS)]).toContain(
    JSON.stringify(res.body),
  );
}

export async function storeAll(baseUrl: string, bodies: NameEventBody[]): Promise<void> {
  for (const body of bodies) await store(baseUrl, body);
}

/** GET of one endpoint, expecting it there. */
export async function statusOf(baseUrl: string, id: string): Promise<StatusBody> {
  const res = await endpointsOf(baseUrl).get(id);
  if (res.status !== 200) throw new Error(`GET ${ENDPOINTS}/${id}: ${res.status} ${res.text}`);
  return res.body;
}

/**
 * The Standard Webhooks check, written from the specification apart from the service's own:
 * the signed content is `<webhook-id>.<webhook-timestamp>.<body>`, the key the base64 after
 * `whsec_`, and the header a space-separated list of `v1,<base64>`.
 */
export function signatureValid(secret: string, headers: Record<string, string>, body: string) {
  const key = Buffer.from(secret.split('_')[1], 'base64');
  const signed = [headers['webhook-id'], headers['webhook-timestamp'], body].join('.');
  const expected = createHmac('sha256', key).update(signed, 'utf8').digest('base64');
  return headers['webhook-signature']
    .split(' ')
    .some((entry) => entry.startsWith('v1,') && entry.slice(3) === expected);
}

export type { HttpResult };

/** The webhook apps' environment: the admin token, loopback receivers, quick polls. */
export const WEBHOOK_ENV = {
  ADMIN_TOKEN,
  WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
  WEBHOOK_POLL_MS: '100',
  CONSUMER_POLL_MS: '100',
};

/** The four fields of an event, as a body or a delivery's `data` carries them. */
export function fieldsOf({ userId, type, name, changedAt }: NameEventBody) {
  return { userId, type, name, changedAt };
}

/** A delivery counter of one endpoint on an instance's metrics. */
export function deliveries(id: string, outcome: string): string {
  return `name_history_webhook_deliveries_total{endpoint="${id}",outcome="${outcome}"}`;
}

export function pendingSeries(id: string): string {
  return `name_history_webhook_pending_events{endpoint="${id}"}`;
}
