import { describe, expect, it } from '@jest/globals';
import {
  isHttpUrl,
  isPublicAddress,
  PRIVATE_TARGET_MESSAGE,
  UNRESOLVABLE_TARGET_MESSAGE,
  vetTarget,
  type Resolve,
} from './webhook-targets.js';

const resolvesTo =
  (...addresses: string[]): Resolve =>
  () =>
    Promise.resolve(
      addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }) as const),
    );

describe('webhook targets', () => {
  it.each([
    '127.0.0.1',
    '10.1.2.3',
    '172.20.0.1',
    '192.168.0.1',
    '100.64.0.1',
    '169.254.1.1',
    '0.0.0.0',
    '::',
    '::1',
    'fe80::1',
    'fc00::1',
    'fdff::1',
    '::ffff:127.0.0.1',
    '::ffff:a00:1',
    '64:ff9b::a00:1',
    '::7f00:1',
    '224.0.0.1',
    'not an address',
  ])('%s is not public', (address) => {
    expect(isPublicAddress(address)).toBe(false);
  });

  it.each([
    '93.184.216.14',
    '8.8.8.8',
    '172.32.0.1',
    '100.128.0.1',
    '2606:4700::1111',
    '::ffff:808:808',
  ])('%s is public', (address) => {
    expect(isPublicAddress(address)).toBe(true);
  });

  it('takes absolute http and https URLs only', () => {
    expect(isHttpUrl('https://example.com/x')).toBe(true);
    expect(isHttpUrl('HTTP://example.com')).toBe(true);
    for (const value of ['ftp://example.com', '/x', 'example.com', 'http://', 'mailto:a@b', 7]) {
      expect(isHttpUrl(value)).toBe(false);
    }
  });

  it('refuses a name that resolves to any private address, and one that does not resolve', async () => {
    const url = new URL('https://hooks.example.com/x');
    await expect(vetTarget(url, false, resolvesTo('93.184.216.14', '10.0.0.1'))).rejects.toThrow(
      PRIVATE_TARGET_MESSAGE,
    );
    await expect(vetTarget(url, true, resolvesTo())).rejects.toThrow(UNRESOLVABLE_TARGET_MESSAGE);
    await expect(
      vetTarget(url, true, () => Promise.reject(new Error('ENOTFOUND'))),
    ).rejects.toThrow(UNRESOLVABLE_TARGET_MESSAGE);
    expect(await vetTarget(url, true, resolvesTo('10.0.0.1'))).toEqual([
      { address: '10.0.0.1', family: 4 },
    ]);
    expect(await vetTarget(url, false, resolvesTo('93.184.216.14'))).toEqual([
      { address: '93.184.216.14', family: 4 },
    ]);
  });

  it('does not resolve an IP literal', async () => {
    const never: Resolve = () => Promise.reject(new Error('resolved'));
    expect(await vetTarget(new URL('http://[2606:4700::1111]/'), false, never)).toEqual([
      { address: '2606:4700::1111', family: 6 },
    ]);
    await expect(vetTarget(new URL('http://0x7f.1/'), false, never)).rejects.toThrow(
      PRIVATE_TARGET_MESSAGE,
    );
  });
});
