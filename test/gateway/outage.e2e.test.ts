import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { Client } from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { outageError } from '../../src/db/errors.js';
import { TEST_POSTGRES_URL, describeWithPostgres, describeWithRedis } from '../helpers/env.js';
import { gql, rest, startTestServer, type TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';

/*
 * An unreachable data store is the service's trouble, not the caller's: every door answers 503
 * SERVICE_UNAVAILABLE with Retry-After (REST) or extensions.code (GraphQL), never 500, and
 * recovers without a restart.
 */

async function asAdmin(sql: string): Promise<void> {
  const admin = new Client({ connectionString: TEST_POSTGRES_URL });
  await admin.connect();
  try {
    await admin.query(sql);
  } finally {
    await admin.end();
  }
}

const VESSEL_QUERY = '{ vessels(first: 5) { totalCount nodes { imo } } }';

/**
 * Each call reads a page size of its own: a read seen before can be answered from the kept answers
 * without the database (on PostgreSQL the versions are in memory once the listener is back), and
 * these tests are about reads that execute.
 */
let calls = 0;

/** One read and one write through REST and GraphQL; returns what each answered. */
async function callEveryDoor(server: TestServer) {
  const key = server.key('INSTITUTIONAL');
  const size = 1 + (calls++ % 20);
  const restRead = await rest(server.url, `/v1/ports?limit=${size}`, { key });
  const restWrite = await rest(server.url, '/v1/vendors', {
    method: 'POST',
    key,
    body: {
      name: 'Outage Towage',
      services: ['TOWAGE'],
      ports: ['SGSIN'],
      contactEmail: 'ops@outage.example',
    },
  });
  const graphqlRead = await gql(server.url, `{ vessels(first: ${size}) { totalCount nodes { imo } } }`, {
    key,
  });
  const graphqlWrite = await gql(
    server.url,
    'mutation { createVendor(input: {name: "Outage Pilots", services: [PILOTAGE], ports: ["SGSIN"], contactEmail: "ops@pilots.example"}) { id } }',
    { key },
  );
  return { restRead, restWrite, graphqlRead, graphqlWrite };
}

function expectUnavailable(answers: Awaited<ReturnType<typeof callEveryDoor>>): void {
  for (const r of [answers.restRead, answers.restWrite]) {
    expect(r.status, r.text).toBe(503);
    expect(r.headers.get('retry-after')).toBe('5');
    expect(r.body.error).toMatchObject({ code: 'SERVICE_UNAVAILABLE', details: { retryAfterSeconds: 5 } });
  }
  for (const r of [answers.graphqlRead, answers.graphqlWrite]) {
    // 503 when the edge (the credential lookup) met the outage; 200 with the error when a resolver did.
    expect([200, 503]).toContain(r.status);
    expect(r.headers.get('retry-after')).toBe('5');
    expect(r.body.errors?.[0]?.extensions).toMatchObject({
      code: 'SERVICE_UNAVAILABLE',
      retryAfterSeconds: 5,
    });
    expect(JSON.stringify(r.body)).not.toContain('Internal server error');
  }
}

describeWithPostgres('PostgreSQL outage answers 503', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({
      dialect: 'postgresql',
      poolAcquireTimeoutMs: 500,
    });
    // The demo key's credential is cached from here on, so the resolvers, not the edge, meet the outage.
    expect((await callEveryDoor(server)).restRead.status).toBe(200);
  }, 120_000);
  afterAll(() => server?.close());

  it('connections refused and sessions terminated: 503 everywhere, then recovery', async () => {
    const name = new URL(server.database.url).pathname.slice(1);
    await asAdmin(`alter database ${name} allow_connections false`);
    await asAdmin(`select pg_terminate_backend(pid) from pg_stat_activity where datname = '${name}'`);
    try {
      expectUnavailable(await callEveryDoor(server));
      // A credential not cached yet is looked up at the edge: the outage there is a 503 too, not a 401.
      const stranger = await rest(server.url, '/v1/ports', { key: 'tg_live_notcachedyet000000000000' });
      expect(stranger.status).toBe(503);
      expect(stranger.body.error.code).toBe('SERVICE_UNAVAILABLE');
    } finally {
      await asAdmin(`alter database ${name} allow_connections true`);
    }
    const key = server.key('INSTITUTIONAL');
    await waitFor(
      async () => (await gql(server.url, VESSEL_QUERY, { key })).body.errors,
      (errors) => errors === undefined,
      { timeoutMs: 5_000, intervalMs: 100, what: (errors) => `recovery; still ${JSON.stringify(errors)}` },
    );
    expect((await rest(server.url, '/v1/ports?limit=5', { key })).status).toBe(200);
  });

  it('pool exhausted: 503 once the wait for a connection times out, then recovery', async () => {
    const client = server.database.db.em().getKnex().client as {
      acquireConnection(): Promise<unknown>;
      releaseConnection(connection: unknown): Promise<void>;
    };
    const held = await Promise.all(Array.from({ length: 10 }, () => client.acquireConnection()));
    try {
      expectUnavailable(await callEveryDoor(server));
    } finally {
      await Promise.all(held.map((c) => client.releaseConnection(c)));
    }
    const key = server.key('INSTITUTIONAL');
    expect((await gql(server.url, VESSEL_QUERY, { key })).body.errors).toBeUndefined();
  });
});

