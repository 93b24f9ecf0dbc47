import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiKey } from '../../src/accounts/entities.js';
import { AuthSession, OAuthClient } from '../../src/auth/entities.js';
import { ManualClock, MINUTE, SECOND, systemClock } from '../../src/kernel/clock.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import {
  Browser,
  createAnalystUser,
  fromIp,
  hiddenValue,
  PASSWORD,
  registerClient,
  startAuthServer,
} from './helpers.js';

describe('console over HTTP: errors write nothing', () => {
  let server: TestServer;
  let user: { id: string; email: string; accountId: string };
  let browser: Browser;
  let csrf: string;
  const counts = async () => {
    const em = server.database.db.em();
    return { clients: await em.count(OAuthClient, {}), keys: await em.count(ApiKey, {}) };
  };

  beforeAll(async () => {
    server = await startAuthServer({ env: { AUTH_LOGIN_MAX_FAILURES: '1000' } });
    user = await createAnalystUser(server, systemClock);
    browser = new Browser(server.url);
    await browser.login(user.email, PASSWORD);
    csrf = hiddenValue(await (await browser.fetch('/console')).text(), 'csrf');
  });
  afterAll(() => server?.close());

  const app = (extra: Record<string, string | string[]> = {}) => ({
    csrf,
    name: 'App',
    redirect_uris: 'https://app.example/cb',
    scopes: ['read:vessels'],
    grant_types: ['authorization_code', 'refresh_token'],
    client_type: 'confidential',
    ...extra,
  });

  async function expectRejected(
    path: string,
    form: Record<string, string | string[]>,
    status: number,
    message: RegExp,
  ) {
    const before = await counts();
    const res = await browser.post(path, form);
    expect(res.status).toBe(status);
    expect(res.headers.get('content-type')).toMatch(/text\/html/);
    expect(await res.text()).toMatch(message);
    expect(await counts()).toEqual(before);
  }

  it('shows the sign-in page to a signed-out visitor, and refuses posts without a session', async () => {
    const anonymous = new Browser(server.url);
    const res = await anonymous.fetch('/console');
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toMatch(/^\/console\/login/);
    const before = await counts();
    expect((await anonymous.post('/console/clients', app())).status).toBe(303);
    expect(await counts()).toEqual(before);
  });

  it('refuses a form without the session CSRF token (403)', async () => {
    await expectRejected('/console/clients', app({ csrf: 'forged' }), 403, /CSRF/);
    await expectRejected('/console/keys', { name: 'k', scopes: 'read:vessels' }, 403, /CSRF/);
  });

  it('re-renders the console with a 400 naming the field for bad registrations', async () => {
    await expectRejected('/console/clients', app({ name: '' }), 400, /name: is required/);
    await expectRejected(
      '/console/clients',
      app({ redirect_uris: 'http://app.example/cb' }),
      400,
      /redirectUris: .*must use https/,
    );
    await expectRejected(
      '/console/clients',
      app({ scopes: [] }),
      400,
      /scopes: must name at least one scope/,
    );
    await expectRejected(
      '/console/clients',
      app({ client_type: 'public', grant_types: ['client_credentials'] }),
      400,
      /confidential client/,
    );
    await expectRejected('/console/clients', app({ scopes: ['admin'] }), 400, /admin role/);
    await expectRejected('/console/keys', { csrf, name: 'k', scopes: ['admin'] }, 400, /admin role/);
    await expectRejected('/console/keys', { csrf, name: 'k' }, 400, /scopes: must name at least one scope/);
  });

  /** POST a console action; expects 303 to the shown-once page and returns that page's HTML. */
  async function postAndFollow(b: Browser, path: string, form: Record<string, string | string[]>) {
    const res = await b.post(path, form);
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe('/console/shown-once');
    const page = await b.fetch('/console/shown-once');
    expect(page.status).toBe(200);
    expect(page.headers.get('cache-control')).toBe('no-store');
    return page.text();
  }

  async function expectGone(b: Browser) {
    const again = await b.fetch('/console/shown-once');
    expect(again.status).toBe(410);
    const html = await again.text();
    expect(html).toMatch(/No longer available/);
    expect(html).not.toMatch(/class="secret"/);
  }

  it('registers a public client without a secret', async () => {
    const html = await postAndFollow(browser, '/console/clients', app({ client_type: 'public' }));
    expect(html).toMatch(/id="client-id">tgc_/);
    expect(html).not.toMatch(/id="client-secret"/);
  });

  it('shows a new client secret once, after a redirect: a reload shows it is gone and registers nothing', async () => {
    const before = await counts();
    const res = await browser.post(
      '/console/clients',
      app({ name: 'Reload test', grant_types: ['client_credentials'] }),
    );
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe('/console/shown-once');
    expect(await counts()).toEqual({ ...before, clients: before.clients + 1 });
    const pending = await server.database.db.em().find(AuthSession, { flash: { $ne: null } });
    expect(pending).toHaveLength(1);

    // Another signed-in browser of the same user does not see this session's secret.
    const other = new Browser(server.url);
    await other.login(user.email, PASSWORD);
    await expectGone(other);

    const page = await browser.fetch('/console/shown-once');
    expect(page.status).toBe(200);
    expect(page.headers.get('cache-control')).toBe('no-store');
    const html = await page.text();
    const clientId = /id="client-id">(tgc_[^<]+)</.exec(html)![1]!;
    const secret = /id="client-secret">(tgcs_[^<]+)</.exec(html)![1]!;
    expect(html).toMatch(/shown only this once/);
    // While it waited, the secret was sealed in the session row, never stored readable.
    expect(pending[0]!.flash).not.toContain(secret);
    expect(await server.database.db.em().count(AuthSession, { flash: { $ne: null } })).toBe(0);

    await expectGone(browser);
    expect(await counts()).toEqual({ ...before, clients: before.clients + 1 });
    const token = await fetch(`${server.url}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'client_credentials',
        client_id: clientId,
        client_secret: secret,
      }),
    });
    expect(token.status).toBe(200);
  });

  it('rotates an API key: the new key is shown once after a redirect, the old one keeps its grace period', async () => {
    const created = await postAndFollow(browser, '/console/keys', {
      csrf,
      name: 'Rotation test',
      scopes: ['read:vessels'],
    });
    const oldKey = /id="api-key">(tg_[^<]+)</.exec(created)![1]!;
    const row = await server.database.db.em().findOneOrFail(ApiKey, { name: 'Rotation test' });

    await expectRejected(`/console/keys/${row.id}/rotate`, { csrf: 'forged' }, 403, /CSRF/);
    const before = await counts();
    const rotated = await postAndFollow(browser, `/console/keys/${row.id}/rotate`, { csrf });
    const newKey = /id="api-key">(tg_[^<]+)</.exec(rotated)![1]!;
    expect(newKey).not.toBe(oldKey);
    expect(rotated).toMatch(/The old key keeps working until \d{4}-\d{2}-\d{2}T/);
    expect(await counts()).toEqual({ ...before, keys: before.keys + 1 });
    await expectGone(browser);
    expect(await counts()).toEqual({ ...before, keys: before.keys + 1 });

    const lookup = (key: string) =>
      fetch(`${server.url}/v1/vessels/lookup?imo=9074729`, { headers: { 'x-api-key': key } }).then(
        (r) => r.status,
      );
    expect(await lookup(newKey)).toBe(200);
    expect(await lookup(oldKey)).toBe(200);
    const old = await server.database.db.em().findOneOrFail(ApiKey, { id: row.id });
    expect(old.expiresAt!.getTime() - Date.now()).toBeGreaterThan(23 * 3600 * 1000);
  });

  it('cannot touch another account’s application or key (404, nothing changed)', async () => {
    const foreignAccount = server.demo.accounts.find((a) => a.plan === 'INSTITUTIONAL')!.accountId;
    const foreign = await registerClient(server, systemClock, { accountId: foreignAccount });
    await expectRejected(`/console/clients/${foreign.client_id}/delete`, { csrf }, 404, /not found/);
    await expectRejected(`/console/clients/${foreign.client_id}/rotate-secret`, { csrf }, 404, /not found/);
    const foreignKey = await server.database.db.em().findOneOrFail(ApiKey, { account: foreignAccount });
    await expectRejected(`/console/keys/${foreignKey.id}/revoke`, { csrf }, 404, /not found/);
    const still = await server.database.db.em().findOneOrFail(ApiKey, { id: foreignKey.id });
    expect(still.revokedAt).toBeNull();
  });

  it('serves its own assets, with no inline script on any page', async () => {
    const css = await fetch(`${server.url}/console/assets/console.css`);
    expect(css.headers.get('content-type')).toMatch(/text\/css/);
    const js = await fetch(`${server.url}/console/assets/console.js`);
    expect(js.headers.get('content-type')).toMatch(/javascript/);
    const page = await (await browser.fetch('/console')).text();
    expect(page).not.toMatch(/<script>|on(click|load|submit)=|style="/);
    expect(page).not.toMatch(/https?:\/\/(?!127\.0\.0\.1)[^"]*\.(js|css)/);
  });

  it('signs out: the session ends', async () => {
    const b = new Browser(server.url);
    await b.login(user.email, PASSWORD);
    const token = hiddenValue(await (await b.fetch('/console')).text(), 'csrf');
    expect((await b.post('/console/logout', { csrf: token })).status).toBe(303);
    expect((await b.fetch('/console')).status).toBe(303);
  });
});

describe('console sign-in throttling: per source IP and per (IP, email), never per email alone', () => {
  let server: TestServer;
  let user: { id: string; email: string; accountId: string };
  beforeAll(async () => {
    server = await startAuthServer({
      env: {
        TRUST_PROXY: 'true',
        AUTH_LOGIN_MAX_FAILURES: '3',
        AUTH_LOGIN_MAX_FAILURES_PER_IP: '5',
      },
    });
    user = await createAnalystUser(server, systemClock);
  });
  afterAll(() => server?.close());

  async function expectThrottled(res: Response) {
    expect(res.status).toBe(429);
    expect(Number(res.headers.get('retry-after'))).toBeGreaterThan(0);
    expect(await res.text()).toMatch(/Too many failed sign-in attempts from your network/);
  }

  it('an IP that keeps guessing a password gets 429, even with the right one; the owner elsewhere signs in', async () => {
    const attacker = new Browser(server.url, fromIp('198.51.100.7'));
    for (let i = 0; i < 3; i++) expect((await attacker.login(user.email, `guess-${i}`)).status).toBe(401);
    const sessions = () => server.database.db.em().count(AuthSession, {});
    const before = await sessions();
    await expectThrottled(await attacker.login(user.email, PASSWORD));
    // The email is spelled differently: it is the same account, so the same counter.
    await expectThrottled(await attacker.login(user.email.toUpperCase(), PASSWORD));
    expect(await sessions()).toBe(before);

    const owner = new Browser(server.url, fromIp('203.0.113.10'));
    const res = await owner.login(user.email, PASSWORD);
    expect(res.status).toBe(303);
    expect(res.headers.get('location')).toBe('/console');
    expect((await owner.fetch('/console')).status).toBe(200);
    expect(await sessions()).toBe(before + 1);
  });

  it('an IP trying many emails is stopped by the per-IP limit; other IPs are not', async () => {
    const sprayer = new Browser(server.url, fromIp('198.51.100.99'));
    for (let i = 0; i < 5; i++)
      expect((await sprayer.login(`nobody${i}@example.com`, 'wrong-password')).status).toBe(401);
    await expectThrottled(await sprayer.login(user.email, PASSWORD));
    expect((await new Browser(server.url, fromIp('203.0.113.11')).login(user.email, PASSWORD)).status).toBe(
      303,
    );
  });
});

describe('console cookies', () => {
  const setCookies = async (server: TestServer) => {
    const user = await createAnalystUser(server, systemClock);
    const b = new Browser(server.url);
    const form = await b.fetch('/console/login');
    const login = await b.login(user.email, PASSWORD);
    expect(login.status).toBe(303);
    return [...form.headers.getSetCookie(), ...login.headers.getSetCookie()];
  };

  it('are Secure, HttpOnly and SameSite=Lax when PUBLIC_URL is https', async () => {
    const server = await startTestServer({ env: { PUBLIC_URL: 'https://auth.example.test' } });
    try {
      const cookies = await setCookies(server);
      expect(cookies.some((c) => c.startsWith('tg_login_csrf='))).toBe(true);
      expect(cookies.some((c) => c.startsWith('tg_session='))).toBe(true);
      for (const cookie of cookies) {
        expect(cookie).toMatch(/; Secure/);
        expect(cookie).toMatch(/; HttpOnly/);
        expect(cookie).toMatch(/; SameSite=Lax/);
      }
    } finally {
      await server.close();
    }
  });

  it('are not Secure when PUBLIC_URL is http (a browser would drop them)', async () => {
    const server = await startAuthServer();
    try {
      const cookies = await setCookies(server);
      expect(cookies.some((c) => c.startsWith('tg_session='))).toBe(true);
      for (const cookie of cookies) {
        expect(cookie).not.toMatch(/Secure/);
        expect(cookie).toMatch(/; HttpOnly/);
      }
    } finally {
      await server.close();
    }
  });
});

describe('console shown-once page: the sealed flash lasts 5 minutes', () => {
  it('shows a new key up to 5 minutes after the redirect; later the page is 410 and the flash is gone', async () => {
    const clock = new ManualClock('2026-03-02T10:00:00.000Z');
    const server = await startAuthServer({ clock });
    try {
      const user = await createAnalystUser(server, clock);
      const b = new Browser(server.url);
      await b.login(user.email, PASSWORD);
      const csrf = hiddenValue(await (await b.fetch('/console')).text(), 'csrf');
      const createKey = async (name: string) => {
        const res = await b.post('/console/keys', { csrf, name, scopes: ['read:vessels'] });
        expect(res.status).toBe(303);
      };
      const flashes = () => server.database.db.em().count(AuthSession, { flash: { $ne: null } });

      await createKey('In time');
      clock.advance(5 * MINUTE - SECOND);
      const shown = await b.fetch('/console/shown-once');
      expect(shown.status).toBe(200);
      expect(await shown.text()).toMatch(/id="api-key">tg_/);

      await createKey('Too late');
      clock.advance(5 * MINUTE + SECOND);
      const late = await b.fetch('/console/shown-once');
      expect(late.status).toBe(410);
      const html = await late.text();
      expect(html).toMatch(/No longer available/);
      expect(html).not.toMatch(/class="secret"/);
      expect(await flashes()).toBe(0);
    } finally {
      await server.close();
    }
  });
});
