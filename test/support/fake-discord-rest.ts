import type http from 'node:http';
import { TEST_DISCORD_TOKEN } from './fake-discord-world.js';

export interface RestRequest {
  method: string;
  path: string;
  authorization?: string;
  at: number;
}

/** What the REST routes answer from. */
export interface RestState {
  /** Every request, recorded here. */
  readonly rest: RestRequest[];
  readonly refuse?: 'token' | 'intents';
  /** The address GET /gateway/bot names. */
  readonly advertisedGatewayUrl: string;
  readonly maxConcurrency: number;
  /** What GET /gateway/bot recommends. */
  readonly recommendedShardCount: number;
  readonly sessionStarts: { remaining: number; resetAfterMs: number };
}

/**
 * The fake Discord's REST routes: the one a bot calls at login (GET /gateway/bot, 401 for a
 * token other than the test's or while `refuse` is 'token'); any other route is answered
 * 404. Every request is recorded.
 */
export function answerRest(
  state: RestState,
  request: http.IncomingMessage,
  response: http.ServerResponse,
): void {
  const path = new URL(request.url ?? '/', 'http://fake').pathname;
  state.rest.push({
    method: request.method ?? '',
    path,
    authorization: request.headers.authorization,
    at: Date.now(),
  });
  request.resume();
  const reply = (status: number, body: unknown) => {
    response.writeHead(status, { 'Content-Type': 'application/json' });
    response.end(JSON.stringify(body));
  };
  if (request.method !== 'GET' || path !== '/api/v10/gateway/bot') {
    return reply(404, { message: '404: Not Found', code: 0 });
  }
  if (request.headers.authorization !== `Bot ${TEST_DISCORD_TOKEN}` || state.refuse === 'token') {
    return reply(401, { message: '401: Unauthorized', code: 0 });
  }
  reply(200, {
    url: state.advertisedGatewayUrl,
    shards: state.recommendedShardCount,
    session_start_limit: {
      total: 1000,
      remaining: state.sessionStarts.remaining,
      reset_after: state.sessionStarts.resetAfterMs,
      max_concurrency: state.maxConcurrency,
    },
  });
}
