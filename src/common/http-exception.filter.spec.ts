import { stdSerializers } from 'pino';
import { loggedError } from './http-exception.filter.js';

/** A request as the filter sees it: the parsed query and the target as sent. */
const request = (target: string, query: Record<string, string | string[]>) => ({
  originalUrl: target,
  url: target,
  query,
});

class StorageUnavailableError extends Error {
  override readonly name = 'StorageUnavailableError';
}

describe('loggedError: what the error line logs of a 5xx', () => {
  const searched = request('/api/prevnames?name=Priv%C3%A9+Qwzx&limit=1&cursor=eyJx.abc', {
    name: 'Privé Qwzx',
    limit: '1',
    cursor: 'eyJx.abc',
  });

  it('takes every query value out of the message and the head of the stack, ignoring case', () => {
    const error = new StorageUnavailableError('refused "privé qwzx" (cursor eyJx.abc)');
    const logged = loggedError(error, searched);
    expect(logged.name).toBe('StorageUnavailableError');
    expect(logged.message).toBe('refused "[redacted]" (cursor [redacted])');
    const frames = error.stack!.slice(error.stack!.indexOf('\n'));
    expect(logged.stack).toBe(`StorageUnavailableError: ${logged.message}${frames}`);
  });

  it('takes out the values as sent (percent-encoded), and leaves values under 3 characters', () => {
    const logged = loggedError(new Error('GET ?name=Priv%C3%A9+Qwzx: 1 of 1'), searched);
    expect(logged.message).toBe('GET ?name=[redacted]: 1 of 1');
  });

  it('keeps a code and drops the rest of the exception (its cause, its own fields)', () => {
    const error = Object.assign(new Error('down', { cause: new Error('Privé Qwzx') }), {
      code: 'ECONNRESET',
      query: 'Privé Qwzx',
    });
    const logged = loggedError(error, request('/api/prevnames', {}));
    expect({ ...logged }).toEqual({ message: 'down', stack: error.stack, code: 'ECONNRESET' });
    // As pino writes it: the type from the name, nothing of the cause.
    expect(JSON.stringify(stdSerializers.err(logged as Error))).toBe(
      JSON.stringify({ type: 'Error', message: 'down', stack: error.stack, code: 'ECONNRESET' }),
    );
  });

  it('logs what was thrown that is no Error as its string, without the query values', () => {
    expect({ ...loggedError('no Privé Qwzx here', searched) }).toEqual({
      message: 'no [redacted] here',
    });
    expect(loggedError('thrown', searched).name).toBe('string');
  });
});
