/** The cursors in the history's Link headers: followed, and refused when not the service's own. */
import { encodeCursor, type CursorDirection } from '../src/history/history-cursor.js';
import { http } from './support/http.js';
import { history, path, target, USER, usePagedHistory } from './support/history-pages.js';

const CURSOR_MESSAGE =
  "cursor must be one this service issued, in a Link header of this user's history";

describe('the cursors of the history links', () => {
  const paging = usePagedHistory();
  let cursor: string;

  beforeAll(async () => {
    const first = await paging.get(`${path()}?limit=5`);
    cursor = new URLSearchParams(target(first.link, 'next').split('?')[1]).get('cursor')!;
  });

  const forged = (direction: string, at: string, id: string) =>
    encodeCursor(USER, { direction: direction as CursorDirection, position: { at, id } });
  const flip = (s: string, i: number) =>
    `${s.slice(0, i)}${s[i] === 'A' ? 'B' : 'A'}${s.slice(i + 1)}`;

  it('continues where the page it came with ended', async () => {
    const page = await paging.get(`${path()}?limit=5&cursor=${cursor}`);
    expect(page.body.prevnames).toEqual(history.slice(5, 10));
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
    ['too long', () => 'x'.repeat(300)],
    [
      'issued for another user',
      () =>
        encodeCursor('someone-else', {
          direction: 'next',
          position: { at: '2024-01-01T12:00:00.000000Z', id: '1' },
        }),
    ],
    ['checked, with an unknown direction', () => forged('up', '2024-01-01T12:00:00.000000Z', '1')],
    ['checked, with an impossible date', () => forged('next', '2024-02-30T12:00:00.000000Z', '1')],
    ['checked, with a time in milliseconds', () => forged('next', '2024-01-01T12:00:00.000Z', '1')],
    ['checked, with id 0', () => forged('next', '2024-01-01T12:00:00.000000Z', '0')],
    [
      'checked, with an id past bigint',
      () => forged('next', '2024-01-01T12:00:00.000000Z', '9223372036854775808'),
    ],
  ])('refuses a cursor %s with a 400', async (_case, make) => {
    const res = await http(`${paging.url}${path()}?limit=5&cursor=${encodeURIComponent(make())}`);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ message: CURSOR_MESSAGE, code: 400 });
  });

  it('refuses two cursors', async () => {
    const res = await http(`${paging.url}${path()}?limit=5&cursor=${cursor}&cursor=${cursor}`);
    expect(res.status).toBe(400);
    expect(res.body).toEqual({ message: CURSOR_MESSAGE, code: 400 });
  });

  it('answers a cursor past the last entry with an empty page and no link', async () => {
    const past = forged('next', '2030-01-01T00:00:00.000000Z', '1');
    expect(await paging.get(`${path()}?limit=5&cursor=${past}`)).toEqual({
      status: 200,
      body: { userId: USER, prevnames: [], code: 200 },
      link: null,
    });
  });
});
