import { afterAll, beforeAll, expect, it } from 'vitest';
import { openAppDatabase } from '../../src/database.js';
import { KEPT_BUMPS } from '../../src/db/migrations/Migration20261201000100PortOpsChanges.js';
import { PRUNE_EVERY } from '../../src/db/migrations/Migration20261204000100PruneChangeLog.js';
import { ChangeLog } from '../../src/port-ops/changes.js';
import { describeEachDialect } from '../helpers/env.js';
import { bunkeringVendorAt, confirmOrder, orderableCall as orderable, postBunkers } from './orders.js';
import { parsePrometheus, seriesValue } from '../helpers/prometheus.js';
import { otherWriterBoundMs, servedWithin } from '../helpers/served.js';
import {
  gql,
  rest,
  staleKeptAnswers,
  startTestServer,
  type Json,
  type TestServer,
} from '../helpers/server.js';

/*
 * The log of what each move of an account's port-operations version changed (src/port-ops/changes.ts,
 * Migration20261201000100PortOpsChanges), and kept lists of port calls carried over the moves that
 * changed none of their calls (src/gateway/pipeline/answers.ts, "Carried"): the same bytes as an
 * execution; anything the log cannot vouch for (a list's members, a vendor, a vessel, a version
 * moved by hand) executes again.
 */

type Outcome = 'hit' | 'carried' | 'spliced' | 'miss';

