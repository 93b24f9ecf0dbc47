import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { eventually } from '../../events/helpers.js';
import { createKey, startTestServer, type TestServer } from '../../helpers/server.js';
import { Connection } from './ws-connection.js';

describe('bounds on live connections', () => {
  let server: TestServer;
  const open: Connection[] = [];
  beforeAll(async () => {
    server = await startTestServer({
      env: {
        WS_MAX_CONNECTIONS_PER_CREDENTIAL: '2',
        WS_MAX_CONNECTIONS_PER_ADDRESS: '5',
        WS_MAX_PINGS_PER_MINUTE: '6',
      },
    });
  });
  afterEach(async () => {
    for (const connection of open.splice(0)) connection.close();
    // The server counts a socket out once its close handshake is done.
    await eventually(() => server.app.ws.connectionCount === 0, 'every connection closed');
  });
  afterAll(() => server?.close());

  async function connect(key: string): Promise<Connection> {
    const connection = await Connection.open(server.url, key);
    open.push(connection);
    return connection;
  }

  const refused = async (reason: string) => {
    const text = await (await fetch(`${server.url}/metrics`)).text();
    return Number(
      new RegExp(`^tidegate_ws_refused_total\\{reason="${reason}"\\} (\\d+)$`, 'm').exec(text)?.[1] ?? 0,
    );
  };

  it('refuses a credential past WS_MAX_CONNECTIONS_PER_CREDENTIAL with 4429, counted; another key is not affected', async () => {
    const before = await refused('credential');
    const { secret } = await createKey(server, { plan: 'ANALYST' });
    await connect(secret);
    const second = await connect(secret);
    const third = await connect(secret);
    await third.until(() => third.closed !== undefined, 'the refusal');
    expect(third.closed).toEqual({ code: 4429, reason: 'Too many connections for this credential' });
    expect(third.messages).toEqual([]);
    expect(await refused('credential')).toBe(before + 1);

    const other = await connect((await createKey(server, { plan: 'ANALYST' })).secret);
    expect(other.closed).toBeUndefined();
    // A slot freed is a slot again.
    second.close();
    await eventually(() => server.app.ws.connectionCount === 2, 'the close counted');
    const again = await connect(secret);
    expect(again.closed).toBeUndefined();
    expect(again.count('connection_ack')).toBe(1);
  });

  it('refuses an address past WS_MAX_CONNECTIONS_PER_ADDRESS, initialised or not, with 4429', async () => {
    const before = await refused('address');
    for (let i = 0; i < 5; i++) open.push(await Connection.socket(server.url));
    const sixth = await Connection.socket(server.url);
    await sixth.until(() => sixth.closed !== undefined, 'the refusal');
    expect(sixth.closed).toEqual({ code: 4429, reason: 'Too many connections from this address' });
    expect(await refused('address')).toBe(before + 1);
  });

  it('closes a connection that pings faster than WS_MAX_PINGS_PER_MINUTE past a burst of 10, refreshes included', async () => {
    const before = await refused('pings');
    const { secret } = await createKey(server, { plan: 'ANALYST' });
    const connection = await connect(secret);
    for (let i = 0; i < 5; i++) connection.send({ type: 'ping' });
    for (let i = 0; i < 5; i++) connection.send({ type: 'ping', payload: { refresh: secret } });
    await connection.until(() => connection.count('pong') === 10, 'ten pongs');
    expect(connection.closed).toBeUndefined();
    connection.send({ type: 'ping' });
    await connection.until(() => connection.closed !== undefined, 'the close');
    expect(connection.closed).toEqual({ code: 4429, reason: 'Too many pings' });
    expect(connection.count('pong')).toBe(10);
    expect(await refused('pings')).toBe(before + 1);
  });
});
