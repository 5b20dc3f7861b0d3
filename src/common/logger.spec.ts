import type { IncomingMessage } from 'node:http';
import { pathOf, routeOf } from './logger.js';

/** A request as Express leaves it once routed. */
const routed = (fields: {
  originalUrl?: string;
  url?: string;
  baseUrl?: string;
  route?: { path?: unknown; methods?: Record<string, boolean> };
}) => fields as IncomingMessage & typeof fields;

describe('pathOf: the path a log line names', () => {
  it.each([
    ['/api/prevnames?name=secret&cursor=abc', '/api/prevnames'],
    ['/api/users/someone/prevnames', '/api/users/someone/prevnames'],
    ['/nowhere#name=secret', '/nowhere'],
    ['/api/prevnames?', '/api/prevnames'],
    ['http://host/api/prevnames?name=secret', 'http://host/api/prevnames'],
  ])('%s: %s', (target, path) => {
    expect(pathOf(routed({ originalUrl: target, url: '/rewritten' }))).toBe(path);
  });

  it('reads the URL when no router set the original one', () => {
    expect(pathOf(routed({ url: '/a?b=c' }))).toBe('/a');
  });
});

describe('routeOf: the template a log line names', () => {
  it("is the route's path, under the path its router is mounted at", () => {
    const route = { path: '/api/users/{:userId}/prevnames', methods: { get: true } };
    expect(routeOf(routed({ baseUrl: '', route }))).toBe('/api/users/{:userId}/prevnames');
    expect(routeOf(routed({ baseUrl: '/api', route: { path: '/docs', methods: {} } }))).toBe(
      '/api/docs',
    );
  });

  it('drops a trailing slash, which takes what the path without it does', () => {
    const route = { path: '/api/prevnames/', methods: { get: true } };
    expect(routeOf(routed({ baseUrl: '', route }))).toBe('/api/prevnames');
    expect(routeOf(routed({ baseUrl: '', route: { path: '/', methods: { get: true } } }))).toBe(
      '/',
    );
  });

  it("is null with no route, and for Nest's answer to an unknown path under the prefix", () => {
    expect(routeOf(routed({ baseUrl: '' }))).toBeNull();
    const notFound = { path: '*path', methods: { _all: true } };
    expect(routeOf(routed({ baseUrl: '/api', route: notFound }))).toBeNull();
  });
});
