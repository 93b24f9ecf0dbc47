import { Client } from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { LISTENER_APPLICATION_NAME } from '../../src/db/versions.js';
import { createSeededTestDatabase, type TestDatabase } from '../helpers/db.js';
import { describeEachDialect, describeWithPostgres } from '../helpers/env.js';
import { NOTICE_BOUND_MS, servedWithin } from '../helpers/served.js';
import { gql, rest, startTestServer, type Json, type TestServer } from '../helpers/server.js';
import { keysOf, startGatewayProcess, type GatewayProcess } from '../events/process.js';

/*
 * A client that writes reads its write back on the very next request, through REST and GraphQL,
 * and another gateway sharing the PostgreSQL database serves it too once the version's notice has
 * arrived (src/db/versions.ts), also after its listening
 * connection was killed. The reader has asked the same questions just before the write, so each
 * answer is kept (src/gateway/pipeline/answers.ts): the data version the write moved must make the
 * next request execute again, in every process.
 */

const CALL = `query Call($id: ID!) { portCall(id: $id) { status serviceOrders { id status } } }`;
const TRANSITION = `mutation Go($id: ID!) { transitionPortCall(id: $id, status: ARRIVED) { status } }`;

/** A scheduled call and a bunkering vendor serving its port. */
async function target(url: string, key: string): Promise<{ callId: string; vendorId: string }> {
  const calls = (await rest(url, '/v1/port-calls?status=SCHEDULED&limit=100', { key })).body.data as Json[];
  const vendors = (await rest(url, '/v1/vendors?serviceType=BUNKERING&limit=100', { key })).body
    .data as Json[];
  for (const call of calls) {
    const vendor = vendors.find((v) => v.ports.includes(call.portLocode));
    if (vendor) return { callId: call.id, vendorId: vendor.id };
  }
  throw new Error('no scheduled call with a bunkering vendor at its port');
}

/** A new bunkering order on the call by the vendor, through REST; its id. */
async function orderBunkers(
  url: string,
  key: string,
  { callId, vendorId }: { callId: string; vendorId: string },
): Promise<string> {
  const created = await rest(url, '/v1/service-orders', {
    method: 'POST',
    key,
    body: {
      portCallId: callId,
      serviceType: 'BUNKERING',
      vendorId,
      details: { quantity: 500, unit: 'MT', fuelType: 'VLSFO' },
    },
  });
  expect(created.status, created.text).toBe(201);
  return created.body.id as string;
}

/**
 * Writes on `writer`, then reads on `reader` through both doors: with the next request, or within
 * `boundMs` when the reader is another process that learns of versions by notices.
 */
async function writeThenRead(writer: string, reader: string, key: string, boundMs = 0): Promise<void> {
  const { callId, vendorId } = await target(writer, key);
  // The same reads before the write: their answers are kept, and must not be served after it.
  const ordersPath = `/v1/service-orders?portCallId=${callId}&limit=100`;
  expect((await rest(reader, ordersPath, { key })).status).toBe(200);
  expect((await gql(reader, CALL, { key, variables: { id: callId } })).body.errors).toBeUndefined();
  expect((await rest(reader, `/v1/port-calls/${callId}`, { key })).body.status).toBe('SCHEDULED');
  const orderId = await orderBunkers(writer, key, { callId, vendorId });

  const orderIds = (body: Json): string[] => (body.data as Json[]).map((o) => o.id as string);
  const viaRest = await servedWithin(
    () => rest(reader, ordersPath, { key }),
    (r) => orderIds(r.body).includes(orderId),
    boundMs,
  );
  expect(orderIds(viaRest.body)).toContain(orderId);
  const viaGraphql = await gql(reader, CALL, { key, variables: { id: callId } });
  expect((viaGraphql.body.data as Json).portCall.serviceOrders.map((o: Json) => o.id)).toContain(orderId);

  const moved = await gql(writer, TRANSITION, { key, variables: { id: callId } });
  expect(moved.body.errors).toBeUndefined();
  const status = await servedWithin(
    async () => (await rest(reader, `/v1/port-calls/${callId}`, { key })).body.status as string,
    (s) => s === 'ARRIVED',
    boundMs,
  );
  expect(status).toBe('ARRIVED');
  expect(
    ((await gql(reader, CALL, { key, variables: { id: callId } })).body.data as Json).portCall.status,
  ).toBe('ARRIVED');
}

