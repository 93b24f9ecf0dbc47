import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AuthorizationCode, AuthSession } from '../../src/auth/entities.js';
import { ManualClock, MINUTE } from '../../src/kernel/clock.js';
import type { TestServer } from '../helpers/server.js';
import {
  authorizeUrl,
  Browser,
  consent,
  createAnalystUser,
  hiddenValue,
  PASSWORD,
  pkce,
  postForm,
  registerClient,
  startAuthServer,
} from './helpers.js';

const REDIRECT = 'http://127.0.0.1:9/callback';

describe('GET /oauth/authorize, sign-in and consent', () => {
  const clock = new ManualClock('2026-03-02T10:00:00.000Z');
  let server: TestServer;
  let user: { id: string; email: string; accountId: string };
  let client: { client_id: string; client_secret: string | null };
  let browser: Browser;
  const codes = () => server.database.db.em().count(AuthorizationCode, {});

  beforeAll(async () => {
    server = await startAuthServer({ clock, env: { AUTH_LOGIN_MAX_FAILURES: '1000' } });
    user = await createAnalystUser(server, clock);
    client = await registerClient(server, clock, {
      accountId: user.accountId,
      scopes: 'read:vessels read:port_calls admin',
    });
    browser = new Browser(server.url);
    expect((await browser.login(user.email, PASSWORD)).status).toBe(303);
  });
  afterAll(() => server?.close());

  const params = (extra: Record<string, string> = {}) => ({
    client_id: client.client_id,
    redirect_uri: REDIRECT,
    scope: 'read:vessels',
    state: 's-123',
    code_challenge: pkce().challenge,
    ...extra,
  });

  /** An error the client must hear about: a redirect to its URI with error, description and the same state. */
  async function expectRedirectError(query: Record<string, string>, error: string, description?: RegExp) {
    const before = await codes();
    const res = await browser.fetch(`/oauth/authorize?${new URLSearchParams(query)}`);
    expect(res.status).toBe(302);
    const location = new URL(res.headers.get('location')!);
    expect(`${location.origin}${location.pathname}`).toBe(REDIRECT);
    expect(location.searchParams.get('error')).toBe(error);
    expect(location.searchParams.get('error_description')).toBeTruthy();
    if (description) expect(location.searchParams.get('error_description')).toMatch(description);
    expect(location.searchParams.get('state')).toBe(query.state ?? null);
    expect(location.searchParams.get('code')).toBeNull();
    expect(await codes()).toBe(before);
  }

  /** An error that must not redirect (unverified client or redirect URI): an HTML page, no Location. */
  async function expectErrorPage(query: string, message: RegExp) {
    const before = await codes();
    const res = await browser.fetch(`/oauth/authorize?${query}`);
    expect(res.status).toBe(400);
    expect(res.headers.get('location')).toBeNull();
    expect(res.headers.get('content-type')).toMatch(/text\/html/);
    expect(await res.text()).toMatch(message);
    expect(await codes()).toBe(before);
  }

  it('shows an error page and never redirects for an unknown client or a redirect_uri that is not registered exactly', async () => {
    const p = params();
    const q = (o: Record<string, string>) =>
      new URLSearchParams({ response_type: 'code', code_challenge_method: 'S256', ...o }).toString();
    await expectErrorPage(q({ ...p, client_id: 'tgc_nope' }), /not a registered application/);
    await expectErrorPage(
      q({ ...p, redirect_uri: 'https://evil.example/callback' }),
      /redirect_uri is not registered/,
    );
    await expectErrorPage(q({ ...p, redirect_uri: `${REDIRECT}/` }), /redirect_uri is not registered/);
    await expectErrorPage(q({ ...p, redirect_uri: `${REDIRECT}?x=1` }), /redirect_uri is not registered/);
    const { redirect_uri: _omit, ...withoutRedirect } = p;
    await expectErrorPage(q(withoutRedirect), /redirect_uri is required/);
    await expectErrorPage(
      `${q(p)}&redirect_uri=${encodeURIComponent('https://evil.example/cb')}`,
      /more than once/,
    );
  });

  it('loopback redirect URIs (RFC 8252 §7.3): any port on 127.0.0.1 and [::1], the rest exact; localhost exact', async () => {
    const native = await registerClient(server, clock, {
      accountId: user.accountId,
      redirectUris: [
        'http://127.0.0.1/cb?app=1',
        'http://[::1]:8000/native',
        'http://localhost:8080/cb',
        'https://app.example/cb',
      ],
    });
    const q = (redirectUri: string) =>
      new URLSearchParams({
        response_type: 'code',
        code_challenge_method: 'S256',
        ...params(),
        client_id: native.client_id,
        redirect_uri: redirectUri,
      }).toString();
    for (const accepted of [
      'http://127.0.0.1:54321/cb?app=1',
      'http://127.0.0.1/cb?app=1',
      'http://[::1]:61000/native',
      'http://[::1]/native',
      'http://localhost:8080/cb',
      'https://app.example/cb',
    ]) {
      const res = await browser.fetch(`/oauth/authorize?${q(accepted)}`);
      expect(res.status, accepted).toBe(200);
      expect(await res.text(), accepted).toContain(`sent back to <code>${accepted}</code>`);
    }
    for (const refused of [
      'http://127.0.0.1:54321/cb?app=2',
      'http://127.0.0.1:54321/cb',
      'http://127.0.0.1:54321/cb/?app=1',
      'http://127.0.0.1:54321/CB?app=1',
      'http://127.0.0.1:0/cb?app=1',
      'http://127.0.0.1:65536/cb?app=1',
      'http://[::1]:54321/cb?app=1',
      'http://127.0.0.1:8000/native',
      'http://127.0.0.1:54321@evil.example/cb?app=1',
      'https://127.0.0.1:54321/cb?app=1',
      'http://localhost:9999/cb',
      'https://app.example:8443/cb',
    ]) {
      await expectErrorPage(q(refused), /redirect_uri is not registered/);
    }

    // The code is bound to the exact URI used, port included; the token request must repeat it.
    const { verifier, challenge } = pkce();
    const used = 'http://127.0.0.1:54321/cb?app=1';
    const location = await consent(browser, {
      client_id: native.client_id,
      redirect_uri: used,
      scope: 'read:vessels',
      state: 'loop',
      code_challenge: challenge,
    });
    expect(`${location.origin}${location.pathname}`).toBe('http://127.0.0.1:54321/cb');
    expect(location.searchParams.get('app')).toBe('1');
    expect(location.searchParams.get('state')).toBe('loop');
    const exchange = (redirectUri: string) =>
      postForm(server, '/oauth/token', {
        grant_type: 'authorization_code',
        code: location.searchParams.get('code')!,
        code_verifier: verifier,
        redirect_uri: redirectUri,
        client_id: native.client_id,
        client_secret: native.client_secret!,
      });
    for (const other of ['http://127.0.0.1/cb?app=1', 'http://127.0.0.1:54322/cb?app=1']) {
      const res = await exchange(other);
      expect(res.status).toBe(400);
      expect(res.body).toMatchObject({
        error: 'invalid_grant',
        error_description: expect.stringMatching(/redirect_uri/),
      });
    }
    expect((await exchange(used)).status).toBe(200);
  });

  it('sends other errors back to the client with the unchanged state', async () => {
    const base = { response_type: 'code', code_challenge_method: 'S256', ...params() };
    await expectRedirectError({ ...base, response_type: 'token' }, 'unsupported_response_type');
    await expectRedirectError(
      { ...base, scope: 'read:vessels read:invoices' },
      'invalid_scope',
      /read:invoices/,
    );
    await expectRedirectError({ ...base, scope: 'read:everything' }, 'invalid_scope', /unknown scope/);
    await expectRedirectError(
      { ...base, scope: 'openid address read:vessels' },
      'invalid_scope',
      /unknown scope: address/,
    );
    await expectRedirectError(
      { ...base, scope: 'openid', nonce: 'n'.repeat(256) },
      'invalid_request',
      /nonce must be 1-255 characters/,
    );
    await expectRedirectError({ ...base, scope: '' }, 'invalid_scope', /scope is required/);
    const { code_challenge: _c, ...noChallenge } = base;
    await expectRedirectError(noChallenge, 'invalid_request', /code_challenge is required/);
    await expectRedirectError({ ...base, code_challenge_method: 'plain' }, 'invalid_request', /S256/);
    const { code_challenge_method: _m, ...noMethod } = base;
    await expectRedirectError(noMethod, 'invalid_request', /S256/);
    await expectRedirectError({ ...base, code_challenge: 'short' }, 'invalid_request', /43-character/);
  });

  it('unauthorized_client when the application may not use the authorization code grant', async () => {
    const machine = await registerClient(server, clock, {
      accountId: user.accountId,
      grantTypes: 'client_credentials',
      redirectUris: [REDIRECT],
    });
    await expectRedirectError(
      { response_type: 'code', code_challenge_method: 'S256', ...params(), client_id: machine.client_id },
      'unauthorized_client',
    );
  });

  it('admin is refused (invalid_scope) for a user without the admin role', async () => {
    await expectRedirectError(
      { response_type: 'code', code_challenge_method: 'S256', ...params(), scope: 'admin' },
      'invalid_scope',
      /admin role/,
    );
  });

  it('sends a signed-out browser to sign in and back, then lists every requested scope with its description', async () => {
    const fresh = new Browser(server.url);
    const url = authorizeUrl(params({ scope: 'vessels:read port-calls:read' }));
    const first = await fresh.fetch(url);
    expect(first.status).toBe(302);
    const login = new URL(first.headers.get('location')!, server.url);
    expect(login.pathname).toBe('/console/login');
    expect(login.searchParams.get('return_to')).toBe(url);
    const signIn = await fresh.login(user.email, PASSWORD, login.searchParams.get('return_to')!);
    expect(signIn.status).toBe(303);
    expect(signIn.headers.get('location')).toBe(url);
    const cookie = signIn.headers.getSetCookie().find((c) => c.startsWith('tg_session='))!;
    expect(cookie).toMatch(/HttpOnly/);
    expect(cookie).toMatch(/SameSite=Lax/);

    const page = await fresh.fetch(url);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-security-policy')).toMatch(/default-src 'self'.*frame-ancestors 'none'/);
    expect(page.headers.get('x-frame-options')).toBe('DENY');
    const html = await page.text();
    expect(html).not.toMatch(/<script>|<script [^>]*>[^<]+<\/script>|style=/);
    expect(html).toContain('<code>read:port_calls</code> — Read port calls and related data');
    expect(html).toContain('<code>read:vessels</code> — Read vessel information');
    expect(hiddenValue(html, 'csrf')).toBeTruthy();
  });

  it('Approve redirects with a code and the same state (and iss); Deny redirects with access_denied', async () => {
    const approved = await consent(browser, params());
    expect(`${approved.origin}${approved.pathname}`).toBe(REDIRECT);
    expect(approved.searchParams.get('code')).toBeTruthy();
    expect(approved.searchParams.get('state')).toBe('s-123');
    expect(approved.searchParams.get('iss')).toBe(server.config.publicUrl);

    const before = await codes();
    const denied = await consent(browser, params({ state: 'd-9' }), 'deny');
    expect(denied.searchParams.get('error')).toBe('access_denied');
    expect(denied.searchParams.get('state')).toBe('d-9');
    expect(denied.searchParams.get('code')).toBeNull();
    expect(await codes()).toBe(before);
  });

  it('refuses a decision without the session CSRF token (403, no code)', async () => {
    const before = await codes();
    const res = await browser.post('/oauth/authorize', {
      ...params(),
      response_type: 'code',
      code_challenge_method: 'S256',
      decision: 'approve',
      csrf: 'forged',
    });
    expect(res.status).toBe(403);
    expect(res.headers.get('location')).toBeNull();
    expect(await codes()).toBe(before);
  });

  it('never redirects off-site after sign-in (return_to is ours only)', async () => {
    const fresh = new Browser(server.url);
    const res = await fresh.login(user.email, PASSWORD, 'https://evil.example/');
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe('/console');
    const protocolRelative = await new Browser(server.url).login(user.email, PASSWORD, '//evil.example/');
    expect(protocolRelative.headers.get('location')).toBe('/console');
  });

  it('refuses a sign-in without the login CSRF cookie and a wrong password, creating no session', async () => {
    const sessions = () => server.database.db.em().count(AuthSession, {});
    const before = await sessions();
    const noCookie = await fetch(`${server.url}/console/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        csrf: 'x'.repeat(32),
        email: user.email,
        password: PASSWORD,
        return_to: '/console',
      }),
      redirect: 'manual',
    });
    expect(noCookie.status).toBe(403);
    const wrong = await new Browser(server.url).login(user.email, 'not the password');
    expect(wrong.status).toBe(401);
    expect(await wrong.text()).toContain('Email or password is incorrect.');
    expect(await sessions()).toBe(before);
  });

  it('the session expires (moved clock): the authorize step asks to sign in again', async () => {
    const b = new Browser(server.url);
    await b.login(user.email, PASSWORD);
    clock.advance(12 * 60 * MINUTE + MINUTE);
    const res = await b.fetch(authorizeUrl(params()));
    expect(res.status).toBe(302);
    expect(res.headers.get('location')).toMatch(/^\/console\/login\?return_to=/);
  });
});

describe('sign-in throttling from one address', () => {
  const clock = new ManualClock('2026-03-02T10:00:00.000Z');
  let server: TestServer;
  beforeAll(async () => {
    server = await startAuthServer({
      clock,
      env: { AUTH_LOGIN_MAX_FAILURES: '3', AUTH_THROTTLE_WINDOW: '15m' },
    });
  });
  afterAll(() => server?.close());

  it('answers 429 with Retry-After after repeated failures, even for the right password, until the window ends', async () => {
    const user = await createAnalystUser(server, clock);
    const browser = new Browser(server.url);
    for (let i = 0; i < 3; i++) expect((await browser.login(user.email, 'wrong password')).status).toBe(401);
    const blocked = await browser.login(user.email, PASSWORD);
    expect(blocked.status).toBe(429);
    expect(Number(blocked.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await blocked.text()).toMatch(/Too many failed sign-in attempts/);
    expect(blocked.headers.getSetCookie().some((c) => c.startsWith('tg_session='))).toBe(false);
    clock.advance(15 * MINUTE);
    expect((await browser.login(user.email, PASSWORD)).status).toBe(303);
  });
});
