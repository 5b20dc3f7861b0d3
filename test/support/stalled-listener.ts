import net from 'node:net';

/**
 * A raw client that sends `GET path` (with `headers`), reads the response's head and the
 * stream's opening message, then never reads again: the kernel's buffers fill, and the
 * service sees it backed up. `head` is the bytes it read.
 */
export async function stalledListener(port: number, path: string, headers: string[] = []) {
  const socket = net.connect({ port, host: '127.0.0.1' });
  socket.on('error', () => undefined);
  const chunks: Buffer[] = [];
  await new Promise<void>((resolve) => {
    const onData = (chunk: Buffer) => {
      chunks.push(chunk);
      if (Buffer.concat(chunks).includes('retry: ')) {
        socket.off('data', onData);
        socket.pause();
        resolve();
      }
    };
    socket.on('data', onData);
    socket.write([`GET ${path} HTTP/1.1`, 'Host: 127.0.0.1', ...headers, '', ''].join('\r\n'));
  });
  return { socket, head: Buffer.concat(chunks) };
}
