import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { commitEvents, eventually, tierChange } from '../../events/helpers.js';
import { createKey, startTestServer, type Json, type TestServer } from '../../helpers/server.js';

/** A raw graphql-transport-ws connection: every message kept, the close code when it closes. */
class Connection {
  readonly messages: Json[] = [];
  closed?: { code: number; reason: string };
  private constructor(private readonly socket: WebSocket) {
    socket.on('message', (data) => this.messages.push(JSON.parse(String(data))));
    socket.on('close', (code, reason) => (this.closed = { code, reason: String(reason) }));
  }

  static async open(url: string, apiKey: string): Promise<Connection> {
    const socket = new WebSocket(url.replace('http', 'ws') + '/graphql', 'graphql-transport-ws');
    const connection = new Connection(socket);
    await new Promise((resolve) => socket.once('open', resolve));
    connection.send({ type: 'connection_init', payload: { apiKey } });
    await connection.until(() => connection.messages.some((m) => m.type === 'connection_ack'), 'the ack');
    return connection;
  }

  send(message: Json): void {
    this.socket.send(JSON.stringify(message));
  }

  count(type: string): number {
    return this.messages.filter((m) => m.type === type).length;
  }

  /** Sends the refresh ping; resolves with 'pong' when acknowledged, or the close code. */
  async refresh(secret: unknown): Promise<'pong' | number> {
    const pongs = this.count('pong');
    this.send({ type: 'ping', payload: { refresh: secret } });
    await this.until(() => this.count('pong') > pongs || this.closed !== undefined, 'a pong or a close');
    return this.closed ? this.closed.code : 'pong';
  }

  until(condition: () => boolean, what: string): Promise<void> {
    return eventually(condition, () => `${what} (got ${JSON.stringify(this.messages)})`, 10_000);
  }

  close(): void {
    this.socket.close();
  }
}

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
