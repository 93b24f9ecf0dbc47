import { afterAll, beforeAll, expect, it } from 'vitest';
import { DASHBOARD_QUERY } from '../bench/port-ops.js';
import { describeEachDialect } from '../helpers/env.js';
import { expectIndexed, readRecorder } from '../helpers/query-plan.js';
import { confirmOrder, orderableCall, postBunkers } from './orders.js';
import {
  gql,
  rest,
  staleKeptAnswers,
  startTestServer,
  type Json,
  type TestServer,
} from '../helpers/server.js';

/*
 * The plans of the port-ops reads: every statement the dashboard and the list routes run (with
 * each filter and order) must reach its rows through an index, never by reading a whole table,
 * and a page of a list must come off an index in its whole order, the id tiebreak included: no
 * sort either. The loaders' `in (…)` batches carry no ORDER BY at all (each parent's rows are
 * ordered in memory), so the rule holds for every statement (test/helpers/query-plan.ts).
 */
const PORT_OPS_TABLES = /\b(port_calls|service_orders|vessels|ports|vendors|status_changes)\b/;

describeEachDialect('query plans of the port-ops reads', (dialect) => {
  let server: TestServer;
  const reads = readRecorder(PORT_OPS_TABLES);
  let key: string;

  beforeAll(async () => {
    server = await startTestServer({ dialect, onQuery: reads.onQuery });
    key = server.key('INSTITUTIONAL');
  });
  afterAll(() => server?.close());

  /** Runs `read` and checks the plan of every port-ops statement it ran. */
  async function expectReadIndexed(read: () => Promise<unknown>): Promise<void> {
    await read(); // warm caches (credentials, vessels) so the statements are the steady-state ones
    await staleKeptAnswers(server); // and execute again rather than answer from the kept result
    await expectIndexed(server.database.db, await reads.record(read));
  }

  it('the GraphQL dashboard: port calls, vessels, ports, service orders, vendors', () =>
    expectReadIndexed(async () => {
      const res = await gql(server.url, DASHBOARD_QUERY, { key });
      expect(res.body.errors).toBeUndefined();
    }));

  it('the REST dashboard route', () =>
    expectReadIndexed(async () => {
      expect((await rest(server.url, '/v1/dashboard/port-calls?limit=50', { key })).status).toBe(200);
    }));

  it('the port-call list under each filter and order', async () => {
    const call = (await rest(server.url, '/v1/port-calls?limit=1', { key })).body.data[0] as Json;
    for (const query of [
      'status=SCHEDULED&limit=10',
      'status=DEPARTED&limit=10',
      `portLocode=${call.portLocode}&limit=10`,
      `vesselImo=${call.vesselImo}&limit=10`,
      'etaFrom=2026-01-01T00:00:00Z&etaTo=2027-01-01T00:00:00Z&limit=10',
    ]) {
      await expectReadIndexed(async () => {
        const res = await rest(server.url, `/v1/port-calls?${query}`, { key });
        expect(res.status, `${query}: ${res.text}`).toBe(200);
      });
    }
  });

  it('the service-order list under each filter', async () => {
    const order = (await rest(server.url, '/v1/service-orders?limit=1', { key })).body.data[0] as Json;
    for (const query of [
      'limit=10',
      'status=REQUESTED&limit=10',
      'serviceType=BUNKERING&limit=10',
      `portCallId=${order.portCallId}&limit=10`,
      `vendorId=${order.vendorId}&limit=10`,
    ]) {
      await expectReadIndexed(async () => {
        const res = await rest(server.url, `/v1/service-orders?${query}`, { key });
        expect(res.status, `${query}: ${res.text}`).toBe(200);
      });
    }
  });

  it("a new service order's and its confirmation's reads, the vendor and port joined in, and their guards", async () => {
    const { call, vendor } = await orderableCall(server.url, key);
    const statements = await reads.record(async () => {
      await confirmOrder(server.url, key, await postBunkers(server.url, key, call, vendor));
    });
    // The new order's read of its call and the confirmation's of its order (locking on SQLite), and on
    // PostgreSQL the statements that write them only while the call (and the order) are as read
    // (their guard reads the call by id, the move the order by id).
    const reading = statements.filter((sql) => /from "(port_calls|service_orders)" e /.test(sql));
    expect(reading, reading.join('\n')).toHaveLength(dialect === 'postgresql' ? 4 : 2);
    if (dialect === 'postgresql')
      expect(
        reading.filter((sql) =>
          /^with g as \(select 1 from "port_calls" e where .* for share of e\)/.test(sql),
        ),
      ).toHaveLength(2);
    await expectIndexed(server.database.db, reading);
  });
});
