/** The routes and the contract's fixed answers, as every e2e file speaks them. */

export const LISTEN = '/api/webhooks/prevnames/listen';
export const PUBLISH = '/api/webhooks/prevnames';
export const HEALTH_READY = '/api/health/ready';
export const HEALTH_LIVE = '/api/health/live';
export const METRICS = '/api/metrics';

/** The path of a user's history, with the id encoded as a client would. */
export function historyPath(userId: string, query = ''): string {
  return `/api/users/${encodeURIComponent(userId)}/prevnames${query}`;
}

/** The Content-Type of every JSON answer, errors included. */
export const JSON_TYPE = 'application/json; charset=utf-8';

export interface HistoryEntry {
  type: 'username' | 'displayname';
  name: string;
  changedAt: string;
}

export interface HistoryBody {
  userId: string;
  prevnames: HistoryEntry[];
  code: 200;
}

export const PUBLISHED = { success: true } as const;
export const NO_LISTENERS = { message: 'Failed to deliver event: no active listeners', code: 500 };
export const BUS_DOWN = { message: 'Failed to deliver event: event bus unavailable', code: 500 };
export const STORAGE_DOWN = { message: 'Failed to deliver event: storage unavailable', code: 500 };
export const STREAM_FAILED = {
  message: 'Error establishing the event stream connection',
  code: 500,
};
export const INTERNAL_ERROR = { message: 'Internal server error', code: 500 };
