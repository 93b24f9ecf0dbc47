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
    const widened = Buffer.from(JSON.stringify({ ...claims, scope: 'admin' })).toString('base64url');
    for (const forged of [
      `${header}.${widened}.${signature}`,
      `${header}.${payload}.${signature.slice(0, -2)}xx`,
    ]) {
      const res = await rest(server.url, '/v1/vessels/lookup?imo=9074729', { bearer: forged });
      expect(res.status).toBe(401);
      expect(res.headers.get('www-authenticate')).toMatch(/error="invalid_token"/);
    }
  });
});
