import { randomUUID } from 'node:crypto';
import { generateKeyPair, SignJWT, type CryptoKey } from 'jose';
import WebSocket from 'ws';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/kernel/clock.js';
import { gql, rest, type TestServer } from '../helpers/server.js';
import { createAnalystUser, exchangeCode, postForm, registerClient, startAuthServer } from './helpers.js';

/** graphql-ws handshake: resolves 'ack' or the close code. */
function handshake(server: TestServer, token: string): Promise<'ack' | number> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(`${server.url.replace('http', 'ws')}/graphql`, 'graphql-transport-ws');
    socket.on('open', () =>
      socket.send(JSON.stringify({ type: 'connection_init', payload: { authorization: `Bearer ${token}` } })),
    );
    socket.on('message', (data) => {
      if (JSON.parse(String(data)).type === 'connection_ack') {
        socket.close();
        resolve('ack');
      }
    });
    socket.on('close', (code) => resolve(code));
    socket.on('error', reject);
  });
}

describe('access tokens on the resource API (GraphQL, REST shims, subscription handshake)', () => {
  let server: TestServer;
  let user: { id: string; email: string; accountId: string };
  let client: { client_id: string; client_secret: string | null };

  beforeAll(async () => {
    server = await startAuthServer();
    user = await createAnalystUser(server, systemClock);
    client = await registerClient(server, systemClock, {
      accountId: user.accountId,
      scopes: 'read:vessels read:port_calls',
    });
  });
  afterAll(() => server?.close());

  it('a user token lists port calls over REST and GraphQL, opens a subscription socket, and gets 401 after /oauth/revoke', async () => {
    const { access_token: token } = await exchangeCode(server, user, client, {
      scope: 'port-calls:read vessels:read',
    });
    const list = await rest(server.url, '/v1/port-calls?status=SCHEDULED&limit=5', { bearer: token });
    expect(list.status).toBe(200);
    expect(Array.isArray(list.body.data)).toBe(true);
    const graph = await gql(server.url, '{ viewer { scopes } portCalls(first: 2) { totalCount } }', {
      headers: { authorization: `Bearer ${token}` },
    });
    expect(graph.body.errors).toBeUndefined();
    expect(graph.body.data?.viewer).toEqual({ scopes: ['read:port_calls', 'read:vessels'] });
    expect(await handshake(server, token)).toBe('ack');

    const revoke = await postForm(server, '/oauth/revoke', {
      token,
      client_id: client.client_id,
      client_secret: client.client_secret!,
    });
    expect(revoke.status).toBe(200);
    const after = await rest(server.url, '/v1/port-calls?status=SCHEDULED&limit=5', { bearer: token });
    expect(after.status).toBe(401);
    expect(after.headers.get('www-authenticate')).toMatch(/Bearer .*error="invalid_token"/);
    expect(
      (await gql(server.url, '{ viewer { scopes } }', { headers: { authorization: `Bearer ${token}` } }))
        .status,
    ).toBe(401);
    expect(await handshake(server, token)).toBe(4401);
  });

  it('token scopes drive @requiresScopes: a read:vessels token may not list port calls (403 insufficient_scope)', async () => {
    const { access_token: token } = await exchangeCode(server, user, client, { scope: 'read:vessels' });
    expect((await rest(server.url, '/v1/vessels/lookup?imo=9074729', { bearer: token })).status).toBe(200);
    const denied = await rest(server.url, '/v1/port-calls', { bearer: token });
    expect(denied.status).toBe(403);
    expect(denied.headers.get('www-authenticate')).toMatch(/error="insufficient_scope"/);
  });

  it('a forged or foreign-issuer JWT is 401 invalid_token', async () => {
    const { access_token: token } = await exchangeCode(server, user, client);
    const [header, payload, signature] = token.split('.') as [string, string, string];
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString());
    const { kid } = JSON.parse(Buffer.from(header, 'base64url').toString());
    const widened = Buffer.from(JSON.stringify({ ...claims, scope: 'admin' })).toString('base64url');
    const foreignKey = (await generateKeyPair('ES256')).privateKey;
    const b64 = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');

    // The control: our own key and the right claims pass, so each rejection below is for its one flaw.
    expect(await lookupStatus(await mint(server, claims))).toBe(200);
    const forgeries: Record<string, string> = {
      'widened payload': `${header}.${widened}.${signature}`,
      // The first character: all six of its bits are the signature's (the last one's low bits are
      // padding, so changing the end could leave the decoded signature as it was).
      'tampered signature': `${header}.${payload}.${signature.startsWith('A') ? 'B' : 'A'}${signature.slice(1)}`,
      'foreign key under our kid': await mint(server, claims, { key: foreignKey }),
      'alg none': `${b64({ alg: 'none', typ: 'at+jwt', kid })}.${payload}.`,
      'typ JWT instead of at+jwt': await mint(server, claims, { typ: 'JWT' }),
      'no typ': await mint(server, claims, { typ: null }),
      'foreign issuer': await mint(server, { ...claims, iss: 'https://evil.example' }),
      'another audience': await mint(server, { ...claims, aud: 'https://other-api.example' }),
    };
    for (const [flaw, forged] of Object.entries(forgeries)) {
      const res = await rest(server.url, '/v1/vessels/lookup?imo=9074729', { bearer: forged });
      expect(res.status, flaw).toBe(401);
      expect(res.headers.get('www-authenticate'), flaw).toMatch(/^Bearer .*error="invalid_token"/);
    }
  });

  async function lookupStatus(token: string): Promise<number> {
    return (await rest(server.url, '/v1/vessels/lookup?imo=9074729', { bearer: token })).status;
  }
});

