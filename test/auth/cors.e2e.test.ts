import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/kernel/clock.js';
import type { TestServer } from '../helpers/server.js';
import { createAnalystUser, exchangeCode, registerClient, startAuthServer } from './helpers.js';

const ORIGIN = 'https://spa.example';

describe('CORS for browser-based public clients', () => {
  let server: TestServer;
  let user: { id: string; email: string; accountId: string };
  let pub: { client_id: string; client_secret: string | null };

  beforeAll(async () => {
    server = await startAuthServer();
    user = await createAnalystUser(server, systemClock);
    pub = await registerClient(server, systemClock, { accountId: user.accountId, public: true });
  });
  afterAll(() => server?.close());

  const preflight = (path: string, method: string, headers = 'authorization, content-type') =>
    fetch(`${server.url}${path}`, {
      method: 'OPTIONS',
      headers: {
        origin: ORIGIN,
        'access-control-request-method': method,
        'access-control-request-headers': headers,
      },
    });

  it('answers preflights on the token, revocation, userinfo, discovery and JWKS endpoints', async () => {
    const cases: Array<[string, string, string]> = [
      ['/oauth/token', 'POST', 'POST'],
      ['/oauth/revoke', 'POST', 'POST'],
      ['/oauth/userinfo', 'GET', 'GET, POST'],
      ['/.well-known/openid-configuration', 'GET', 'GET'],
      ['/.well-known/oauth-authorization-server', 'GET', 'GET'],
      ['/.well-known/jwks.json', 'GET', 'GET'],
    ];
    for (const [path, method, allowed] of cases) {
      const res = await preflight(path, method);
      expect(res.status, path).toBe(204);
      expect(res.headers.get('access-control-allow-origin'), path).toBe('*');
      expect(res.headers.get('access-control-allow-methods'), path).toBe(allowed);
      expect(res.headers.get('access-control-allow-headers'), path).toBe('Authorization, Content-Type');
      expect(res.headers.get('access-control-allow-credentials'), path).toBeNull();
      expect(Number(res.headers.get('access-control-max-age')), path).toBeGreaterThan(0);
    }
  });

  it('lets a public client run the token flow cross-origin: success and error responses are readable', async () => {
    const tokens = await exchangeCode(server, user, pub);
    const post = (path: string, form: Record<string, string>) =>
      fetch(`${server.url}${path}`, {
        method: 'POST',
        headers: { origin: ORIGIN, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams(form),
      });
    const refreshed = await post('/oauth/token', {
      grant_type: 'refresh_token',
      refresh_token: tokens.refresh_token,
      client_id: pub.client_id,
    });
    expect(refreshed.status).toBe(200);
    expect(refreshed.headers.get('access-control-allow-origin')).toBe('*');
    const access = ((await refreshed.json()) as { access_token: string }).access_token;

    const error = await post('/oauth/token', { grant_type: 'password', client_id: pub.client_id });
    expect(error.status).toBe(400);
    expect(error.headers.get('access-control-allow-origin')).toBe('*');

    const userinfo = await fetch(`${server.url}/oauth/userinfo`, {
      headers: { origin: ORIGIN, authorization: `Bearer ${access}` },
    });
    expect(userinfo.status).toBe(200);
    expect(userinfo.headers.get('access-control-allow-origin')).toBe('*');
    const denied = await fetch(`${server.url}/oauth/userinfo`, { headers: { origin: ORIGIN } });
    expect(denied.status).toBe(401);
    expect(denied.headers.get('access-control-allow-origin')).toBe('*');
    expect(denied.headers.get('access-control-expose-headers')).toMatch(/WWW-Authenticate/);

    const revoked = await post('/oauth/revoke', { token: access, client_id: pub.client_id });
    expect(revoked.status).toBe(200);
    expect(revoked.headers.get('access-control-allow-origin')).toBe('*');
    for (const path of [
      '/.well-known/openid-configuration',
      '/.well-known/oauth-authorization-server',
      '/.well-known/jwks.json',
    ]) {
      const res = await fetch(`${server.url}${path}`, { headers: { origin: ORIGIN } });
      expect(res.headers.get('access-control-allow-origin'), path).toBe('*');
    }
  });

  it('gives no CORS to the authorization step, introspection or the console', async () => {
    for (const [path, method] of [
      ['/oauth/authorize', 'GET'],
      ['/oauth/introspect', 'POST'],
      ['/console', 'GET'],
      ['/console/login', 'POST'],
    ] as const) {
      const res = await preflight(path, method);
      expect(res.status, path).toBe(404);
      expect(res.headers.get('access-control-allow-origin'), path).toBeNull();
    }
    const introspect = await fetch(`${server.url}/oauth/introspect`, {
      method: 'POST',
      headers: { origin: ORIGIN, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ token: 'x', client_id: pub.client_id }),
    });
    expect(introspect.headers.get('access-control-allow-origin')).toBeNull();
    const authorize = await fetch(`${server.url}/oauth/authorize?client_id=${pub.client_id}`, {
      headers: { origin: ORIGIN },
    });
    expect(authorize.headers.get('access-control-allow-origin')).toBeNull();
    const login = await fetch(`${server.url}/console/login`, { headers: { origin: ORIGIN } });
    expect(login.headers.get('access-control-allow-origin')).toBeNull();
  });
});
