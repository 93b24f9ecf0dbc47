import { afterAll, beforeAll, expect, it } from 'vitest';
import { AuthSession } from '../../src/auth/entities.js';
import { ManualClock } from '../../src/kernel/clock.js';
import { describeEachDialect } from '../helpers/env.js';
import type { TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import {
  Browser,
  command,
  createAnalystUser,
  exchangeCode,
  obtainCode,
  PASSWORD,
  registerClient,
  startAuthServer,
  tokenRequest,
  vesselStatus,
} from './helpers.js';

/** `tidegate users reset-password`: the new password ends everything the old one opened. */
describeEachDialect('users reset-password ends the old sign-ins', (dialect) => {
  const clock = new ManualClock('2026-03-02T10:00:00.000Z');
  let server: TestServer;
  let user: { id: string; email: string; accountId: string };
  let other: { id: string; email: string; accountId: string };
  let client: { client_id: string; client_secret: string | null };

  beforeAll(async () => {
    server = await startAuthServer({ dialect, clock, env: { AUTH_DENYLIST_REFRESH: '1s' } });
    user = await createAnalystUser(server, clock);
    other = await createAnalystUser(server, clock, 'otto@example.com');
    client = await registerClient(server, clock, {
      accountId: user.accountId,
      grantTypes: 'authorization_code refresh_token',
    });
  });
  afterAll(() => server?.close());

  const reset = (email: string) =>
    command('users reset-password').run(
      { config: server.config, db: server.database.db, clock },
      { options: { email }, positionals: [] },
    );
  const refresh = (refreshToken: string) =>
    tokenRequest(server, {
      grant_type: 'refresh_token',
      refresh_token: refreshToken,
      client_id: client.client_id,
      client_secret: client.client_secret!,
    });

  it('ends console sessions, revokes the grant and its access token, and voids codes not yet exchanged', async () => {
    // Three browsers signed in as the user: one holds the console, one completed an authorization-code
    // grant, one has a code it has not exchanged yet. The other user's session must survive.
    const consoleBrowser = new Browser(server.url);
    expect((await consoleBrowser.login(user.email, PASSWORD)).status).toBe(303);
    expect((await consoleBrowser.fetch('/console')).status).toBe(200);
    const tokens = await exchangeCode(server, user, client);
    const pending = await obtainCode(server, user, client);
    const otherBrowser = new Browser(server.url);
    await otherBrowser.login(other.email, PASSWORD);
    expect(await vesselStatus(server, tokens.access_token)).toBe(200);

    const { json, text } = await reset(user.email.toUpperCase());
    expect(json).toMatchObject({
      email: user.email,
      sessions_ended: 3,
      grants_revoked: 1,
      access_tokens_revoked: 1,
    });
    expect(text).toMatch(/Ended 3 console session\(s\); revoked 1 OAuth grant\(s\) and 1 access token\(s\)/);

    // The old console session is refused (back to the sign-in page); the old password no longer signs in.
    const consolePage = await consoleBrowser.fetch('/console');
    expect(consolePage.status).toBe(303);
    expect(consolePage.headers.get('location')).toMatch(/^\/console\/login/);
    expect((await new Browser(server.url).login(user.email, PASSWORD)).status).not.toBe(303);
    // The refresh token from the authorization-code grant is refused.
    const refused = await refresh(tokens.refresh_token);
    expect(refused.status).toBe(400);
    expect(refused.body.error).toBe('invalid_grant');
    // A code issued before the reset can no longer be exchanged.
    const exchanged = await tokenRequest(server, {
      grant_type: 'authorization_code',
      code: pending.code,
      code_verifier: pending.verifier,
      redirect_uri: pending.redirectUri,
      client_id: client.client_id,
      client_secret: client.client_secret!,
    });
    expect(exchanged.status).toBe(400);
    expect(exchanged.body.error).toBe('invalid_grant');
    // The access token is on the deny-list, which the server reloads every AUTH_DENYLIST_REFRESH.
    const status = await waitFor(
      () => vesselStatus(server, tokens.access_token),
      (s) => s !== 200,
      { what: 'the deny-list reload', timeoutMs: 15_000, intervalMs: 50 },
    );
    expect(status).toBe(401);
    // Another user's session is untouched.
    expect((await otherBrowser.fetch('/console')).status).toBe(200);
    expect(await server.database.db.em().count(AuthSession, { userId: other.id })).toBe(1);
  });

  it('an unknown email is NOT_FOUND and changes nothing', async () => {
    const browser = new Browser(server.url);
    await browser.login(other.email, PASSWORD);
    const sessions = await server.database.db.em().count(AuthSession, {});
    await expect(reset('nobody@example.com')).rejects.toMatchObject({
      code: 'NOT_FOUND',
      message: "User 'nobody@example.com' was not found",
    });
    expect(await server.database.db.em().count(AuthSession, {})).toBe(sessions);
    expect((await browser.fetch('/console')).status).toBe(200);
  });
});
