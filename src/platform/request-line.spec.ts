import { hostFieldCount } from './request-line.js';

describe('hostFieldCount', () => {
  it('counts every Host field line, whatever the case of its name', () => {
    expect(hostFieldCount(['Host', 'a', 'Accept', '*/*'])).toBe(1);
    expect(hostFieldCount(['Host', 'a', 'host', 'a'])).toBe(2);
    expect(hostFieldCount(['HOST', 'a', 'Accept', '*/*', 'hOsT', 'b', 'host', ''])).toBe(3);
  });

  it('counts no other field, nor a value that says Host', () => {
    expect(hostFieldCount([])).toBe(0);
    expect(hostFieldCount(['X-Forwarded-Host', 'a', 'Hosts', 'b', 'Referer', 'Host'])).toBe(0);
  });
});
