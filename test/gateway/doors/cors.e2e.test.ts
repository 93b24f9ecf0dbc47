import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config.js';
import { startTestServer, type TestServer } from '../../helpers/server.js';

const ALLOWED = 'https://dash.example';
const OTHER = 'https://evil.example';

const preflight = (url: string, origin: string, method: string) =>
  fetch(url, {
    method: 'OPTIONS',
    headers: {
      origin,
      'access-control-request-method': method,
      'access-control-request-headers': 'authorization, content-type',
    },
  });

describe('CORS on the API for the origins in CORS_ORIGINS', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ env: { CORS_ORIGINS: `${ALLOWED}, http://localhost:5173` } });
  });
  afterAll(() => server?.close());

  it('answers preflights for an allowed origin on /graphql, /v1 and /api/v1 with the path’s methods', async () => {
    const cases: Array<[string, string, string]> = [
      ['/graphql', 'POST', 'GET, POST'],
      ['/v1/ports', 'GET', 'GET'],
      ['/v1/port-calls/abc', 'PATCH', 'GET, PATCH, DELETE'],
      ['/api/v1/protocols', 'GET', 'GET'],
      ['/v1/export', 'GET', 'GET'],
    ];
    for (const [path, method, allowed] of cases) {
      const res = await preflight(`${server.url}${path}`, ALLOWED, method);
      expect(res.status, path).toBe(204);
      expect(res.headers.get('access-control-allow-origin'), path).toBe(ALLOWED);
      expect(res.headers.get('access-control-allow-methods'), path).toBe(allowed);
      expect(res.headers.get('access-control-allow-headers'), path).toMatch(/Authorization.*X-API-Key/);
      expect(res.headers.get('access-control-allow-credentials'), path).toBeNull();
      expect(res.headers.get('vary'), path).toMatch(/Origin/);
    }
  });

  it('exposes the request id, rate-limit headers and Retry-After on answers and errors', async () => {
    const ok = await fetch(`${server.url}/graphql`, {
      method: 'POST',
      headers: { origin: ALLOWED, 'content-type': 'application/json', 'x-api-key': server.key('ANALYST') },
      body: JSON.stringify({ query: '{ protocols(first: 1) { totalCount } }' }),
    });
    expect(ok.status).toBe(200);
    expect(ok.headers.get('access-control-allow-origin')).toBe(ALLOWED);
    const exposed = ok.headers.get('access-control-expose-headers')!;
    for (const name of [
      'X-Request-Id',
      'X-RateLimit-Limit',
      'X-RateLimit-Remaining',
      'X-RateLimit-Reset',
      'Retry-After',
    ])
      expect(exposed).toContain(name);

    const denied = await fetch(`${server.url}/v1/vessels/lookup?imo=9074729`, {
      headers: { origin: ALLOWED, authorization: 'Bearer nope' },
    });
    expect(denied.status).toBe(401);
    expect(denied.headers.get('access-control-allow-origin')).toBe(ALLOWED);
    const rest = await fetch(`${server.url}/api/v1/vessels/lookup?imo=9074729`, {
      headers: { origin: ALLOWED, 'x-api-key': server.key('INSTITUTIONAL') },
    });
    expect(rest.status).toBe(200);
    expect(rest.headers.get('access-control-allow-origin')).toBe(ALLOWED);
  });

  it('gives another origin nothing, and leaves non-preflight OPTIONS as before (405 on /graphql, 404 on /v1)', async () => {
    const foreign = await preflight(`${server.url}/graphql`, OTHER, 'POST');
    expect(foreign.status).toBe(405);
    expect(foreign.headers.get('access-control-allow-origin')).toBeNull();
    const foreignRest = await preflight(`${server.url}/v1/ports`, OTHER, 'GET');
    expect(foreignRest.status).toBe(404);
    expect(foreignRest.headers.get('access-control-allow-origin')).toBeNull();
    const plain = await fetch(`${server.url}/v1/ports`, { method: 'OPTIONS', headers: { origin: ALLOWED } });
    expect(plain.status).toBe(404);
    const answer = await fetch(`${server.url}/v1/ports`, {
      headers: { origin: OTHER, 'x-api-key': server.key('INSTITUTIONAL') },
    });
    expect(answer.status).toBe(200);
    expect(answer.headers.get('access-control-allow-origin')).toBeNull();
    expect(answer.headers.get('vary')).toMatch(/Origin/);
  });

  it('keeps the OAuth endpoints on their own policy (any origin) and the console without CORS', async () => {
    const token = await preflight(`${server.url}/oauth/token`, OTHER, 'POST');
    expect(token.status).toBe(204);
    expect(token.headers.get('access-control-allow-origin')).toBe('*');
    const console = await preflight(`${server.url}/console`, ALLOWED, 'GET');
    expect(console.status).toBe(404);
    expect(console.headers.get('access-control-allow-origin')).toBeNull();
  });
});

describe('CORS when CORS_ORIGINS is unset', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ seed: false });
  });
  afterAll(() => server?.close());

  it('is off: no preflight, no headers', async () => {
    expect((await preflight(`${server.url}/graphql`, ALLOWED, 'POST')).status).toBe(405);
    expect((await preflight(`${server.url}/v1/ports`, ALLOWED, 'GET')).status).toBe(404);
    const res = await fetch(`${server.url}/v1/ports`, { headers: { origin: ALLOWED } });
    expect(res.headers.get('access-control-allow-origin')).toBeNull();
  });
});

describe('CORS_ORIGINS validation', () => {
  it('takes origins and *, and names what is not an origin', () => {
    expect(loadConfig({ CORS_ORIGINS: 'https://a.example, http://127.0.0.1:8080/' }).corsOrigins).toEqual([
      'https://a.example',
      'http://127.0.0.1:8080',
    ]);
    expect(loadConfig({ CORS_ORIGINS: '*' }).corsOrigins).toEqual(['*']);
    expect(loadConfig({}).corsOrigins).toEqual([]);
    for (const bad of ['https://a.example/app', 'a.example', 'ftp://a.example'])
      expect(() => loadConfig({ CORS_ORIGINS: bad }), bad).toThrow(/CORS_ORIGINS: .* is not an origin/);
  });
});
