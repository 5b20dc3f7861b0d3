import { describe, expect, it } from '@jest/globals';
import { useApp } from './support/app.js';
import { ADMIN_TOKEN } from './support/privacy.js';
import { endpointsOf } from './support/webhooks.js';

const PRIVATE = {
  message:
    'url must not point at a loopback, private, link-local, unique-local or unspecified address',
  code: 400,
};
const UNRESOLVABLE = { message: 'url host name does not resolve', code: 400 };

/** Loopback, private, link-local, unique-local and unspecified targets, written every way. */
const REFUSED = [
  'http://127.0.0.1/',
  'http://127.255.255.254:8080/x',
  'https://[::1]/',
  'http://localhost:3000/',
  'http://LocalHost/',
  'http://10.0.0.1/',
  'http://10.255.255.255/',
  'http://172.16.0.1/',
  'http://172.31.255.255/',
  'http://192.168.1.1/',
  'http://100.64.0.1/',
  'http://100.127.255.255/',
  'http://169.254.169.254/latest/meta-data/',
  'http://[fe80::1]/',
  'http://[febf::1]/',
  'http://[fc00::1]/',
  'http://[fd12:3456::1]/',
  'http://0.0.0.0/',
  'http://0/',
  'http://[::]/',
  'http://[::ffff:127.0.0.1]/',
  'http://[::ffff:10.1.2.3]/',
  'http://[::ffff:a9fe:a9fe]/',
  'http://[0:0:0:0:0:ffff:192.168.0.1]/',
  'http://2130706433/',
  'http://0x7f000001/',
  'http://0x7f.1/',
  'http://017700000001/',
  'http://0177.0.0.1/',
  'http://127.1/',
  'http://3232235777/',
  'http://0xa.0.0.1/',
  'http://[64:ff9b::127.0.0.1]/',
];

describe('webhook targets (WEBHOOK_ALLOW_PRIVATE_TARGETS unset)', () => {
  const fx = useApp({ env: { ADMIN_TOKEN } });
  const api = () => endpointsOf(fx.url);

  it.each(REFUSED)('refuses %s with 400', async (url) => {
    const res = await api().create({ url });
    expect({ status: res.status, body: res.body }).toEqual({ status: 400, body: PRIVATE });
  });

  it.each(['http://nonexistent.invalid/', 'https://no-such-host.invalid:8443/hook'])(
    'refuses %s, a name that does not resolve, with 400',
    async (url) => {
      const res = await api().create({ url });
      expect({ status: res.status, body: res.body }).toEqual({ status: 400, body: UNRESOLVABLE });
    },
  );

  it.each([
    ['http://93.184.215.14/hook', 'http://93.184.215.14/hook'],
    ['https://[2606:4700::1111]:8443/x', 'https://[2606:4700::1111]:8443/x'],
    ['http://172.32.0.1/', 'http://172.32.0.1/'],
    ['http://100.128.0.1/', 'http://100.128.0.1/'],
    ['http://1572395022/', 'http://93.184.216.14/'],
  ])('accepts the public address %s', async (url, normalised) => {
    const res = await api().create({ url });
    expect({ status: res.status, url: res.body.url }).toEqual({ status: 201, url: normalised });
    expect((await api().delete(res.body.id)).status).toBe(200);
  });
});

describe('webhook targets with WEBHOOK_ALLOW_PRIVATE_TARGETS=true', () => {
  const fx = useApp({ env: { ADMIN_TOKEN, WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' } });
  const api = () => endpointsOf(fx.url);

  it.each([
    'http://127.0.0.1:9/',
    'http://localhost/',
    'http://[::1]/',
    'http://10.0.0.1/',
    'http://2130706433/',
  ])('accepts %s', async (url) => {
    expect((await api().create({ url })).status).toBe(201);
  });

  it('still refuses a name that does not resolve', async () => {
    const res = await api().create({ url: 'http://nonexistent.invalid/' });
    expect({ status: res.status, body: res.body }).toEqual({ status: 400, body: UNRESOLVABLE });
  });
});
