import type { Server } from 'node:http';
import { Server as NetServer } from 'node:net';

/**
 * Stops `server` accepting connections, and nothing else. http.Server's own close() also
 * closes at once every keep-alive connection idle at that instant (Node 19 and later),
 * racing a request its client may be sending on it right now; net.Server's close(), which
 * http.Server's calls after that, only stops listening. The spec beside this file fails when
 * http.Server's close() stops closing idle connections: then this can be `server.close()`.
 */
export function stopAcceptingConnections(server: Server): void {
  NetServer.prototype.close.call(server);
}
