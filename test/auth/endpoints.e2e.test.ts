import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OAuthClient, RefreshToken } from '../../src/auth/entities.js';
import type { DomainEvent } from '../../src/gateway/context.js';
import { authRuntimeOf } from '../../src/auth/module.js';
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
    server.app.services.events = { publish: async (events) => void published.push(...events) };
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
    });
    expect(oidc.scopes_supported).toContain('read:port_calls');
    expect(oidc.scopes_supported).toContain('admin');
  });

  it('JWKS publishes the signing key; rotation adds a key and keeps the old one until its tokens expire', async () => {
    const before = await getJson(`${server.url}/.well-known/jwks.json`);
    expect(before.keys).toHaveLength(1);
    expect(before.keys[0]).toMatchObject({ kty: 'EC', crv: 'P-256', alg: 'ES256', use: 'sig' });
    expect(before.keys[0].d).toBeUndefined();
    const oldToken = (await tokenRequest(server, { grant_type: 'client_credentials', ...auth() })).body
      .access_token as string;
    const kidOf = (t: string) => JSON.parse(Buffer.from(t.split('.')[0]!, 'base64url').toString()).kid;
    expect(kidOf(oldToken)).toBe(before.keys[0].kid);

    const { json } = await command('keys rotate-signing').run(cli(), { options: {}, positionals: [] });
    const newKid = (json as { kid: string }).kid;
    const after = await getJson(`${server.url}/.well-known/jwks.json`);
    expect(after.keys.map((k: { kid: string }) => k.kid)).toEqual([newKid, before.keys[0].kid]);
    const newToken = (await tokenRequest(server, { grant_type: 'client_credentials', ...auth() })).body
      .access_token as string;
    expect(kidOf(newToken)).toBe(newKid);
    expect(await vesselStatus(server, oldToken)).toBe(200);
    expect(await vesselStatus(server, newToken)).toBe(200);

    clock.advance(HOUR + SECOND);
    const later = await getJson(`${server.url}/.well-known/jwks.json`);
    expect(later.keys.map((k: { kid: string }) => k.kid)).toEqual([newKid]);
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

  it('revoking another client’s token answers 200 and changes nothing', async () => {
    const other = await registerClient(server, clock, {
      accountId: user.accountId,
      grantTypes: 'client_credentials',
    });
    const token = (await tokenRequest(server, { grant_type: 'client_credentials', ...auth() })).body
      .access_token as string;
    const before = await tokenRows(server);
    const res = await postForm(server, '/oauth/revoke', {
      token,
      client_id: other.client_id,
      client_secret: other.client_secret!,
    });
    expect(res.status).toBe(200);
    expect(await tokenRows(server)).toEqual(before);
    expect(await vesselStatus(server, token)).toBe(200);
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
    expect(refresh.body).toMatchObject({ active: true, token_type: 'refresh_token', sub: user.id });
    const stranger = await registerClient(server, clock, {
      accountId: server.demo.accounts[0]!.accountId,
      grantTypes: 'client_credentials',
    });
    const foreign = await postForm(server, '/oauth/introspect', {
      token: tokens.access_token,
      client_id: stranger.client_id,
      client_secret: stranger.client_secret!,
    });
    expect(foreign.body).toEqual({ active: false });
    await postForm(server, '/oauth/revoke', { token: tokens.access_token, ...auth() });
    expect(
      (await postForm(server, '/oauth/introspect', { token: tokens.access_token, ...auth() })).body,
    ).toEqual({ active: false });
    expect((await postForm(server, '/oauth/introspect', { token: 'garbage', ...auth() })).body).toEqual({
      active: false,
    });
  });

  it('userinfo: 401 with WWW-Authenticate invalid_token for missing, forged, revoked or machine tokens', async () => {
    const tokens = await exchangeCode(server, user, client);
    const ok = await fetch(`${server.url}/oauth/userinfo`, {
      headers: { authorization: `Bearer ${tokens.access_token}` },
    });
    expect(ok.status).toBe(200);
    expect(await ok.json()).toEqual({
      sub: user.id,
      email: user.email,
      name: 'Ana Lyst',
      account_id: user.accountId,
      plan: 'ANALYST',
    });
    const machine = (await tokenRequest(server, { grant_type: 'client_credentials', ...auth() })).body
      .access_token as string;
    await postForm(server, '/oauth/revoke', { token: tokens.access_token, ...auth() });
    const forged = `${tokens.access_token.slice(0, -4)}AAAA`;
    for (const header of [
      undefined,
      'Bearer nonsense',
      `Bearer ${forged}`,
      `Bearer ${tokens.access_token}`,
      `Bearer ${machine}`,
    ]) {
      const res = await fetch(`${server.url}/oauth/userinfo`, {
        headers: header ? { authorization: header } : {},
      });
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
    await expect(
      command('clients rotate-secret').run(cli(), { options: {}, positionals: ['tgc_missing'] }),
    ).rejects.toThrow(/not found/);
    expect(await count()).toBe(before);
    expect(await server.database.db.em().count(RefreshToken, { clientId: 'tgc_missing' })).toBe(0);
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
      const runtime = authRuntimeOf(server.app.services)!;
      await runtime.purgeExpired(new Date(clock.now().getTime() + HOUR + SECOND));
      expect(await tokenRows(server)).toMatchObject({ access: 0, refresh: 1, codes: 1 });
      await runtime.purgeExpired(new Date(clock.now().getTime() + 31 * DAY));
      expect(await tokenRows(server)).toMatchObject({ access: 0, refresh: 0, codes: 0 });
    } finally {
      await server.close();
    }
  });
});
