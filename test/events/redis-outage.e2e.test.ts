import { randomBytes } from 'node:crypto';
import { createConnection, createServer, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createSeededTestDatabase, type TestDatabase } from '../helpers/db.js';
import { describeWithRedis, TEST_REDIS_URL } from '../helpers/env.js';
import { gql } from '../helpers/server.js';
import { wsSession, type WsSession } from './helpers.js';
import { keysOf, startGatewayProcess, type GatewayProcess } from './process.js';

/** A command on the RESP wire: `*3\r\n$7\r\npublish\r\n…` (ioredis sends names in lower case). */
const PUBLISH_COMMAND = /\$7\r\npublish\r\n/i;

interface RedisProxy {
  url: string;
  /**
   * From now on the connection that publishes events goes dark: its bytes are dropped both ways
   * while the socket stays open — a half-open connection after a network fault, which the client
   * notices only by never getting a reply. The rate limiter's and the subscriber's connections
   * keep working, so the gateway's requests are held by nothing but publishing.
   */
  darkenPublisher(): void;
  close(): Promise<void>;
}

/** A TCP proxy in front of the real Redis. */
async function startRedisProxy(target: URL): Promise<RedisProxy> {
  let dark = false;
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = createConnection(Number(target.port || 6379), target.hostname);
    let publisher = false;
    for (const s of [client, upstream]) {
      sockets.add(s);
      s.on('error', () => s.destroy());
      s.on('close', () => sockets.delete(s));
    }
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
    client.on('data', (chunk: Buffer) => {
      if (PUBLISH_COMMAND.test(chunk.toString('latin1'))) publisher = true;
      if (!(dark && publisher)) upstream.write(chunk);
    });
    upstream.on('data', (chunk: Buffer) => {
      if (!(dark && publisher)) client.write(chunk);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  return {
    url: `redis://127.0.0.1:${port}`,
    darkenPublisher: () => (dark = true),
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise((r) => server.close(r));
    },
  };
}

describeWithRedis('live events while Redis does not answer', () => {
  let proxy: RedisProxy;
  let database: TestDatabase;
  let key: string;
  let gateway: GatewayProcess;
  let session: WsSession | undefined;
  beforeAll(async () => {
    proxy = await startRedisProxy(new URL(TEST_REDIS_URL!));
    const seeded = await createSeededTestDatabase('sqlite');
    database = seeded.database;
    key = keysOf(seeded.demo).INSTITUTIONAL!.key;
    gateway = await startGatewayProcess({
      DATABASE_URL: database.url,
      REDIS_URL: proxy.url,
      REDIS_PREFIX: `tidegate-test-${randomBytes(4).toString('hex')}`,
    });
  }, 120_000);
  afterAll(async () => {
    await session?.dispose();
    await gateway?.stop();
    await proxy?.close();
    await database?.drop();
  });

  it('a mutation still answers, local subscribers still get its event, and the failed publish is logged', async () => {
    const createPortCall = (voyageReference: string) =>
      gql(gateway.url, 'mutation($input: PortCallInput!) { createPortCall(input: $input) { id } }', {
        key,
        variables: {
          input: {
            vesselImo: '9074729',
            portLocode: 'SGSIN',
            voyageReference,
            eta: new Date(Date.now() + 86_400_000).toISOString(),
          },
        },
      });
    session = wsSession(gateway.url, { apiKey: key });
    const updates = session.subscribe('subscription { portCallUpdated { type portCallId } }');
    // Readiness: while Redis still answers, changes are made until one reaches the subscriber.
    for (let probe = 0; updates.data.length === 0; probe++) {
      if (probe === 20) throw new Error(`subscription never received a probe:\n${gateway.output()}`);
      const made = await createPortCall(`OUTAGE-PROBE-${probe}`);
      expect(made.body.errors, JSON.stringify(made.body)).toBeUndefined();
      await updates.waitFor((s) => s.data.length > 0, 500).catch(() => undefined);
    }

    proxy.darkenPublisher();
    const during = await createPortCall('OUTAGE-1');
    expect(during.status).toBe(200);
    expect(during.body.errors, JSON.stringify(during.body)).toBeUndefined();
    const id = (during.body.data!.createPortCall as { id: string }).id;
    await updates.waitFor((s) => s.data.some((d) => JSON.stringify(d).includes(id)));

    const deadline = Date.now() + 15_000;
    while (!gateway.output().includes('could not publish events to redis')) {
      if (Date.now() > deadline) throw new Error(`no publish failure logged:\n${gateway.output()}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }, 60_000);
});
