import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OAuthClient, RefreshToken } from '../../src/auth/entities.js';
import type { DomainEvent } from '../../src/kernel/events.js';
import { DAY, HOUR, ManualClock, SECOND } from '../../src/kernel/clock.js';
import type { Json, TestServer } from '../helpers/server.js';
import {
  command,
  getJson,
  createAnalystUser,
  exchangeCode,
  postForm,
  registerClient,
  startAuthServer,
  tokenRequest,
  tokenRows,
  vesselStatus,
} from './helpers.js';

describe('discovery, JWKS, revoke, introspect, userinfo and the CLI', () => {
  const clock = new ManualClock('2026-03-02T10:00:00.000Z');
  let server: TestServer;
  let user: { id: string; email: string; accountId: string };
  let client: { client_id: string; client_secret: string | null };
  const published: DomainEvent[] = [];
  const cli = () => ({ config: server.config, db: server.database.db, clock });

  beforeAll(async () => {
    server = await startAuthServer({
      clock,
      env: { AUTH_CLIENT_MAX_FAILURES: '1000', AUTH_DENYLIST_REFRESH: '1s' },
    });
    // A test double for the publisher: what the authorization server publishes after its commits.
    server.app.services.events = { live: true, publish: async (events) => void published.push(...events) };
    user = await createAnalystUser(server, clock);
    client = await registerClient(server, clock, {
      accountId: user.accountId,
      grantTypes: 'authorization_code refresh_token client_credentials',
    });
  });
  afterAll(() => server?.close());

  const auth = () => ({ client_id: client.client_id, client_secret: client.client_secret! });

  it('publishes the same metadata at both well-known paths, issuer from PUBLIC_URL', async () => {
    const oidc = await getJson(`${server.url}/.well-known/openid-configuration`);
    const rfc8414 = await getJson(`${server.url}/.well-known/oauth-authorization-server`);
    expect(oidc).toEqual(rfc8414);
    const issuer = server.config.publicUrl;
    expect(oidc).toMatchObject({
      issuer,
      authorization_endpoint: `${issuer}/oauth/authorize`,
      token_endpoint: `${issuer}/oauth/token`,
      revocation_endpoint: `${issuer}/oauth/revoke`,
      introspection_endpoint: `${issuer}/oauth/introspect`,
      userinfo_endpoint: `${issuer}/oauth/userinfo`,
      jwks_uri: `${issuer}/.well-known/jwks.json`,
      response_types_supported: ['code'],
      grant_types_supported: ['authorization_code', 'refresh_token', 'client_credentials'],
      code_challenge_methods_supported: ['S256'],
      token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'none'],
      revocation_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'none'],
      introspection_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
    });
    expect(oidc.scopes_supported).toContain('read:port_calls');
    expect(oidc.scopes_supported).toContain('admin');
    // Only console sessions carry it: no app may ask for it.
    expect(oidc.scopes_supported).not.toContain('credentials:manage');
    expect(oidc.scopes_supported.slice(0, 3)).toEqual(['openid', 'profile', 'email']);
    expect(oidc).toMatchObject({
      subject_types_supported: ['public'],
      id_token_signing_alg_values_supported: ['ES256'],
      response_types_supported: ['code'],
    });
    expect(oidc.claims_supported).toEqual(
      expect.arrayContaining(['sub', 'auth_time', 'nonce', 'at_hash', 'name', 'email', 'email_verified']),
    );
  });

  it('JWKS publishes the signing key; a rotated-in key is published at once, signs after the JWKS max-age, and the old one stays until its tokens expire', async () => {
    const jwksRes = await fetch(`${server.url}/.well-known/jwks.json`);
    expect(jwksRes.headers.get('cache-control')).toBe('public, max-age=300');
    const before = (await jwksRes.json()) as Json;
    expect(before.keys).toHaveLength(1);
    expect(before.keys[0]).toMatchObject({ kty: 'EC', crv: 'P-256', alg: 'ES256', use: 'sig' });
    expect(before.keys[0].d).toBeUndefined();
    const oldKid = before.keys[0].kid;
    const issue = async () =>
      (await tokenRequest(server, { grant_type: 'client_credentials', ...auth() })).body
        .access_token as string;
    const kidOf = (t: string) => JSON.parse(Buffer.from(t.split('.')[0]!, 'base64url').toString()).kid;
    const oldToken = await issue();
    expect(kidOf(oldToken)).toBe(oldKid);

    const rotatedAt = clock.now().getTime();
    const { json } = await command('keys rotate-signing').run(cli(), { options: {}, positionals: [] });
    const rotated = json as { kid: string; activates_at: string };
    expect(new Date(rotated.activates_at).getTime()).toBe(rotatedAt + 300 * SECOND);
    const newKid = rotated.kid;
    // Published at once, so verifiers that refetch now know it before it is ever used…
    const after = await getJson(`${server.url}/.well-known/jwks.json`);
    expect(after.keys.map((k: { kid: string }) => k.kid)).toEqual([newKid, oldKid]);
    expect(after.keys.every((k: Json) => k.d === undefined)).toBe(true);
    // …while the old key keeps signing until every cached copy without the new key has expired.
    expect(kidOf(await issue())).toBe(oldKid);
    clock.advance(300 * SECOND - 1);
    const lastOld = await issue();
    expect(kidOf(lastOld)).toBe(oldKid);
    clock.advance(1);
    const newToken = await issue();
    expect(kidOf(newToken)).toBe(newKid);
    expect(await vesselStatus(server, oldToken)).toBe(200);
    expect(await vesselStatus(server, lastOld)).toBe(200);
    expect(await vesselStatus(server, newToken)).toBe(200);

    // The old key stays published until the last token it signed has expired (one hour after it stopped).
    const publishedKids = async () =>
      (await getJson(`${server.url}/.well-known/jwks.json`)).keys.map((k: Json) => k.kid);
    clock.advance(HOUR - 2 * SECOND);
    expect(await vesselStatus(server, lastOld)).toBe(200);
    expect(await publishedKids()).toEqual([newKid, oldKid]);
    clock.advance(SECOND);
    expect(await vesselStatus(server, lastOld)).toBe(401);
    expect(await publishedKids()).toEqual([newKid, oldKid]);
    clock.advance(SECOND);
    expect(await publishedKids()).toEqual([newKid]);
  });

  it('keys rotate-signing --now signs with the new key at once (emergency), retiring the old one now', async () => {
    const { json } = await command('keys rotate-signing').run(cli(), {
      options: { now: true },
      positionals: [],
    });
    const rotated = json as { kid: string; activates_at: string };
    expect(new Date(rotated.activates_at).getTime()).toBe(clock.now().getTime());
    const token = (await tokenRequest(server, { grant_type: 'client_credentials', ...auth() })).body
      .access_token as string;
    expect(JSON.parse(Buffer.from(token.split('.')[0]!, 'base64url').toString()).kid).toBe(rotated.kid);
    expect(await vesselStatus(server, token)).toBe(200);
  });

  it('revoke (RFC 7009): 200 for unknown tokens, client authentication required, refresh revokes its family', async () => {
    expect((await postForm(server, '/oauth/revoke', { token: 'unknown-token', ...auth() })).status).toBe(200);
    expect(
      (
        await postForm(server, '/oauth/revoke', {
          token: 'eyJx.eyJ.y',
          token_type_hint: 'access_token',
          ...auth(),
        })
      ).status,
    ).toBe(200);
    const missing = await postForm(server, '/oauth/revoke', { ...auth() });
    expect(missing.status).toBe(400);
    expect(missing.body.error).toBe('invalid_request');
    const badClient = await postForm(server, '/oauth/revoke', {
      token: 'x',
      client_id: client.client_id,
      client_secret: 'wrong',
    });
    expect(badClient.status).toBe(401);
    expect(badClient.body.error).toBe('invalid_client');
    expect(badClient.headers.get('www-authenticate')).toMatch(/Basic/);

    const tokens = await exchangeCode(server, user, client);
    const rotated = await tokenRequest(server, {
      grant_type: 'refresh_token',
      refresh_token: tokens.refresh_token,
      ...auth(),
    });
    published.length = 0;
    const res = await postForm(server, '/oauth/revoke', {
      token: rotated.body.refresh_token as string,
      token_type_hint: 'refresh_token',
      ...auth(),
    });
    expect(res.status).toBe(200);
    expect(res.text).toBe('');
    expect(await vesselStatus(server, rotated.body.access_token as string)).toBe(401);
    const again = await tokenRequest(server, {
      grant_type: 'refresh_token',
      refresh_token: rotated.body.refresh_token as string,
      ...auth(),
    });
    expect(again.body.error).toBe('invalid_grant');
    expect(
      published
        .filter((e) => e.type === 'credential.revoked')
        .map((e) => (e.payload as { credentialId: string }).credentialId).length,
    ).toBeGreaterThanOrEqual(1);
  });

  it('revoking a token issued to another client is refused (400 unauthorized_client) and changes nothing', async () => {
    const other = await registerClient(server, clock, {
      accountId: user.accountId,
      grantTypes: 'authorization_code refresh_token client_credentials',
    });
    const otherAuth = { client_id: other.client_id, client_secret: other.client_secret! };
    const access = (await tokenRequest(server, { grant_type: 'client_credentials', ...auth() })).body
      .access_token as string;
    const { refresh_token: refresh } = await exchangeCode(server, user, client);
    for (const token of [access, refresh]) {
      const before = await tokenRows(server);
      const res = await postForm(server, '/oauth/revoke', { token, ...otherAuth });
      expect(res.status).toBe(400);
      expect(res.body).toEqual({
        error: 'unauthorized_client',
        error_description: 'the token was not issued to this client',
      });
      expect(await tokenRows(server)).toEqual(before);
    }
    expect(await vesselStatus(server, access)).toBe(200);
    expect(
      (await tokenRequest(server, { grant_type: 'refresh_token', refresh_token: refresh, ...auth() })).status,
    ).toBe(200);
  });

  it("another client's refresh token is refused in any state; its dead access token looks unknown (200)", async () => {
    const other = await registerClient(server, clock, {
      accountId: user.accountId,
      grantTypes: 'authorization_code refresh_token client_credentials',
    });
    const otherAuth = { client_id: other.client_id, client_secret: other.client_secret! };
    const revokeAs = async (token: string, expected: number) => {
      const before = await tokenRows(server);
      const res = await postForm(server, '/oauth/revoke', { token, ...otherAuth });
      expect(res.status).toBe(expected);
      if (expected === 400) expect(res.body.error).toBe('unauthorized_client');
      expect(await tokenRows(server)).toEqual(before);
    };

    const tokens = await exchangeCode(server, user, client);
    const rotated = await tokenRequest(server, {
      grant_type: 'refresh_token',
      refresh_token: tokens.refresh_token,
      ...auth(),
    });
    expect(rotated.status).toBe(200);
    await revokeAs(tokens.refresh_token, 400); // rotated (used)
    const current = rotated.body.refresh_token as string;
    expect((await postForm(server, '/oauth/revoke', { token: current, ...auth() })).status).toBe(200);
    await revokeAs(current, 400); // revoked

    const access = (await tokenRequest(server, { grant_type: 'client_credentials', ...auth() })).body
      .access_token as string;
    expect((await postForm(server, '/oauth/revoke', { token: access, ...auth() })).status).toBe(200);
    await revokeAs(access, 200); // revoked: no longer verifies, indistinguishable from unknown
  });

  it('a public client revokes its own tokens with its client_id alone', async () => {
    const pub = await registerClient(server, clock, { accountId: user.accountId, public: true });
    const tokens = await exchangeCode(server, user, pub);
    expect(await vesselStatus(server, tokens.access_token)).toBe(200);
    const res = await postForm(server, '/oauth/revoke', {
      token: tokens.refresh_token,
      client_id: pub.client_id,
    });
    expect(res.status).toBe(200);
    expect(await vesselStatus(server, tokens.access_token)).toBe(401);
    const rows = await server.database.db.em().find(RefreshToken, { clientId: pub.client_id });
    expect(rows.map((r) => r.revokedAt !== null)).toEqual([true]);
  });

  it('introspect (RFC 7662): active for live tokens of the caller’s account, inactive otherwise', async () => {
    const tokens = await exchangeCode(server, user, client);
    const access = await postForm(server, '/oauth/introspect', { token: tokens.access_token, ...auth() });
    expect(access.headers.get('cache-control')).toBe('no-store');
    expect(access.body).toMatchObject({
      active: true,
      token_type: 'Bearer',
      sub: user.id,
      client_id: client.client_id,
      scope: 'read:vessels',
      account_id: user.accountId,
    });
    const refresh = await postForm(server, '/oauth/introspect', { token: tokens.refresh_token, ...auth() });
    expect(refresh.body).toMatchObject({ active: true, sub: user.id });
    // token_type names an access token's type (RFC 7662 §2.2): a refresh token has none.
    expect(refresh.body).not.toHaveProperty('token_type');
    // A resource server of the same account (another confidential client) may introspect it too.
    const sibling = await registerClient(server, clock, {
      accountId: user.accountId,
      grantTypes: 'client_credentials',
    });
    const bySibling = await postForm(server, '/oauth/introspect', {
      token: tokens.access_token,
      client_id: sibling.client_id,
      client_secret: sibling.client_secret!,
    });
    expect(bySibling.body).toMatchObject({ active: true, client_id: client.client_id });
    const stranger = await registerClient(server, clock, {
      accountId: server.demo.accounts[0]!.accountId,
      grantTypes: 'client_credentials',
    });
    for (const token of [tokens.access_token, tokens.refresh_token]) {
      const foreign = await postForm(server, '/oauth/introspect', {
        token,
        client_id: stranger.client_id,
        client_secret: stranger.client_secret!,
      });
      expect(foreign.body).toEqual({ active: false });
    }
    await postForm(server, '/oauth/revoke', { token: tokens.access_token, ...auth() });
    expect(
      (await postForm(server, '/oauth/introspect', { token: tokens.access_token, ...auth() })).body,
    ).toEqual({ active: false });
    expect((await postForm(server, '/oauth/introspect', { token: 'garbage', ...auth() })).body).toEqual({
      active: false,
    });
  });

  it('introspect: a third-party client may introspect tokens issued to it for users of another account', async () => {
    // The app belongs to the Institutional account; the user who approved it is in the Analyst account.
    const thirdParty = await registerClient(server, clock, {
      accountId: server.demo.accounts.find((a) => a.plan === 'INSTITUTIONAL')!.accountId,
    });
    const tokens = await exchangeCode(server, user, thirdParty);
    const own = { client_id: thirdParty.client_id, client_secret: thirdParty.client_secret! };
    // RFC 7662 §2.2: token_type is the type of an access token ("Bearer"); a refresh token has none.
    for (const [token, type] of [
      [tokens.access_token, 'Bearer'],
      [tokens.refresh_token, undefined],
    ] as const) {
      const res = await postForm(server, '/oauth/introspect', { token, ...own });
      expect(res.body).toMatchObject({
        active: true,
        client_id: thirdParty.client_id,
        sub: user.id,
        account_id: user.accountId,
      });
      expect(res.body.token_type).toBe(type);
    }
  });

  it('introspect requires a confidential client: a public client gets 401 invalid_client and learns nothing', async () => {
    const pub = await registerClient(server, clock, { accountId: user.accountId, public: true });
    const tokens = await exchangeCode(server, user, pub);
    for (const token of [tokens.access_token, tokens.refresh_token, 'garbage']) {
      const res = await postForm(server, '/oauth/introspect', { token, client_id: pub.client_id });
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toMatch(/^Basic realm="tidegate"/);
      expect(res.body).toEqual({
        error: 'invalid_client',
        error_description: 'introspection requires a confidential client authenticated with its secret',
      });
    }
    const noClient = await postForm(server, '/oauth/introspect', { token: tokens.access_token });
    expect(noClient.status).toBe(401);
    expect(noClient.body.error).toBe('invalid_client');
  });

  it('userinfo: the claims the granted scopes allow', async () => {
    const claims = async (scope: string) => {
      const { access_token } = await exchangeCode(server, user, client, { scope });
      const res = await fetch(`${server.url}/oauth/userinfo`, {
        headers: { authorization: `Bearer ${access_token}` },
      });
      expect(res.status).toBe(200);
      return res.json();
    };
    const always = { sub: user.id, account_id: user.accountId, plan: 'ANALYST' };
    expect(await claims('read:vessels')).toEqual(always);
    expect(await claims('openid')).toEqual(always);
    expect(await claims('openid profile')).toEqual({ ...always, name: 'Ana Lyst' });
    expect(await claims('openid email read:vessels')).toEqual({
      ...always,
      email: user.email,
      email_verified: false,
    });
    expect(await claims('openid profile email')).toEqual({
      ...always,
      name: 'Ana Lyst',
      email: user.email,
      email_verified: false,
    });
  });

  it('userinfo without a token: a bare Bearer challenge, no error code (RFC 6750 §3.1)', async () => {
    for (const init of [{}, { method: 'POST' }]) {
      const res = await fetch(`${server.url}/oauth/userinfo`, init);
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toBe('Bearer realm="tidegate"');
      expect(((await res.json()) as Json).error).toBe('invalid_token');
    }
  });

  it('userinfo: 401 with WWW-Authenticate invalid_token for malformed, forged, revoked or machine tokens', async () => {
    const tokens = await exchangeCode(server, user, client);
    const ok = await fetch(`${server.url}/oauth/userinfo`, {
      headers: { authorization: `Bearer ${tokens.access_token}` },
    });
    expect(ok.status).toBe(200);
    const machine = (await tokenRequest(server, { grant_type: 'client_credentials', ...auth() })).body
      .access_token as string;
    await postForm(server, '/oauth/revoke', { token: tokens.access_token, ...auth() });
    const forged = `${tokens.access_token.slice(0, -4)}AAAA`;
    for (const header of [
      'Basic abc',
      'Bearer nonsense',
      `Bearer ${forged}`,
      `Bearer ${tokens.access_token}`,
      `Bearer ${machine}`,
    ]) {
      const res = await fetch(`${server.url}/oauth/userinfo`, { headers: { authorization: header } });
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toMatch(/^Bearer realm="tidegate", error="invalid_token"/);
      expect(((await res.json()) as Json).error).toBe('invalid_token');
    }
  });

  it('CLI clients create / rotate-secret / delete', async () => {
    const created = await registerClient(server, clock, {
      accountId: user.accountId,
      redirectUris: ['https://app.example/cb', 'http://localhost:8080/cb'],
      scopes: 'port-calls:read vessels:read',
      grantTypes: 'authorization_code refresh_token client_credentials',
    });
    expect(created).toMatchObject({
      client_type: 'confidential',
      scopes: ['read:port_calls', 'read:vessels'],
      redirect_uris: ['https://app.example/cb', 'http://localhost:8080/cb'],
    });
    expect(created.client_secret).toMatch(/^tgcs_/);
    const stored = await server.database.db.em().findOneOrFail(OAuthClient, { clientId: created.client_id });
    expect(stored.secretHash).toHaveLength(64);
    expect(stored.secretHash).not.toContain(created.client_secret);

    const { json } = await command('clients rotate-secret').run(cli(), {
      options: {},
      positionals: [created.client_id],
    });
    const rotated = json as { client_secret: string };
    const oldSecret = await tokenRequest(server, {
      grant_type: 'client_credentials',
      client_id: created.client_id,
      client_secret: created.client_secret!,
    });
    expect(oldSecret.status).toBe(401);
    const newSecret = await tokenRequest(server, {
      grant_type: 'client_credentials',
      client_id: created.client_id,
      client_secret: rotated.client_secret,
    });
    expect(newSecret.status).toBe(200);

    // Deleted from "another process" (the CLI): the server's deny-list catches up within AUTH_DENYLIST_REFRESH.
    const token = newSecret.body.access_token as string;
    expect(await vesselStatus(server, token)).toBe(200);
    const deleted = await command('clients delete').run(cli(), {
      options: {},
      positionals: [created.client_id],
    });
    expect(deleted.json).toMatchObject({
      client_id: created.client_id,
      deleted: true,
      revoked_access_tokens: 1,
    });
    let status = 200;
    for (let i = 0; i < 40 && status === 200; i++) {
      await new Promise((r) => setTimeout(r, 100));
      status = await vesselStatus(server, token);
    }
    expect(status).toBe(401);
    expect(
      (
        await tokenRequest(server, {
          grant_type: 'client_credentials',
          client_id: created.client_id,
          client_secret: rotated.client_secret,
        })
      ).status,
    ).toBe(401);
  });

  it('CLI clients create rejects bad input naming the field, and writes nothing', async () => {
    const count = () => server.database.db.em().count(OAuthClient, {});
    const before = await count();
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      [{ 'redirect-uri': ['not a url'] }, /redirectUris: 'not a url' is not an absolute URL/],
      [{ 'redirect-uri': ['http://app.example/cb'] }, /redirectUris: .*must use https/],
      [{ 'redirect-uri': ['https://app.example/cb#frag'] }, /fragment/],
      [{ 'redirect-uri': [] }, /at least one redirect URI/],
      [{ scopes: 'read:everything' }, /scopes: unknown scope: read:everything/],
      [{ 'grant-types': 'password' }, /grantTypes: unknown grant type: password/],
      [{ 'grant-types': 'client_credentials', public: true }, /confidential client/],
      [{ 'grant-types': 'refresh_token' }, /only issued with authorization_code/],
      [
        { account: '00000000-0000-4000-8000-000000000000' },
        /Account '00000000-0000-4000-8000-000000000000' was not found/,
      ],
    ];
    for (const [override, message] of cases) {
      await expect(
        command('clients create').run(cli(), {
          options: {
            account: user.accountId,
            name: 'Bad',
            'redirect-uri': ['https://app.example/cb'],
            scopes: 'read:vessels',
            ...override,
          },
          positionals: [],
        }),
      ).rejects.toThrow(message);
    }
    const secrets = async () =>
      (await server.database.db.em().find(OAuthClient, {}, { orderBy: { clientId: 'asc' } })).map((c) => [
        c.clientId,
        c.secretHash,
      ]);
    const secretsBefore = await secrets();
    await expect(
      command('clients rotate-secret').run(cli(), { options: {}, positionals: ['tgc_missing'] }),
    ).rejects.toThrow(/OAuth client 'tgc_missing' was not found/);
    expect(await count()).toBe(before);
    expect(await secrets()).toEqual(secretsBefore);
  });
});

describe('housekeeping', () => {
  it('purges rows that can no longer matter, keeping used codes long enough to detect late replays', async () => {
    const clock = new ManualClock('2026-03-02T10:00:00.000Z');
    const server = await startAuthServer({ clock });
    try {
      const user = await createAnalystUser(server, clock);
      const client = await registerClient(server, clock, { accountId: user.accountId });
      await exchangeCode(server, user, client);
      const runtime = server.app.auth;
      await runtime.purgeExpired(new Date(clock.now().getTime() + HOUR + SECOND));
      expect(await tokenRows(server)).toMatchObject({ access: 0, refresh: 1, codes: 1 });
      await runtime.purgeExpired(new Date(clock.now().getTime() + 31 * DAY));
      expect(await tokenRows(server)).toMatchObject({ access: 0, refresh: 0, codes: 0 });
    } finally {
      await server.close();
    }
  });
});
