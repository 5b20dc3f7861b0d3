import { PUBLISH } from './support/api.js';
import { useApp } from './support/app.js';
import {
  type HostileCase,
  itRefusesEachExactly,
  nested,
  NODE,
  post,
  postBytes,
  publishBody,
} from './support/hostile.js';
import { failTestsOnProcessFailures } from './support/process-spies.js';

/** Bodies no client would send, written byte for byte: each gets its exact 4xx. */
describe('hostile input: hand-made bodies', () => {
  const fx = useApp();
  failTestsOnProcessFailures();

  const cases: HostileCase[] = [
    [
      'a 1 MB body (Content-Length)',
      post(publishBody({ name: 'x'.repeat(1024 * 1024) })),
      413,
      'Request body exceeds the 16 KiB limit',
    ],
    [
      'a 1 MB body (chunked)',
      `POST ${PUBLISH} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n100000\r\n${'{'.padEnd(0x100000, ' ')}\r\n0\r\n\r\n`,
      413,
      'Request body exceeds the 16 KiB limit',
    ],
    [
      'a 1 MB body that is not JSON',
      `POST ${PUBLISH} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/plain\r\nContent-Length: 1048576\r\nConnection: close\r\n\r\n${'x'.repeat(1048576)}`,
      415,
      'Content-Type must be application/json',
    ],
    [
      'objects nested 2,700 deep (15 KB)',
      post(nested(2_700)),
      400,
      'Request body must not nest more than 32 levels deep',
    ],
    [
      'arrays nested 8,000 deep',
      post(`${'['.repeat(8_000)}${']'.repeat(8_000)}`),
      400,
      'Request body must be a JSON object',
    ],
    [
      'deep nesting inside a field',
      post(publishBody({ userId: JSON.parse(nested(40)) })),
      400,
      'Request body must not nest more than 32 levels deep',
    ],
    [
      'nesting 2,600 deep inside a field',
      post(publishBody().replace('"attacker"', nested(2_600))),
      400,
      'Request body must not nest more than 32 levels deep',
    ],
    [
      'a __proto__ key',
      post(publishBody().replace('{', '{"__proto__":{"polluted":true},')),
      400,
      'property __proto__ should not exist',
    ],
    [
      'a constructor.prototype key',
      post(publishBody().replace('{', '{"constructor":{"prototype":{"polluted":true}},')),
      400,
      'property constructor should not exist',
    ],
    [
      'a __proto__ key inside a field',
      post(publishBody().replace('"attacker"', '{"__proto__":{"polluted":true}}')),
      400,
      'userId must be a string',
    ],
    [
      'a NUL in the name',
      post(publishBody({ name: 'a\u0000b' })),
      400,
      'name must not contain NUL characters or unpaired surrogates',
    ],
    [
      'a NUL in the user id',
      post(publishBody({ userId: 'a\u0000b' })),
      400,
      'userId must not contain control characters or unpaired surrogates',
    ],
    [
      'a raw NUL byte inside a JSON string',
      post(publishBody().replace('"n"', '"a\u0000b"')),
      400,
      'Request body is not valid JSON',
    ],
    [
      'a lone surrogate, escaped',
      post(publishBody().replace('"n"', '"\\ud800"')),
      400,
      'name must not contain NUL characters or unpaired surrogates',
    ],
    [
      'invalid UTF-8 bytes (an overlong "/")',
      postBytes(
        Buffer.concat([
          Buffer.from(
            '{"userId":"u","type":"username","changedAt":"2024-06-07T15:30:00Z","name":"a',
          ),
          Buffer.from([0xc0, 0xaf]),
          Buffer.from('b"}'),
        ]),
      ),
      400,
      'Request body is not valid UTF-8',
    ],
    [
      'duplicate Content-Length',
      `POST ${PUBLISH} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 2\r\nContent-Length: 3\r\nConnection: close\r\n\r\n{}`,
      400,
      NODE,
    ],
    [
      'Content-Length with Transfer-Encoding (smuggling)',
      `POST ${PUBLISH} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n0\r\n\r\n`,
      400,
      NODE,
    ],
  ];

  itRefusesEachExactly(fx, cases);
});