describeEachDialect('port-ops: reads follow writes in one process', (dialect) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ dialect });
  });
  afterAll(() => server?.close());

  it('a service order and a port-call transition are read back on the next request, REST and GraphQL', () =>
    writeThenRead(server.url, server.url, server.key('INSTITUTIONAL')));
});

describeWithPostgres("port-ops: a tenant's write sends only its own next read to the database", () => {
  let server: TestServer;
  /** The server's statements, as its query log shows them. */
  const statements: string[] = [];
  beforeAll(async () => {
    server = await startTestServer({ dialect: 'postgresql', onQuery: (text) => statements.push(text) });
  });
  afterAll(() => server?.close());

  /** The version statements a request made. */
  async function versionReads(request: () => Promise<unknown>): Promise<number> {
    statements.length = 0;
    await request();
    return statements.filter((s) => /from "?read_model_versions"?/.test(s)).length;
  }

  it("reads another account's versions from memory after a write, and the writer's from the database", async () => {
    const writer = server.key('INSTITUTIONAL');
    const other = server.key('PROFESSIONAL');
    const vessels = (key: string) => () =>
      gql(server.url, '{ vessels(first: 5) { nodes { imo } } }', { key });
    expect((await vessels(other)()).body.errors).toBeUndefined();
    expect((await vessels(writer)()).body.errors).toBeUndefined();
    await orderBunkers(server.url, writer, await target(server.url, writer));
    // The other account's version is not the writer's: its check stays in memory.
    expect(await versionReads(vessels(other))).toBe(0);
    // The writer's next read reads its versions from the database (read-your-writes), once.
    expect(await versionReads(vessels(writer))).toBe(1);
    expect(await versionReads(vessels(writer))).toBe(0);
  });
});

describeWithPostgres('port-ops: reads follow writes across two gateways on one PostgreSQL', () => {
  let database: TestDatabase;
  let a: GatewayProcess;
  let b: GatewayProcess;
  let key: string;
  beforeAll(async () => {
    const seeded = await createSeededTestDatabase('postgresql');
    database = seeded.database;
    key = keysOf(seeded.demo).INSTITUTIONAL!.key;
    // A start on a loaded machine can take tens of seconds. One after the other: the test of the
    // lost listener tells B's listening connection from A's by its start.
    a = await startGatewayProcess({ DATABASE_URL: database.url }, 120_000);
    b = await startGatewayProcess({ DATABASE_URL: database.url }, 120_000);
  }, 240_000);
  afterAll(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    await database?.drop();
  });

  it('what A wrote, A serves on the next request and B once the notice arrives', async () => {
    await writeThenRead(a.url, a.url, key);
    await writeThenRead(a.url, b.url, key, NOTICE_BOUND_MS);
  });

  it("B still serves A's writes after B's listening connection is killed, and listens again", async () => {
    const admin = new Client({ connectionString: database.url });
    await admin.connect();
    try {
      const listeners = async () =>
        (
          await admin.query<{ pid: number }>(
            `select pid from pg_stat_activity where application_name = $1 and datname = current_database()
             order by backend_start`,
            [LISTENER_APPLICATION_NAME],
          )
        ).rows.map((r) => r.pid);
      // A started first: the newer listening connection is B's.
      const before = await listeners();
      expect(before).toHaveLength(2);
      const [ofA, ofB] = before as [number, number];
      await admin.query('select pg_terminate_backend($1)', [ofB]);
      // B reads its versions from the database until it listens again: fresh all along.
      await writeThenRead(a.url, b.url, key, NOTICE_BOUND_MS);
      const deadline = Date.now() + 10_000;
      while ((await listeners()).length < 2 && Date.now() < deadline)
        await new Promise((r) => setTimeout(r, 50));
      const after = await listeners();
      expect(after).toHaveLength(2);
      expect(after).toContain(ofA);
      expect(after).not.toContain(ofB);
    } finally {
      await admin.end();
    }
  });
});
