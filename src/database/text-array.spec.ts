import { textArray } from './text-array.js';

describe('textArray', () => {
  it('quotes every element, escapes only quotes and backslashes, and writes null as NULL', () => {
    expect(textArray([])).toBe('{}');
    expect(textArray(['a'])).toBe('{"a"}');
    expect(textArray(['1', 'b c', ''])).toBe('{"1","b c",""}');
    expect(textArray([null])).toBe('{NULL}');
    expect(textArray(['"'])).toBe('{"\\""}');
    expect(textArray(['1', '', null, 'NULL'])).toBe('{"1","",NULL,"NULL"}');
    expect(textArray(['a "b"', 'c\\d', '{e,f}', ' g '])).toBe(
      '{"a \\"b\\"","c\\\\d","{e,f}"," g "}',
    );
  });
});
