import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiKey } from '../../src/accounts/entities.js';
import { OAuthClient } from '../../src/auth/entities.js';
import { systemClock } from '../../src/kernel/clock.js';
import type { TestServer } from '../helpers/server.js';
import {
  Browser,
  createAnalystUser,
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

  it('registers a public client without a secret', async () => {
    const res = await browser.post('/console/clients', app({ client_type: 'public' }));
    expect(res.status).toBe(200);
    const html = await res.text();
    expect(html).toMatch(/id="client-id">tgc_/);
    expect(html).not.toMatch(/id="client-secret"/);
    expect(res.headers.get('cache-control')).toBe('no-store');
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
