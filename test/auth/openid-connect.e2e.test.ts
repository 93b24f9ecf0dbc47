import { createHash } from 'node:crypto';
import { createRemoteJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import * as oidc from 'openid-client';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { systemClock } from '../../src/kernel/clock.js';
import { describeEachDialect } from '../helpers/env.js';
import { gql, rest, type TestServer } from '../helpers/server.js';
import {
  Browser,
  createAnalystUser,
  PASSWORD,
  registerClient,
  startAuthServer,
  tokenRequest,
} from './helpers.js';

const REDIRECT = 'http://127.0.0.1:9/callback';

/** Every hidden field of the consent form, as a browser would post them. */
function hiddenFields(html: string): Record<string, string> {
  const fields: Record<string, string> = {};
  for (const [, name, value] of html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)"/g))
    fields[name!] = value!
      .replace(/&quot;/g, '"')
      .replace(/&#39;/g, "'")
      .replace(/&amp;/g, '&');
  return fields;
}

/** Signs in through the login form, approves on the consent page; returns the callback URL. */
async function signInAndApprove(server: TestServer, email: string, authorizationUrl: URL): Promise<URL> {
  const browser = new Browser(server.url);
  const signIn = await browser.login(
    email,
    PASSWORD,
    `${authorizationUrl.pathname}${authorizationUrl.search}`,
  );
  expect(signIn.status).toBe(303);
  const page = await browser.fetch(authorizationUrl.toString());
  expect(page.status).toBe(200);
  const html = await page.text();
  expect(html).toContain('See your email address');
  const decision = await browser.post('/oauth/authorize', { ...hiddenFields(html), decision: 'approve' });
  expect(decision.status).toBe(303);
  return new URL(decision.headers.get('location')!);
}

describeEachDialect('OpenID Connect sign-in with a relying-party library (openid-client 6)', (dialect) => {
  let server: TestServer;
  let user: { id: string; email: string; accountId: string };
  let registered: { client_id: string; client_secret: string | null };
  let config: oidc.Configuration;

  beforeAll(async () => {
    server = await startAuthServer({ dialect });
    user = await createAnalystUser(server, systemClock);
    registered = await registerClient(server, systemClock, {
      accountId: user.accountId,
      redirectUris: [REDIRECT],
      scopes: 'read:vessels',
      grantTypes: 'authorization_code refresh_token client_credentials',
    });
    config = await oidc.discovery(
      new URL(server.url),
      registered.client_id,
      registered.client_secret!,
      undefined,
      { execute: [oidc.allowInsecureRequests] },
    );
  });
  afterAll(() => server?.close());

  it('signs the user in: an ES256 ID token with nonce, auth_time and at_hash, then userinfo by scope', async () => {
    const startedAt = Math.floor(Date.now() / 1000) - 1;
    const verifier = oidc.randomPKCECodeVerifier();
    const nonce = oidc.randomNonce();
    const state = oidc.randomState();
    const url = oidc.buildAuthorizationUrl(config, {
      redirect_uri: REDIRECT,
      scope: 'openid profile email read:vessels',
      code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
      code_challenge_method: 'S256',
      nonce,
      state,
    });
    const callback = await signInAndApprove(server, user.email, url);

    const tokens = await oidc.authorizationCodeGrant(config, callback, {
      pkceCodeVerifier: verifier,
      expectedNonce: nonce,
      expectedState: state,
      idTokenExpected: true,
    });
    expect(tokens.scope).toBe('openid profile email read:vessels');
    const claims = tokens.claims()!;
    expect(claims).toMatchObject({
      iss: server.config.publicUrl,
      sub: user.id,
      aud: registered.client_id,
      nonce,
    });
    expect(claims.exp - claims.iat).toBe(3600);
    expect(claims.auth_time).toBeGreaterThanOrEqual(startedAt);
    expect(claims.auth_time).toBeLessThanOrEqual(claims.iat);
    const atHash = createHash('sha256').update(tokens.access_token).digest().subarray(0, 16);
    expect(claims.at_hash).toBe(atHash.toString('base64url'));

    // Signed with the server's published key (openid-client trusts the token endpoint's TLS instead).
    const idToken = tokens.id_token!;
    expect(decodeProtectedHeader(idToken)).toMatchObject({ alg: 'ES256', typ: 'JWT' });
    const jwks = createRemoteJWKSet(new URL(`${server.url}/.well-known/jwks.json`));
    await expect(
      jwtVerify(idToken, jwks, { issuer: server.config.publicUrl, audience: registered.client_id }),
    ).resolves.toBeTruthy();

    const info = await oidc.fetchUserInfo(config, tokens.access_token, user.id);
    expect(info).toEqual({
      sub: user.id,
      name: 'Ana Lyst',
      email: user.email,
      email_verified: false,
      account_id: user.accountId,
      plan: 'ANALYST',
    });

    // The access token works on the API with its API scopes only; the ID token is no access token.
    const viewer = await gql(server.url, '{ viewer { scopes } }', {
      headers: { authorization: `Bearer ${tokens.access_token}` },
    });
    expect(viewer.body.data?.viewer).toEqual({ scopes: ['read:vessels'] });
    expect((await rest(server.url, '/v1/vessels/lookup?imo=9074729', { bearer: idToken })).status).toBe(401);

    // A refresh keeps the grant (openid included) and answers without a new ID token.
    const refreshed = await oidc.refreshTokenGrant(config, tokens.refresh_token!);
    expect(refreshed.scope).toBe('openid profile email read:vessels');
    expect(refreshed.id_token).toBeUndefined();
  });

  it('without a nonce the ID token has none; without openid there is no ID token', async () => {
    const run = async (scope: string) => {
      const verifier = oidc.randomPKCECodeVerifier();
      const state = oidc.randomState();
      const url = oidc.buildAuthorizationUrl(config, {
        redirect_uri: REDIRECT,
        scope,
        code_challenge: await oidc.calculatePKCECodeChallenge(verifier),
        code_challenge_method: 'S256',
        state,
      });
      const callback = await signInAndApprove(server, user.email, url);
      return oidc.authorizationCodeGrant(config, callback, {
        pkceCodeVerifier: verifier,
        expectedState: state,
      });
    };
    const signedIn = await run('openid email');
    expect(signedIn.claims()).toMatchObject({ sub: user.id, aud: registered.client_id });
    expect(signedIn.claims()).not.toHaveProperty('nonce');
    const plain = await run('email read:vessels');
    expect(plain.id_token).toBeUndefined();
    expect(await oidc.fetchUserInfo(config, plain.access_token, user.id)).toMatchObject({
      email: user.email,
    });
  });

  it('client_credentials refuses identity scopes: there is no user to describe', async () => {
    const res = await tokenRequest(server, {
      grant_type: 'client_credentials',
      scope: 'openid read:vessels',
      client_id: registered.client_id,
      client_secret: registered.client_secret!,
    });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({
      error: 'invalid_scope',
      error_description: 'openid describe a signed-in user; client_credentials has none',
    });
  });
});