/**
 * Signs `claims` as the server would (its current key and kid), with one thing changed at will:
 * another key, another or no `typ`. Lets a test prove each verification check on its own.
 */
async function mint(
  server: TestServer,
  claims: Record<string, unknown>,
  options: { key?: CryptoKey; typ?: string | null } = {},
): Promise<string> {
  const own = await server.app.auth.keys.signingKey(server.database.db.em());
  const typ = options.typ === undefined ? 'at+jwt' : options.typ;
  return new SignJWT({ ...claims, jti: randomUUID() })
    .setProtectedHeader({ alg: 'ES256', kid: own.kid, ...(typ === null ? {} : { typ }) })
    .sign(options.key ?? own.key);
}

describe('RESOURCE_URL: the resource API on another origin than the authorization server', () => {
  let server: TestServer;
  let client: { client_id: string; client_secret: string | null };
  const RESOURCE = 'https://api.tidegate.example';

  beforeAll(async () => {
    server = await startAuthServer({ env: { RESOURCE_URL: `${RESOURCE}/` } });
    client = await registerClient(server, systemClock, {
      accountId: server.demo.accounts[0]!.accountId,
      grantTypes: 'client_credentials',
    });
  });
  afterAll(() => server?.close());

  it('issues tokens with aud = RESOURCE_URL (iss stays PUBLIC_URL) and accepts only that audience', async () => {
    expect(server.config.resourceUrl).toBe(RESOURCE);
    const res = await postForm(server, '/oauth/token', {
      grant_type: 'client_credentials',
      client_id: client.client_id,
      client_secret: client.client_secret!,
    });
    const token = res.body.access_token as string;
    const claims = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString());
    expect(claims).toMatchObject({ aud: RESOURCE, iss: server.config.publicUrl });
    const status = async (t: string) =>
      (await rest(server.url, '/v1/vessels/lookup?imo=9074729', { bearer: t })).status;
    expect(await status(token)).toBe(200);
    // A token for the authorization server's own origin is not a token for this resource.
    expect(await status(await mint(server, { ...claims, aud: server.config.publicUrl }))).toBe(401);
    expect(await status(await mint(server, claims))).toBe(200);
    const introspected = await postForm(server, '/oauth/introspect', {
      token,
      client_id: client.client_id,
      client_secret: client.client_secret!,
    });
    expect(introspected.body).toMatchObject({ active: true, aud: RESOURCE });
  });
});
