import type { APIGatewayBotInfo } from 'discord.js';

/** Discord's REST API when DISCORD_API_URL is unset. */
const DEFAULT_API_URL = 'https://discord.com/api';
const API_VERSION = '10';
const REQUEST_TIMEOUT_MS = 15_000;

/** Discord answered GET /gateway/bot with 401: the token is not a bot's (an operator must act). */
export class TokenRefusedError extends Error {
  constructor() {
    super('Discord refused the login: DISCORD_TOKEN is not a valid bot token');
    this.name = 'TokenRefusedError';
  }
}

/**
 * GET /gateway/bot: where the gateway is (DISCORD_GATEWAY_URL replaces it: a gateway proxy,
 * or a test double), the shard count Discord recommends, and the session start limit
 * (`max_concurrency`, and the identifies left today). Called once per login of the
 * instance: the only REST call the detector makes.
 */
export async function fetchGatewayBot(
  token: string,
  apiUrl: string | undefined,
  gatewayUrl: string | undefined,
): Promise<APIGatewayBotInfo> {
  const response = await fetch(`${apiUrl ?? DEFAULT_API_URL}/v${API_VERSION}/gateway/bot`, {
    headers: { Authorization: `Bot ${token}` },
    signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
  }).catch((error: unknown) => {
    const cause = (error as { cause?: { code?: string; message?: string } }).cause;
    throw new Error(cause?.code ?? cause?.message ?? (error as Error).message);
  });
  if (response.status === 401) throw new TokenRefusedError();
  if (!response.ok) throw new Error(`GET /gateway/bot answered ${response.status}`);
  const body = (await response.json()) as APIGatewayBotInfo;
  return gatewayUrl ? { ...body, url: gatewayUrl } : body;
}
