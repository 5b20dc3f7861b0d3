/** The cursors in the history's Link headers: followed, and refused when not the service's own. */
import fc from 'fast-check';
import type { CursorSignerService } from '../src/cursors/cursor-signer.service.js';
import { encodeCursor, historyCursorScope } from '../src/history/history-cursor.js';
import type { CursorDirection } from '../src/history/history-cursor.js';
import {
  BAD_IDS,
  BAD_TIMES,
  cursorArbitraries,
  cursorOfLink,
  signerOf,
  unkeyedCursor,
} from './support/cursors.js';
import { http } from './support/http.js';
import { history, path, target, USER, usePagedHistory } from './support/history-pages.js';

const CURSOR_MESSAGE =
  "cursor must be one this service issued, in a Link header of this user's history";
const AT = '2024-01-01T12:00:00.000000Z';
/** How many generated signed cursors the property tries. */
const RUNS = 300;

describe('the cursors of the history links', () => {
  const paging = usePagedHistory();
  let cursor: string;
  /** Signs as the service does, with the key of its database. */
  let signer: CursorSignerService;

  beforeAll(async () => {
    const first = await paging.get(`${path()}?limit=5`);
    cursor = new URLSearchParams(target(first.link, 'next').split('?')[1]).get('cursor')!;
    signer = signerOf(paging.db);
  });

  /** A cursor signed with the service's key, with whatever fields it is given. */
  const signed = (...fields: unknown[]) => signer.sign(historyCursorScope(USER), fields);
  const forged = (direction: string, at: string, id: string) =>
    encodeCursor(signer, USER, { direction: direction as CursorDirection, position: { at, id } });
  const flip = (s: string, i: number) =>
    `${s.slice(0, i)}${s[i] === 'A' ? 'B' : 'A'}${s.slice(i + 1)}`;
  const refused = async (bad: string) => {
    const res = await http(`${paging.url}${path()}?limit=5&cursor=${encodeURIComponent(bad)}`);
    expect({ status: res.status, body: res.body }).toEqual({
      status: 400,
      body: { message: CURSOR_MESSAGE, code: 400 },
    });
  };

  it('continues where the page it came with ended', async () => {
    const page = await paging.get(`${path()}?limit=5&cursor=${cursor}`);
    expect(page.body.prevnames).toEqual(history.slice(5, 10));
  });

  it('signs its cursors with the key of its database: one signed with it is followed', async () => {
    expect(await forged('next', AT, '1')).toMatch(/^[\w-]+\.[\w-]+$/);
    const page = await paging.get(`${path()}?limit=5&cursor=${cursor}`);
    const again = await paging.get(`${path()}?limit=5&cursor=${cursorOfLink(page.link)}`);
    expect(again.body.prevnames).toEqual(history.slice(10, 15));
    // The service's own cursor is what the key makes of its fields.
    const [payload] = cursor.split('.');
    const fields = JSON.parse(Buffer.from(payload, 'base64url').toString()) as unknown[];
    expect(await signed(...fields)).toBe(cursor);
  });

  it.each([
    ['a character of the payload changed', () => flip(cursor, 3)],
    ['the last character of the payload changed', () => flip(cursor, cursor.indexOf('.') - 1)],
    ['a character of the check changed', () => flip(cursor, cursor.length - 1)],
    ['the check cut short', () => cursor.slice(0, -1)],
    ['no check', () => cursor.slice(0, cursor.indexOf('.'))],
    ['the dot gone', () => cursor.replace('.', '')],
    ['a character added', () => `${cursor}A`],
    ['empty', () => ''],
    ['made up', () => 'not-a-cursor'],
    ['a dot alone', () => '.'],
    ['two dots', () => `${cursor}.${cursor.split('.')[1]}`],
    ['too long', () => 'x'.repeat(300)],
    [
      'of the unkeyed scheme of before, with the fields of an issued one',
      () => {
        const [payload] = cursor.split('.');
        const fields = JSON.parse(Buffer.from(payload, 'base64url').toString()) as unknown[];
        return unkeyedCursor(historyCursorScope(USER), fields);
      },
    ],
    [
      'of the unkeyed scheme of before, in year 0000 (a 500 before)',
      () =>
        unkeyedCursor(`prevnames-cursor\0${USER}`, ['prev', '0000-01-01T00:00:00.000000Z', '1']),
    ],
    [
      'of the unkeyed scheme of before, with its check at the signature\u2019s length',
      () => {
        const old = unkeyedCursor(historyCursorScope(USER), ['next', AT, '1']);
        return `${old}${'A'.repeat(6)}`;
      },
    ],
    [
      'issued for another user',
      () =>
        encodeCursor(signer, 'someone-else', { direction: 'next', position: { at: AT, id: '1' } }),
    ],
    ['signed, with an unknown direction', () => forged('up', AT, '1')],
    ['signed, with a direction in capitals', () => forged('NEXT', AT, '1')],
    ['signed, with a direction of null', () => signed(null, AT, '1')],
    ['signed, with a direction of 1', () => signed(1, AT, '1')],
    ['signed, with a direction in an array', () => signed(['next'], AT, '1')],
    ['signed, with no fields', () => signed()],
    ['signed, with two fields', () => signed('next', AT)],
    ['signed, with four fields', () => signed('next', AT, '1', '2')],
    [
      'signed, with the fields in an object',
      () => signer.sign(historyCursorScope(USER), [{}, {}, {}]),
    ],
  ])('refuses a cursor %s with a 400', async (_case, make) => {
    await refused(await make());
  });

  it.each(BAD_TIMES)('refuses a signed cursor whose time is %s with a 400', async (_case, at) => {
    await refused(await signed('next', at, '1'));
    await refused(await signed('prev', at, '1'));
  });

  it.each(BAD_IDS)('refuses a signed cursor whose id is %s with a 400', async (_case, id) => {
    await refused(await signed('next', AT, id));
    await refused(await signed('prev', AT, id));
  });

  it('refuses two cursors', async () => {
    const res = await http(`${paging.url}${path()}?limit=5&cursor=${cursor}&cursor=${cursor}`);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ message: CURSOR_MESSAGE, code: 400 });
  });

  it('answers a cursor past the last entry with an empty page and no link', async () => {
    const past = await forged('next', '2030-01-01T00:00:00.000000Z', '1');
    expect(await paging.get(`${path()}?limit=5&cursor=${past}`)).toEqual({
      status: 200,
      body: { userId: USER, prevnames: [], code: 200 },
      link: null,
    });
  });

  it('follows cursors at the ends of the stored range: years 0001 and 9999, the largest id', async () => {
    const first = await forged('next', '0001-01-01T00:00:00.000000Z', '1');
    const oldest = await paging.get(`${path()}?limit=5&cursor=${first}`);
    expect(oldest.status).toBe(200);
    expect(oldest.body.prevnames).toEqual(history.slice(0, 5));
    const last = await forged('prev', '9999-12-31T23:59:59.999999Z', '9223372036854775807');
    const newest = await paging.get(`${path()}?limit=5&cursor=${last}`);
    expect(newest.status).toBe(200);
    expect(newest.body.prevnames).toEqual(history.slice(-5));
    expect(target(newest.link, 'prev')).toContain('cursor=');
  });

  it('answers any signed cursor with a page or the cursor 400, never a 500 (fast-check)', async () => {
    const { time, id, any } = cursorArbitraries;
    const direction = fc.oneof(fc.constantFrom('next', 'prev'), any);
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(fc.tuple(direction, time, id), fc.array(any, { maxLength: 4 })),
        async (fields) => {
          const res = await http(
            `${paging.url}${path()}?limit=5&cursor=${await signed(...fields)}`,
          );
          if (res.status !== 200) {
            expect({ status: res.status, body: res.body }).toEqual({
              status: 400,
              body: { message: CURSOR_MESSAGE, code: 400 },
            });
          }
        },
      ),
      { numRuns: RUNS },
    );
  });
});
