import { afterAll, beforeAll, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { describeEachDialect, describeWithPostgres } from '../helpers/env.js';
import { gql, rest, startTestServer, type Json, type TestServer } from '../helpers/server.js';
import { demoKeys, startGatewayProcess, type GatewayProcess } from '../events/process.js';

/*
 * A client that writes reads its write back on the very next request, through REST and GraphQL,
 * on one process and on another process sharing the database. The reader has asked the same
 * questions just before the write, so each answer is kept (src/gateway/pipeline/answers.ts): the data
 * version the write moved must make the next request execute again, in every process.
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

/** Writes on `writer`, then reads on `reader` with the next request, through both doors. */
async function writeThenRead(writer: string, reader: string, key: string): Promise<void> {
  const { callId, vendorId } = await target(writer, key);
  // The same reads before the write: their answers are kept, and must not be served after it.
  const ordersPath = `/v1/service-orders?portCallId=${callId}&limit=100`;
  expect((await rest(reader, ordersPath, { key })).status).toBe(200);
  expect((await gql(reader, CALL, { key, variables: { id: callId } })).body.errors).toBeUndefined();
  expect((await rest(reader, `/v1/port-calls/${callId}`, { key })).body.status).toBe('SCHEDULED');
  const created = await rest(writer, '/v1/service-orders', {
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
  const orderId = created.body.id as string;

  const viaRest = await rest(reader, ordersPath, { key });
  expect((viaRest.body.data as Json[]).map((o) => o.id)).toContain(orderId);
  const viaGraphql = await gql(reader, CALL, { key, variables: { id: callId } });
  expect((viaGraphql.body.data as Json).portCall.serviceOrders.map((o: Json) => o.id)).toContain(orderId);

  const moved = await gql(writer, TRANSITION, { key, variables: { id: callId } });
  expect(moved.body.errors).toBeUndefined();
  expect((await rest(reader, `/v1/port-calls/${callId}`, { key })).body.status).toBe('ARRIVED');
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

describeWithPostgres('port-ops: reads follow writes across two gateways on one PostgreSQL', () => {
  let database: TestDatabase;
  let a: GatewayProcess;
  let b: GatewayProcess;
  beforeAll(async () => {
    database = await createTestDatabase('postgresql');
    a = await startGatewayProcess({ DATABASE_URL: database.url, DEMO_SEED: 'true' });
    b = await startGatewayProcess({ DATABASE_URL: database.url });
  }, 120_000);
  afterAll(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    await database?.drop();
  });

  it('what A wrote, B serves on the next request', () =>
    writeThenRead(a.url, b.url, demoKeys(a.output()).INSTITUTIONAL!.key));
});
