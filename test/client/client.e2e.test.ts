import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  GraphQLResponseError,
  MemoryTokenStore,
  SessionExpiredError,
  TidegateClient,
  TidegateError,
} from '../../src/client/index.js';
import { ProtocolsDocument, VesselDocument, ViewerDocument } from '../../src/generated/graphql.js';
import type { TestServer } from '../helpers/server.js';
import { Browser, PASSWORD, postForm } from '../auth/helpers.js';
import { approve, CLIENT_SCOPES, startClientServer } from './helpers.js';

describe('TypeScript client against the real server', () => {
  let server: TestServer;
  let user: { email: string; accountId: string };
  let publicClient: { client_id: string };
  let confidential: { client_id: string; client_secret: string | null };
  let redirectUri: string;

  beforeAll(async () => {
    ({ server, user, publicClient, confidential, redirectUri } = await startClientServer({
      env: { LIMIT_PROFESSIONAL_PER_MINUTE: '2' },
    }));
  });
  afterAll(() => server?.close());

  /** Counts the token requests a client makes. */
  function countingFetch() {
    const calls = { token: 0 };
    const fetchImpl: typeof fetch = (input, init) => {
      if (String(input).endsWith('/oauth/token')) calls.token++;
      return fetch(input, init);
    };
    return { calls, fetchImpl };
  }

  async function signedIn(options: { store?: MemoryTokenStore; fetch?: typeof fetch } = {}) {
    const store = options.store ?? new MemoryTokenStore();
    const client = new TidegateClient({
      baseUrl: server.url,
      oauth: { clientId: publicClient.client_id, redirectUri, scope: CLIENT_SCOPES },
      store,
      fetch: options.fetch,
    });
    const url = await client.authorizationUrl();
    await client.completeAuthorization(await approve(server, user.email, url));
    return { client, store };
  }

  it('signs in with authorization code + PKCE S256 (state, discovery) and calls GraphQL and /v1', async () => {
    const client = new TidegateClient({
      baseUrl: server.url,
      oauth: { clientId: publicClient.client_id, redirectUri, scope: CLIENT_SCOPES },
    });
    const url = new URL(await client.authorizationUrl());
    expect(`${url.origin}${url.pathname}`).toBe(`${server.url}/oauth/authorize`);
    expect(url.searchParams.get('code_challenge_method')).toBe('S256');
    expect(url.searchParams.get('code_challenge')).toMatch(/^[\w-]{43}$/);
    expect(url.searchParams.get('state')).toMatch(/^[\w-]{43}$/);
    const callback = await approve(server, user.email, url.toString());
    const tokens = await client.completeAuthorization(callback);
    expect(tokens.refreshToken).toMatch(/^tgr_/);
    expect(tokens.expiresAt).toBeGreaterThan(Date.now() + 3000_000);

    const viewer = await client.graphql(ViewerDocument);
    expect(viewer.viewer).toMatchObject({ accountId: user.accountId, credentialKind: 'oauth_token' });
    const vessel = await client.graphql(VesselDocument, { imo: '9074729' });
    expect(vessel.vessel?.name).toBe('Northern Tern');
    const rest = await client.v1.vesselLookup({ imo: '9074729' });
    expect(rest).toMatchObject({ imo: '9074729', name: 'Northern Tern' });
    const ports = await client.v1.ports({ limit: 2 });
    expect(ports.data.length).toBeLessThanOrEqual(2);
    expect(ports.limit).toBe(2);

    // The callback can be used once: its state is gone.
    await expect(client.completeAuthorization(callback)).rejects.toMatchObject({ code: 'state_mismatch' });
  });

  it('refuses a callback whose state it did not issue, or from another issuer, before any token request', async () => {
    const { calls, fetchImpl } = countingFetch();
    const client = new TidegateClient({
      baseUrl: server.url,
      oauth: { clientId: publicClient.client_id, redirectUri, scope: CLIENT_SCOPES },
      fetch: fetchImpl,
    });
    const callback = await approve(server, user.email, await client.authorizationUrl());
    const forged = new URL(callback);
    forged.searchParams.set('state', 'attacker-chosen');
    await expect(client.completeAuthorization(forged)).rejects.toMatchObject({ code: 'state_mismatch' });
    const otherIssuer = new URL(callback);
    otherIssuer.searchParams.set('iss', 'https://evil.example');
    await expect(client.completeAuthorization(otherIssuer)).rejects.toMatchObject({
      code: 'issuer_mismatch',
    });
    expect(calls.token).toBe(0);

    const denied = new TidegateClient({
      baseUrl: server.url,
      oauth: { clientId: publicClient.client_id, redirectUri, scope: 'admin' },
    });
    // A non-admin asking for admin is sent straight back with error=invalid_scope: the client reports it.
    const browser = new Browser(server.url);
    await browser.login(user.email, PASSWORD);
    const refused = await browser.fetch(await denied.authorizationUrl());
    expect(refused.status).toBe(302);
    await expect(denied.completeAuthorization(refused.headers.get('location')!)).rejects.toMatchObject({
      code: 'invalid_scope',
    });
  });

  it('signs in with client credentials; a renewal asks again', async () => {
    const { calls, fetchImpl } = countingFetch();
    const client = new TidegateClient({
      baseUrl: server.url,
      oauth: {
        clientId: confidential.client_id,
        clientSecret: confidential.client_secret!,
        scope: 'read:vessels',
      },
      fetch: fetchImpl,
    });
    const first = await client.signInWithClientCredentials();
    expect(first.refreshToken).toBeUndefined();
    expect((await client.graphql(ViewerDocument)).viewer).toMatchObject({
      clientId: confidential.client_id,
      scopes: ['read:vessels'],
    });
    const second = await client.refresh();
    expect(second.accessToken).not.toBe(first.accessToken);
    expect(calls.token).toBe(2);

    const wrong = new TidegateClient({
      baseUrl: server.url,
      oauth: { clientId: confidential.client_id, clientSecret: 'wrong' },
    });
    const error = await wrong.signInWithClientCredentials().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(TidegateError);
    expect(error).toMatchObject({ code: 'invalid_client', status: 401 });
  });

  it('uses an API key in X-API-Key or as a bearer token', async () => {
    for (const apiKeyHeader of ['x-api-key', 'bearer'] as const) {
      const client = new TidegateClient({ baseUrl: server.url, apiKey: server.key('ANALYST'), apiKeyHeader });
      expect((await client.graphql(ViewerDocument)).viewer.credentialKind).toBe('api_key');
      expect(await client.v1.vesselLookup({ imo: '9074729' })).toMatchObject({ imo: '9074729' });
    }
    const bad = new TidegateClient({ baseUrl: server.url, apiKey: 'tg_live_nope' });
    const error = await bad.v1.vesselLookup({ imo: '9074729' }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'UNAUTHORIZED', status: 401 });
    expect((error as TidegateError).requestId).toMatch(/\S/);
  });

  it('renews once for concurrent callers, keeps the rotated refresh token, and the old one is spent', async () => {
    const { calls, fetchImpl } = countingFetch();
    const { client, store } = await signedIn({ fetch: fetchImpl });
    const before = store.load()!;
    calls.token = 0;
    const renewed = await Promise.all(Array.from({ length: 5 }, () => client.refresh()));
    expect(calls.token).toBe(1);
    expect(new Set(renewed.map((t) => t.accessToken)).size).toBe(1);
    const after = store.load()!;
    expect(after.refreshToken).not.toBe(before.refreshToken);
    expect(after.accessToken).not.toBe(before.accessToken);
    // Concurrent calls with a token about to expire also share one renewal.
    store.save({ ...after, expiresAt: Date.now() + 1000 });
    calls.token = 0;
    const results = await Promise.all(Array.from({ length: 4 }, () => client.graphql(ViewerDocument)));
    expect(results.every((r) => r.viewer.accountId === user.accountId)).toBe(true);
    expect(calls.token).toBe(1);
    expect(store.load()!.expiresAt).toBeGreaterThan(Date.now() + 3000_000);
    // The server rotated: the first refresh token no longer works.
    const reuse = await postForm(server, '/oauth/token', {
      grant_type: 'refresh_token',
      refresh_token: before.refreshToken!,
      client_id: publicClient.client_id,
    });
    expect(reuse.body.error).toBe('invalid_grant');
  });

  it('renews once on 401 invalid_token and retries the call', async () => {
    const { calls, fetchImpl } = countingFetch();
    const { client, store } = await signedIn({ fetch: fetchImpl });
    const revoked = store.load()!.accessToken;
    const revocation = await postForm(server, '/oauth/revoke', {
      token: revoked,
      client_id: publicClient.client_id,
    });
    expect(revocation.status).toBe(200);
    calls.token = 0;
    expect((await client.v1.vesselLookup({ imo: '9074729' })).imo).toBe('9074729');
    expect(calls.token).toBe(1);
    expect(store.load()!.accessToken).not.toBe(revoked);
  });

  it('a refused refresh token (invalid_grant) clears the session and says so', async () => {
    const { client, store } = await signedIn();
    const revocation = await postForm(server, '/oauth/revoke', {
      token: store.load()!.refreshToken!,
      client_id: publicClient.client_id,
    });
    expect(revocation.status).toBe(200);
    const error = await client.refresh().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SessionExpiredError);
    expect(error).toMatchObject({ code: 'invalid_grant', status: 400 });
    expect((error as Error).message).toMatch(/cleared.*sign in again/);
    expect(store.load()).toBeNull();
    await expect(client.graphql(ViewerDocument)).rejects.toMatchObject({ code: 'UNAUTHENTICATED' });
  });

  it('signs out: the store is emptied and the refresh token revoked at the server', async () => {
    const { client, store } = await signedIn();
    const { refreshToken } = store.load()!;
    await client.signOut();
    expect(store.load()).toBeNull();
    const reuse = await postForm(server, '/oauth/token', {
      grant_type: 'refresh_token',
      refresh_token: refreshToken!,
      client_id: publicClient.client_id,
    });
    expect(reuse.body.error).toBe('invalid_grant');
    await expect(client.graphql(ViewerDocument)).rejects.toMatchObject({
      code: 'UNAUTHENTICATED',
      status: 401,
    });
  });

  it('429 is a typed error with Retry-After, the request id and the code, on GraphQL and /v1', async () => {
    const client = new TidegateClient({ baseUrl: server.url, apiKey: server.key('PROFESSIONAL') });
    let limited: unknown;
    for (let i = 0; i < 5 && !limited; i++)
      await client.graphql(ProtocolsDocument, { first: 1 }).catch((e: unknown) => (limited = e));
    expect(limited).toBeInstanceOf(GraphQLResponseError);
    expect(limited).toMatchObject({ code: 'RATE_LIMIT_EXCEEDED', status: 429 });
    expect((limited as TidegateError).retryAfter).toBeGreaterThan(0);
    expect((limited as TidegateError).requestId).toMatch(/\S/);
    const rest = await client.v1.protocols({ limit: 1 }).catch((e: unknown) => e);
    expect(rest).toMatchObject({ code: 'RATE_LIMIT_EXCEEDED', status: 429 });
    expect((rest as TidegateError).retryAfter).toBeGreaterThan(0);
  });

  it('routes helper parameters to the path, the query string and the JSON body; 204 answers undefined', async () => {
    const client = new TidegateClient({ baseUrl: server.url, apiKey: server.key('INSTITUTIONAL') });
    const [first, second] = await client.v1.protocols({ limit: 2 });
    const updated = await client.v1.updateWatchlist({ add: [first!.slug, second!.slug], tier_shift: true });
    expect(updated).toMatchObject({ tier_shift: true });
    expect(JSON.stringify(await client.v1.watchlist())).toContain(second!.slug);
    expect(await client.v1.removeFromWatchlist({ slug: second!.slug })).toBeUndefined();
    expect(JSON.stringify(await client.v1.watchlist())).not.toContain(`"${second!.slug}"`);
    expect((await client.v1.protocol({ slug: first!.slug })).slug).toBe(first!.slug);
    const missing = await client.v1.protocol({ slug: 'no-such-protocol' }).catch((e: unknown) => e);
    expect(missing).toMatchObject({ code: 'NOT_FOUND', status: 404 });
    // A hand-written route through request(): same credential, same typed errors.
    const exported = await client.request('/v1/export?format=csv');
    expect(exported.headers.get('content-type')).toMatch(/csv/);
    await exported.body?.cancel();
  });

  it('reports a server it cannot reach as NETWORK_ERROR', async () => {
    const client = new TidegateClient({ baseUrl: 'http://127.0.0.1:9', apiKey: 'tg_any' });
    await expect(client.v1.ports()).rejects.toMatchObject({ code: 'NETWORK_ERROR', status: 0 });
  });

  it('reports a bad parameter with the server’s code and the field', async () => {
    const client = new TidegateClient({ baseUrl: server.url, apiKey: server.key('INSTITUTIONAL') });
    const error = await client.v1.ports({ limit: 500 }).catch((e: unknown) => e);
    expect(error).toMatchObject({ code: 'BAD_USER_INPUT', status: 400 });
    expect((error as TidegateError).message).toMatch(/limit/);
  });
});
