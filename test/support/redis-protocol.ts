import net from 'node:net';

/** Redis's wire protocol (RESP), as much as the tests speak without a client library. */

export function ping(port: number): Promise<string> {
  return rawCommand(port, ['PING']);
}

/** One RESP command over a fresh connection; the reply is returned as received. */
export function rawCommand(port: number, args: string[], host = '127.0.0.1'): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect({ port, host });
    let reply = '';
    const timer = setTimeout(() => socket.destroy(new Error('no reply within 2 s')), 2_000);
    socket.setEncoding('utf8');
    socket.on('connect', () => {
      const parts = args.map((a) => `$${Buffer.byteLength(a)}\r\n${a}\r\n`).join('');
      socket.write(`*${args.length}\r\n${parts}`);
    });
    socket.on('data', (chunk: string) => {
      reply += chunk;
      if (isComplete(reply)) {
        clearTimeout(timer);
        socket.end();
        resolve(reply.trimEnd());
      }
    });
    socket.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
  });
}

/**
 * Enough of RESP for the replies the tests read: simple strings, integers, bulk strings
 * (`CLIENT LIST`), flat arrays.
 */
function isComplete(reply: string): boolean {
  if (!reply.endsWith('\r\n')) return false;
  if (reply[0] === '$') {
    const header = reply.indexOf('\r\n');
    const length = Number(reply.slice(1, header));
    return length < 0 || Buffer.byteLength(reply) >= header + 2 + length + 2;
  }
  if (reply[0] !== '*') return true;
  const lines = reply.split('\r\n').slice(0, -1);
  const count = Number(lines[0].slice(1));
  let index = 1;
  for (let element = 0; element < count; element++) {
    if (index >= lines.length) return false;
    index += lines[index].startsWith('$') ? 2 : 1;
  }
  return index <= lines.length;
}
