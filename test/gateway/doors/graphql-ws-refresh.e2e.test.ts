import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { commitEvents, tierChange } from '../../events/helpers.js';
import { createKey, startTestServer, type TestServer } from '../../helpers/server.js';
import { Connection } from './ws-connection.js';

const TIERS = {
  id: 't',
  type: 'subscribe',
  payload: { query: 'subscription { tierChanged { slug tier } }' },
};

describe('refreshing the credential of an open graphql-ws connection', () => {
  let server: TestServer;
  let accountId: string;
  beforeAll(async () => {
    server = await startTestServer();
    accountId = server.demo.accounts.find((a) => a.plan === 'INSTITUTIONAL')!.accountId;
  });
  afterAll(() => server?.close());

  async function subscribed(key: string): Promise<Connection> {
    const connection = await Connection.open(server.url, key);
    connection.send(TIERS);
    // A keep-alive ping round trip: the subscribe before it has been handled.
    connection.send({ type: 'ping' });
    await connection.until(() => connection.count('pong') === 1, 'the subscription to start');
    return connection;
  }

  const nexts = (c: Connection) => c.messages.filter((m) => m.type === 'next' && m.id === 't').length;

  it('keeps every subscription and every event across a refresh; the old credential no longer ends it', async () => {
    const first = await createKey(server, { accountId });
    const second = await createKey(server, { accountId });
    const connection = await subscribed(first.secret);
    await commitEvents(server, [tierChange('before-refresh')]);
    await connection.until(() => nexts(connection) === 1, 'the first event');

    expect(await connection.refresh(second.secret)).toBe('pong');
    await commitEvents(server, [tierChange('after-refresh')]);
    await connection.until(() => nexts(connection) === 2, 'the second event');

    // The connection now holds the second key: the first one's revocation does not touch it.
    server.app.ws.endCredential(first.id);
    await commitEvents(server, [tierChange('after-old-revoked')]);
    await connection.until(() => nexts(connection) === 3, 'the third event');
    expect(connection.closed).toBeUndefined();
    expect(
      connection.messages.filter((m) => m.id === 't').map((m) => m.payload.data.tierChanged.slug),
    ).toEqual(['before-refresh', 'after-refresh', 'after-old-revoked']);

    // ... and the new one's does.
    server.app.ws.endCredential(second.id);
    await connection.until(() => connection.closed !== undefined, 'the close');
    expect(connection.closed).toEqual({ code: 4403, reason: 'Credential revoked' });
  });

  it('accepts "Bearer <secret>" as the refresh value too', async () => {
    const first = await createKey(server, { accountId });
    const second = await createKey(server, { accountId });
    const connection = await subscribed(first.secret);
    expect(await connection.refresh(`Bearer ${second.secret}`)).toBe('pong');
    connection.close();
  });

  it('closes with 4403 on a credential of another account, an unknown one, or a non-string', async () => {
    const mine = await createKey(server, { accountId });
    const otherAccount = server.demo.accounts.find((a) => a.plan === 'PROFESSIONAL')!.accountId;
    const theirs = await createKey(server, { accountId: otherAccount });
    for (const secret of [theirs.secret, 'tg_unknown_key', 42]) {
      const connection = await subscribed(mine.secret);
      expect(await connection.refresh(secret)).toBe(4403);
      expect(connection.closed?.reason).toBe('Credential refresh refused');
    }
  });

  it('closes with 4403 when the new credential no longer allows an open subscription', async () => {
    const full = await createKey(server, { accountId });
    const narrow = await createKey(server, { accountId, scopes: 'read:port_calls' });
    const connection = await subscribed(full.secret);
    expect(await connection.refresh(narrow.secret)).toBe(4403);
  });

  it('follows the new credential’s expiry', async () => {
    const lasting = await createKey(server, { accountId });
    const brief = await createKey(server, { accountId, expiresAt: new Date(Date.now() + 1500) });
    const connection = await subscribed(lasting.secret);
    expect(await connection.refresh(brief.secret)).toBe('pong');
    await connection.until(() => connection.closed !== undefined, 'the close at expiry');
    expect(connection.closed).toEqual({ code: 4403, reason: 'Credential expired' });
  });

  it('an ordinary keep-alive ping changes nothing', async () => {
    const key = await createKey(server, { accountId });
    const connection = await subscribed(key.secret);
    connection.send({ type: 'ping', payload: { note: 'hello' } });
    await connection.until(() => connection.count('pong') === 2, 'the pong');
    expect(connection.closed).toBeUndefined();
    connection.close();
  });
});
