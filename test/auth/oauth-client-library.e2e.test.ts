import * as oauth from 'oauth4webapi';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { systemClock } from '../../src/kernel/clock.js';
import { describeEachDialect } from '../helpers/env.js';
import { gql, rest, type TestServer } from '../helpers/server.js';
import {
  Browser,
  createAnalystUser,
  hiddenValue,
  PASSWORD,
  registerClient,
  startAuthServer,
} from './helpers.js';

const insecure = { [oauth.allowInsecureRequests]: true } as const;
const REDIRECT = 'http://127.0.0.1:9/callback';

/** Follows the authorization URL in a signed-in "browser", approves, returns the callback URL. */
async function approve(browser: Browser, authorizationUrl: URL): Promise<URL> {
  const page = await browser.fetch(authorizationUrl.toString());
  expect(page.status).toBe(200);
  const html = await page.text();
  const form: Record<string, string> = { decision: 'approve' };
  for (const name of [
    'csrf',
    'client_id',
    'redirect_uri',
    'response_type',
    'scope',
    'state',
    'code_challenge',
    'code_challenge_method',
  ]) {
    form[name] = hiddenValue(html, name);
  }
  const decision = await browser.post('/oauth/authorize', form);
  expect(decision.status).toBe(303);
  return new URL(decision.headers.get('location')!);
}

describeEachDialect('a standard OAuth client (oauth4webapi) against the running server', (dialect) => {
  let server: TestServer;
  let as: oauth.AuthorizationServer;
  let user: { id: string; email: string; accountId: string };
  let registered: { client_id: string; client_secret: string | null };

  beforeAll(async () => {
    server = await startAuthServer({ dialect });
    user = await createAnalystUser(server, systemClock);
    registered = await registerClient(server, systemClock, {
      accountId: user.accountId,
      redirectUris: [REDIRECT],
      scopes: 'read:vessels read:port_calls',
      grantTypes: 'authorization_code refresh_token client_credentials',
    });
    const issuer = new URL(server.url);
    as = await oauth.processDiscoveryResponse(
      issuer,
      await oauth.discoveryRequest(issuer, { algorithm: 'oidc', ...insecure }),
    );
  });
  afterAll(() => server?.close());

  it('completes code + PKCE, refresh with rotation, userinfo and revocation using only discovery', async () => {
    const client: oauth.Client = { client_id: registered.client_id };
    const clientAuth = oauth.ClientSecretPost(registered.client_secret!);
    const verifier = oauth.generateRandomCodeVerifier();
    const state = oauth.generateRandomState();
    const url = new URL(as.authorization_endpoint!);
    url.search = new URLSearchParams({
      client_id: client.client_id,
      redirect_uri: REDIRECT,
      response_type: 'code',
      scope: 'vessels:read port-calls:read',
      state,
      code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
    }).toString();

    const browser = new Browser(server.url);
    const signIn = await browser.login(user.email, PASSWORD, `${url.pathname}${url.search}`);
    expect(signIn.status).toBe(303);
    const callback = await approve(browser, url);
    expect(callback.searchParams.get('state')).toBe(state);
    const params = oauth.validateAuthResponse(as, client, callback, state);

    const tokens = await oauth.processAuthorizationCodeResponse(
      as,
      client,
      await oauth.authorizationCodeGrantRequest(as, client, clientAuth, params, REDIRECT, verifier, insecure),
    );
    expect(tokens).toMatchObject({
      token_type: 'bearer',
      expires_in: 3600,
      scope: 'read:port_calls read:vessels',
    });
    expect(tokens.refresh_token).toMatch(/^tgr_/);

    const info = await oauth.processUserInfoResponse(
      as,
      client,
      user.id,
      await oauth.userInfoRequest(as, client, tokens.access_token, insecure),
    );
    // No profile or email scope: userinfo names the user and the account, nothing personal.
    expect(info).toEqual({ sub: user.id, account_id: user.accountId, plan: 'ANALYST' });

    const refreshed = await oauth.processRefreshTokenResponse(
      as,
      client,
      await oauth.refreshTokenGrantRequest(as, client, clientAuth, tokens.refresh_token!, insecure),
    );
    expect(refreshed.refresh_token).toMatch(/^tgr_/);
    expect(refreshed.refresh_token).not.toBe(tokens.refresh_token);
    expect(refreshed.access_token).not.toBe(tokens.access_token);

    const lookup = await rest(server.url, '/v1/vessels/lookup?imo=9074729', {
      bearer: refreshed.access_token,
    });
    expect(lookup.status).toBe(200);
    expect(lookup.body.imo).toBe('9074729');
    const viewer = await gql(server.url, '{ viewer { scopes credentialKind userId clientId plan } }', {
      headers: { authorization: `Bearer ${refreshed.access_token}` },
    });
    expect(viewer.body.data?.viewer).toEqual({
      scopes: ['read:port_calls', 'read:vessels'],
      credentialKind: 'oauth_token',
      userId: user.id,
      clientId: client.client_id,
      plan: 'ANALYST',
    });

    const introspected = await oauth.processIntrospectionResponse(
      as,
      client,
      await oauth.introspectionRequest(as, client, clientAuth, refreshed.access_token, insecure),
    );
    expect(introspected).toMatchObject({
      active: true,
      client_id: client.client_id,
      sub: user.id,
      scope: 'read:port_calls read:vessels',
    });

    await oauth.processRevocationResponse(
      await oauth.revocationRequest(as, client, clientAuth, refreshed.access_token, insecure),
    );
    const afterRevoke = await rest(server.url, '/v1/vessels/lookup?imo=9074729', {
      bearer: refreshed.access_token,
    });
    expect(afterRevoke.status).toBe(401);
    expect(afterRevoke.headers.get('www-authenticate')).toMatch(/error="invalid_token"/);
    const gqlAfter = await gql(server.url, '{ viewer { scopes } }', {
      headers: { authorization: `Bearer ${refreshed.access_token}` },
    });
    expect(gqlAfter.status).toBe(401);
  });

  it('gets a client_credentials token with basic authentication, without a refresh token', async () => {
    const client: oauth.Client = { client_id: registered.client_id };
    const tokens = await oauth.processClientCredentialsResponse(
      as,
      client,
      await oauth.clientCredentialsGrantRequest(
        as,
        client,
        oauth.ClientSecretBasic(registered.client_secret!),
        new URLSearchParams({ scope: 'read:vessels' }),
        insecure,
      ),
    );
    expect(tokens).toMatchObject({ token_type: 'bearer', expires_in: 3600, scope: 'read:vessels' });
    expect(tokens.refresh_token).toBeUndefined();
    const viewer = await gql(server.url, '{ viewer { accountId scopes userId clientId } }', {
      headers: { authorization: `Bearer ${tokens.access_token}` },
    });
    expect(viewer.body.data?.viewer).toEqual({
      accountId: user.accountId,
      scopes: ['read:vessels'],
      userId: null,
      clientId: client.client_id,
    });
    // A machine token has no user: userinfo refuses it.
    const info = await fetch(as.userinfo_endpoint!, {
      headers: { authorization: `Bearer ${tokens.access_token}` },
    });
    expect(info.status).toBe(401);
    expect(info.headers.get('www-authenticate')).toMatch(/error="invalid_token"/);
  });
});