async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((r) => probe.listen(0, '127.0.0.1', r));
  const { port } = probe.address() as { port: number };
  await new Promise((r) => probe.close(r));
  return port;
}

describeWithRedis('Redis outage', () => {
  let redis: ChildProcess;
  let server: TestServer;
  beforeAll(async () => {
    const port = await freePort();
    redis = spawn(
      'redis-server',
      ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
      {
        stdio: 'ignore',
      },
    );
    server = await startTestServer({ env: { REDIS_URL: `redis://127.0.0.1:${port}` } }).catch(async (e) => {
      // redis-server may need a moment to listen; one retry covers it.
      await new Promise((r) => setTimeout(r, 500));
      if (!redis.exitCode) return startTestServer({ env: { REDIS_URL: `redis://127.0.0.1:${port}` } });
      throw e;
    });
  }, 120_000);
  afterAll(async () => {
    await server?.close();
    if (redis && redis.exitCode === null) redis.kill('SIGKILL');
  });

  it('with its Redis stopped, reads and writes still answer (Redis is not required for them), never 5xx', async () => {
    const stopped = new Promise((r) => redis.once('exit', r));
    redis.kill('SIGKILL');
    await stopped;
    const answers = await callEveryDoor(server);
    expect(answers.restRead.status).toBe(200);
    expect(answers.restWrite.status).toBe(201);
    expect(answers.graphqlRead.body.errors).toBeUndefined();
    expect(answers.graphqlWrite.body.errors).toBeUndefined();
    // Still counted, by this process alone while Redis is away.
    expect(answers.restRead.headers.get('x-ratelimit-remaining')).not.toBeNull();
  });
});

describe('which errors mean an outage', () => {
  it.each([
    ['PostgreSQL connection failure', Object.assign(new Error('x'), { code: '08006' })],
    ['terminated session', Object.assign(new Error('terminating connection'), { code: '57P01' })],
    ['too many connections', Object.assign(new Error('x'), { code: '53300' })],
    ['refused socket', Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' })],
    [
      'pool timeout',
      Object.assign(new Error('Knex: Timeout acquiring a connection. The pool is probably full.'), {
        name: 'KnexTimeoutError',
      }),
    ],
    ['closed SQLite handle', new TypeError('The database connection is not open')],
    [
      'ioredis while disconnected',
      new Error("Stream isn't writeable and enableOfflineQueue options is false"),
    ],
    [
      'a cause of a wrapper',
      new Error('query failed', { cause: new Error('Connection terminated unexpectedly') }),
    ],
  ])('%s → 503 with Retry-After', (_, error) => {
    const mapped = outageError(error);
    expect(mapped?.code).toBe('SERVICE_UNAVAILABLE');
    expect(mapped?.headers['Retry-After']).toBe('5');
  });

  it.each([
    ['unique violation', Object.assign(new Error('duplicate key'), { code: '23505' })],
    ['bad cast', Object.assign(new Error('invalid input syntax for type uuid'), { code: '22P02' })],
    ['a plain bug', new TypeError("Cannot read properties of undefined (reading 'id')")],
  ])('%s is no outage', (_, error) => {
    expect(outageError(error)).toBeUndefined();
  });
});
