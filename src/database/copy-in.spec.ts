import { copyText } from './copy-in.js';

describe('copyText', () => {
  it('writes rows tab-separated, one a line, null as \\N, escaping backslashes and line breaks', () => {
    expect(copyText([]).toString()).toBe('');
    expect(copyText([[], []]).toString()).toBe('');
    expect(copyText([['1'], ['a b'], [null], [''], ['\\N']]).toString()).toBe(
      '1\ta b\t\\N\t\t\\\\N\n',
    );
    // Given by column: the first column holds each row's first field.
    expect(
      copyText([
        ['a\tb', '😀'],
        ['c\nd\re\\f', '"x"'],
      ]).toString(),
    ).toBe('a\\tb\tc\\nd\\re\\\\f\n😀\t"x"\n');
  });
});