describeEachDialect('the port-ops change log and carried answers', (dialect) => {
  let server: TestServer;
  let key: string;
  let accountId: string;
  let sql: (text: string, values?: unknown[]) => Promise<Json[]>;
  /** The server's statements, as its query log shows them. */
  const statements: string[] = [];
  beforeAll(async () => {
    server = await startTestServer({ dialect, onQuery: (text) => statements.push(text) });
    key = server.key('INSTITUTIONAL');
    accountId = server.demo.accounts.find((a) => a.plan === 'INSTITUTIONAL')!.accountId;
    const connection = server.database.db.em().getConnection();
    sql = async (text, values = []) => (await connection.execute(text, values)) as Json[];
  });
  afterAll(() => server?.close());
  const bound = otherWriterBoundMs(dialect);

  const accountVersion = async (): Promise<number> =>
    Number(
      (await sql('select version from read_model_versions where name = ?', [`port-ops:${accountId}`]))[0]!
        .version,
    );

  /** The rows logged for the moves a write makes, and whether they are every move it made. */
  async function logged(
    write: () => Promise<unknown>,
  ): Promise<{ calls: Array<string | null>; moves: number }> {
    const before = await accountVersion();
    await write();
    const after = await accountVersion();
    const rows = await sql(
      'select version, call_id from port_ops_changes where account_id = ? and version > ? order by version',
      [accountId, before],
    );
    expect(new Set(rows.map((r) => Number(r.version))).size, 'a row for every move').toBe(after - before);
    return {
      calls: [...new Set(rows.map((r) => (r.call_id as string | null) ?? null))],
      moves: after - before,
    };
  }

  async function outcomes(): Promise<Record<Outcome, number>> {
    const families = parsePrometheus(await (await fetch(`${server.url}/metrics`)).text());
    const of = (outcome: Outcome) =>
      seriesValue(families, 'tidegate_answer_cache_total', { source: 'port-ops', outcome });
    return { hit: of('hit'), carried: of('carried'), spliced: of('spliced'), miss: of('miss') };
  }
  /** What `reads` counted, by outcome. */
  async function counted(reads: () => Promise<unknown>): Promise<Record<Outcome, number>> {
    const before = await outcomes();
    await reads();
    const after = await outcomes();
    return {
      hit: after.hit - before.hit,
      carried: after.carried - before.carried,
      spliced: after.spliced - before.spliced,
      miss: after.miss - before.miss,
    };
  }

  const scheduled = async (): Promise<Json[]> =>
    (await rest(server.url, '/v1/port-calls?status=SCHEDULED&limit=100', { key })).body.data as Json[];

  /** A new bunkering order on `call` by a vendor serving its port. */
  const orderBunkers = async (call: Json): Promise<string> =>
    postBunkers(server.url, key, call, await bunkeringVendorAt(server.url, key, call));
  const orderableCall = async (): Promise<Json> => (await orderable(server.url, key)).call;

  it('writes a new order in two statements (the call read with its vendor and port, then the order, its history row and its event: in one guarded by the call on PostgreSQL, in a transaction on SQLite), and its confirmation in two (guarded by the call and the order on PostgreSQL)', async () => {
    const { call, vendor } = await orderable(server.url, key);
    statements.length = 0;
    const orderId = await postBunkers(server.url, key, call, vendor);
    const callReads = statements.filter((s) => /from "port_calls" e left join /.test(s));
    expect(callReads).toHaveLength(1);
    expect(callReads[0]).toMatch(
      /left join "vendors" j0 on .* left join "ports" j1 on j1\."id" = e\."port_id"/,
    );
    // PostgreSQL: read without a lock; the write holds the call instead, for as long as it runs.
    if (dialect === 'postgresql') expect(callReads[0]).not.toMatch(/ for /);
    const inserts = statements.filter((s) =>
      /\binsert into "(service_orders|status_changes|events)"/.test(s),
    );
    expect(inserts.map((s) => [...s.matchAll(/insert into "(\w+)"/g)].map((m) => m[1]))).toEqual(
      dialect === 'postgresql'
        ? [['service_orders', 'status_changes', 'events']]
        : [['service_orders'], ['status_changes'], ['events']],
    );
    if (dialect === 'postgresql')
      expect(inserts[0]).toMatch(
        /^\[query\] with g as \(select 1 from "port_calls" e where e\."id" = \? and e\."status" = \? for share of e\), w0 as \(insert into "service_orders" .* select .* where exists \(select 1 from g\)\)/,
      );
    // Nothing else read the vendor or the port on the way.
    expect(statements.filter((s) => /from "(vendors|ports)"/.test(s))).toEqual([]);

    // Its confirmation: the order read with its call in one statement (the call locked on SQLite),
    // then the guarded move, its history row and its event (one statement on PostgreSQL, guarded by
    // the call and the order as read, outside a transaction).
    statements.length = 0;
    await confirmOrder(server.url, key, orderId);
    const reads = statements.filter((s) => /from "service_orders" e /.test(s));
    expect(reads).toHaveLength(1);
    expect(reads[0]).toMatch(
      dialect === 'postgresql'
        ? /from "service_orders" e left join "port_calls" j0 on j0\."id" = e\."port_call_id"/
        : /from "service_orders" e join "port_calls" j0 on j0\."id" = e\."port_call_id"/,
    );
    if (dialect === 'postgresql') expect(reads[0]).not.toMatch(/ for /);
    const written = statements.flatMap((s) =>
      /\b(update "service_orders"|insert into "(status_changes|events)")/.test(s)
        ? [[...s.matchAll(/(update|insert into) "(\w+)"/g)].map((m) => `${m[1]} ${m[2]}`)]
        : [],
    );
    expect(written).toEqual(
      dialect === 'postgresql'
        ? [['update service_orders', 'insert into status_changes', 'insert into events']]
        : [['update service_orders'], ['insert into status_changes'], ['insert into events']],
    );
    if (dialect === 'postgresql') {
      // Only outside a transaction: `preparedGuardedWrite` refuses to run inside one.
      const move = statements.find((s) => /update "service_orders"/.test(s))!;
      expect(move).toMatch(
        /^\[query\] with g as \(select 1 from "port_calls" e where e\."id" = \? and e\."status" = \? for share of e\), u as \(update "service_orders" set .* where "id" = \? and "status" = \? and exists \(select 1 from g\) returning 1\)/,
      );
    }
  });

  it('logs each move with the call whose own data changed, or none where any list may have changed', async () => {
    const call = await orderableCall();
    let orderId = '';
    const sharedVersion = async () =>
      Number((await sql('select version from read_model_versions where name = ?', ['port-ops']))[0]!.version);
    const shared = await sharedVersion();
    // A new order: the order and its history row, each naming the call (the call's lock writes nothing).
    const created = await logged(async () => (orderId = await orderBunkers(call)));
    expect(created.calls).toEqual([call.id]);
    // The history row's trigger found its order's account, though both were written by one statement
    // on PostgreSQL: one it cannot find moves the shared version.
    expect(await sharedVersion()).toBe(shared);
    // PostgreSQL moves an account once per transaction; SQLite once per row written.
    if (dialect === 'postgresql') expect(created.moves).toBe(1);
    else expect(created.moves).toBeGreaterThanOrEqual(2);
    const confirmed = await logged(() => confirmOrder(server.url, key, orderId));
    expect(confirmed.calls).toEqual([call.id]);
    // A field no list filters or sorts on is the call's own; its ETA reorders lists.
    expect(
      (
        await logged(() =>
          rest(server.url, `/v1/port-calls/${call.id}`, {
            method: 'PATCH',
            key,
            body: { agent: 'Changed Agency' },
          }),
        )
      ).calls,
    ).toEqual([call.id]);
    expect(
      (
        await logged(() =>
          rest(server.url, `/v1/port-calls/${call.id}`, {
            method: 'PATCH',
            key,
            body: { eta: new Date(Date.parse(call.eta) + 3_600_000).toISOString() },
          }),
        )
      ).calls,
    ).toContain(null);
    // Any other writer: raw SQL on an order, on a vendor.
    expect(
      (await logged(() => sql('update service_orders set details = details where id = ?', [orderId]))).calls,
    ).toEqual([call.id]);
    const vendor = (await rest(server.url, '/v1/vendors?limit=1', { key })).body.data[0] as Json;
    expect(
      (
        await logged(() =>
          rest(server.url, `/v1/vendors/${vendor.id}`, {
            method: 'PATCH',
            key,
            body: { contactPhone: '+31 10 000 0000' },
          }),
        )
      ).calls,
    ).toEqual([null]);
    // A status move changes which lists the call is in.
    const moved = await logged(() =>
      rest(server.url, `/v1/port-calls/${call.id}/status`, {
        method: 'POST',
        key,
        body: { status: 'ARRIVED' },
      }),
    );
    expect(moved.calls).toContain(null);
  });

  it('tells the calls a range of moves changed only when the log holds every move of it, and keeps what it read', async () => {
    const call = await orderableCall();
    const from = await accountVersion();
    await orderBunkers(call);
    const mid = await accountVersion();
    await orderBunkers(call);
    const to = await accountVersion();
    const root = server.app.services.db.root;
    const log = new ChangeLog();
    const asked = async (a: number, b: number) => {
      statements.length = 0;
      const calls = await log.callsChanged(root, accountId, a, b);
      return { calls: calls && [...calls], read: statements.some((s) => /port_ops_changes/.test(s)) };
    };
    expect(await asked(from, to)).toEqual({ calls: [call.id], read: true });
    // Known now: a part of the range, or all of it, without a statement.
    expect(await asked(mid, to)).toEqual({ calls: [call.id], read: false });
    expect(await asked(from, to)).toEqual({ calls: [call.id], read: false });
    expect(await asked(to, to)).toEqual({ calls: undefined, read: false });
    expect(await asked(to, from)).toEqual({ calls: undefined, read: false });
    // A version moved by hand logs nothing: that move is unknown, and stays so.
    await sql('update read_model_versions set version = version + 1 where name = ?', [
      `port-ops:${accountId}`,
    ]);
    expect(await asked(from, to + 1)).toEqual({ calls: undefined, read: true });
    expect(await asked(to, to + 1)).toEqual({ calls: undefined, read: false });
    // A later move is read from where the log left off.
    await orderBunkers(call);
    const last = await accountVersion();
    expect(await asked(to + 1, last)).toEqual({ calls: [call.id], read: true });
    expect(await asked(from, last)).toEqual({ calls: undefined, read: false });
  });

  it(`keeps the last ${KEPT_BUMPS} moves of an account and drops older ones`, async () => {
    const [order] = await sql('select id, port_call_id from service_orders where account_id = ? limit 1', [
      accountId,
    ]);
    const start = await accountVersion();
    // Past a prune, and far enough that every move before `start` is older than the log keeps.
    for (let i = 0; i < KEPT_BUMPS + 2 * PRUNE_EVERY; i++)
      await sql('update service_orders set details = details where id = ?', [order!.id]);
    const now = await accountVersion();
    expect(now - start).toBe(KEPT_BUMPS + 2 * PRUNE_EVERY);
    const [kept] = await sql(
      'select min(version) as oldest, count(distinct version) as moves from port_ops_changes where account_id = ?',
      [accountId],
    );
    // Both dialects drop the old rows on a move to a multiple of PRUNE_EVERY, and only then.
    const pruned = now - (now % PRUNE_EVERY);
    expect(Number(kept!.oldest)).toBe(pruned - KEPT_BUMPS + 1);
    expect(Number(kept!.moves), 'no move missing in between').toBe(now - Number(kept!.oldest) + 1);
    // Every one of the last KEPT_BUMPS moves has its row: a range that long is still told.
    const told = await new ChangeLog().callsChanged(
      server.app.services.db.root,
      accountId,
      now - KEPT_BUMPS,
      now,
    );
    expect(told && [...told]).toEqual([order!.port_call_id]);
  });

  it('carries a kept list over a write to a call it does not show, and splices the call into the one that shows it', async () => {
    const calls = await scheduled();
    const departed = '/v1/dashboard/port-calls?status=DEPARTED&limit=10';
    const soonest = '/v1/dashboard/port-calls?status=SCHEDULED&limit=5';
    const DASHBOARD = `query D($status: PortCallStatus) { portCalls(first: 10, status: $status) {
      totalCount nodes { id status eta vessel { imo name } port { locode } serviceOrders { id status vendor { name } } }
    } }`;
    const graphqlDeparted = () => gql(server.url, DASHBOARD, { key, variables: { status: 'DEPARTED' } });
    await staleKeptAnswers(server);
    const before = {
      departed: (await rest(server.url, departed, { key })).text,
      soonest: (await rest(server.url, soonest, { key })).body as Json,
      graphql: JSON.stringify((await graphqlDeparted()).body.data),
    };
    // Kept now: the same reads are hits.
    expect(
      (
        await counted(async () => {
          await rest(server.url, departed, { key });
          await graphqlDeparted();
        })
      ).hit,
    ).toBe(2);

    const shown = calls.find((c) => (before.soonest.data as Json[]).some((s) => s.id === c.id))!;
    const orderId = await orderBunkers(shown);
    let departedAfter = '';
    let graphqlAfter = '';
    let soonestAfter: Json = {};
    const outcome = await counted(async () => {
      departedAfter = (await rest(server.url, departed, { key })).text;
      graphqlAfter = JSON.stringify((await graphqlDeparted()).body.data);
      soonestAfter = (await rest(server.url, soonest, { key })).body as Json;
    });
    expect(outcome).toEqual({ hit: 0, carried: 2, spliced: 1, miss: 0 });
    expect(departedAfter).toBe(before.departed);
    expect(graphqlAfter).toBe(before.graphql);
    const orders = (soonestAfter.data as Json[]).find((c) => c.id === shown.id)!.serviceOrders as Json[];
    expect(orders.map((o) => o.id)).toContain(orderId);

    // What an execution answers now: the same bytes the carried and spliced answers gave.
    const soonestText = JSON.stringify(soonestAfter);
    await staleKeptAnswers(server);
    expect(
      (
        await counted(async () => {
          expect((await rest(server.url, departed, { key })).text).toBe(departedAfter);
          expect(JSON.stringify((await graphqlDeparted()).body.data)).toBe(graphqlAfter);
          expect(JSON.stringify((await rest(server.url, soonest, { key })).body)).toBe(soonestText);
        })
      ).miss,
    ).toBe(3);
  });

  it('splices a touched call into every list that shows it, at its place and cursor, as an execution answers', async () => {
    const BOARD = `query Board($first: Int, $after: String) {
      soonest: portCalls(status: SCHEDULED, first: $first, after: $after) {
        totalCount pageInfo { hasNextPage hasPreviousPage startCursor endCursor }
        edges { cursor node { ...Call } }
        nodes { id status }
      }
      latest: portCalls(first: 100) { totalCount nodes { ...Call } }
      __typename
    }
    fragment Call on PortCall {
      id status eta voyageReference vessel { imo name } port { locode } statusHistory { to }
      serviceOrders { id status serviceType vendor { name } statusHistory { from to } }
    }`;
    const { call, vendor } = await orderable(server.url, key);
    const listed = (
      await gql(server.url, '{ portCalls(status: SCHEDULED, first: 100) { edges { cursor node { id } } } }', {
        key,
      })
    ).body.data as { portCalls: { edges: Array<{ cursor: string; node: { id: string } }> } };
    const edges = listed.portCalls.edges;
    const at = edges.findIndex((e) => e.node.id === call.id);
    // The call in the middle of a page after the first, where the list has one.
    const variables = at >= 2 ? { first: 3, after: edges[at - 2]!.cursor } : { first: 3 };
    const board = async (): Promise<string> => {
      const response = await gql(server.url, BOARD, { key, variables });
      expect(response.body.errors).toBeUndefined();
      return JSON.stringify(response.body.data);
    };
    const ordersOf = (text: string, list: 'soonest' | 'latest'): Json[] => {
      const data = JSON.parse(text) as Json;
      const shown = data[list] as Json;
      const nodes =
        list === 'soonest' ? (shown.edges as Json[]).map((e) => e.node as Json) : (shown.nodes as Json[]);
      return (nodes.find((n) => n.id === call.id)?.serviceOrders as Json[] | undefined) ?? [];
    };
    await staleKeptAnswers(server);
    await board();
    expect((await counted(board)).hit).toBe(1);

    let ordered = '';
    const orderId = await postBunkers(server.url, key, call, vendor);
    expect(await counted(async () => (ordered = await board()))).toEqual({
      hit: 0,
      carried: 0,
      spliced: 1,
      miss: 0,
    });
    expect(ordersOf(ordered, 'soonest').map((o) => o.id)).toContain(orderId);
    const soonest = (JSON.parse(ordered) as Json).soonest as Json;
    expect((soonest.edges as Json[]).map((e) => (e.node as Json).id)).toEqual(
      (soonest.nodes as Json[]).map((n) => n.id),
    );
    expect((soonest.edges as Json[]).find((e) => (e.node as Json).id === call.id)!.cursor).toBe(
      edges[at]!.cursor,
    );
    if (ordersOf(ordered, 'latest').length > 0)
      expect(ordersOf(ordered, 'latest').map((o) => o.id)).toContain(orderId);

    let confirmed = '';
    await confirmOrder(server.url, key, orderId);
    expect((await counted(async () => (confirmed = await board()))).spliced).toBe(1);
    expect(ordersOf(confirmed, 'soonest').find((o) => o.id === orderId)!.status).toBe('CONFIRMED');

    // An execution in full answers the same bytes.
    await staleKeptAnswers(server);
    const executed = await counted(async () => expect(await board()).toBe(confirmed));
    expect(executed).toEqual({ hit: 0, carried: 0, spliced: 0, miss: 1 });
  });

  it('executes again when a list may have changed: a call moved, a vendor, a vessel, a version moved by hand', async () => {
    const list = '/v1/dashboard/port-calls?status=DEPARTED&limit=10';
    const read = () => rest(server.url, list, { key });
    const vendor = (await rest(server.url, '/v1/vendors?limit=1', { key })).body.data[0] as Json;
    const call = (await scheduled())[0]!;
    const shownVessel = ((await read()).body.data as Json[])[0]!.vesselImo as string;
    const writes: Array<[string, () => Promise<unknown>]> = [
      [
        'a call moved',
        () =>
          rest(server.url, `/v1/port-calls/${call.id}/status`, {
            method: 'POST',
            key,
            body: { status: 'CANCELLED' },
          }),
      ],
      [
        'a vendor',
        () =>
          rest(server.url, `/v1/vendors/${vendor.id}`, {
            method: 'PATCH',
            key,
            body: { contactPhone: '+31 10 111 1111' },
          }),
      ],
      ['a vessel', () => sql('update vessels set name = name where imo = ?', [shownVessel])],
      ['a version moved by hand', () => staleKeptAnswers(server)],
    ];
    for (const [what, write] of writes) {
      await read();
      expect((await counted(read)).hit, `${what}: kept before`).toBe(1);
      await write();
      // Another writer's change reaches a PostgreSQL gateway by its notice.
      const outcome = await servedWithin(
        () => counted(read),
        (o) => o.hit === 0,
        bound,
      );
      expect(outcome, what).toEqual({ hit: 0, carried: 0, spliced: 0, miss: 1 });
    }
  });

  it('serves a change another connection makes to a shown call, and carries the lists that do not show it', async () => {
    const soonest = '/v1/dashboard/port-calls?status=SCHEDULED&limit=5';
    const departed = '/v1/dashboard/port-calls?status=DEPARTED&limit=10';
    const shown = ((await rest(server.url, soonest, { key })).body.data as Json[])[0]!;
    const kept = (await rest(server.url, departed, { key })).text;
    await rest(server.url, departed, { key });
    const reference = `OTHER-${Date.now()}`;
    const other = await openAppDatabase(server.database.url);
    try {
      await other
        .em()
        .getConnection()
        .execute('update port_calls set voyage_reference = ? where id = ?', [reference, shown.id]);
    } finally {
      await other.close();
    }
    const served = await servedWithin(
      async () => ((await rest(server.url, soonest, { key })).body.data as Json[])[0]!.voyageReference,
      (v) => v === reference,
      bound,
    );
    expect(served).toBe(reference);
    const outcome = await counted(async () =>
      expect((await rest(server.url, departed, { key })).text).toBe(kept),
    );
    expect(outcome).toEqual({ hit: 0, carried: 1, spliced: 0, miss: 0 });
  });
});
