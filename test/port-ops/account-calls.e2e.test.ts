import { afterAll, beforeAll, expect, it } from 'vitest';
import { AccountCalls } from '../../src/port-ops/account-calls.js';
import { ChangeLog } from '../../src/port-ops/changes.js';
import { DASHBOARD_QUERY } from '../bench/port-ops.js';
import { describeEachDialect } from '../helpers/env.js';
import { orderableCall, postBunkers } from './orders.js';
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
 * The port-call read model (src/port-ops/account-calls.ts): a list of calls read a second time at
 * one version of the account's data is answered from memory. Kept answers are off here, so every
 * request executes; each comparison reads a list first by statement (a version's first read), then
 * from the model it builds on the second read, then from the kept model, and wants the same bytes.
 */

/** Statements on the tables the model answers for. */
const MODEL_TABLES = /(from|join) "(port_calls|service_orders|vendors)"/;

describeEachDialect('the port-call read model', (dialect) => {
  let server: TestServer;
  let key: string;
  let recording = false;
  const statements: string[] = [];
  beforeAll(async () => {
    server = await startTestServer({
      dialect,
      env: { ANSWER_CACHE_MB: '0' },
      onQuery: (sql) => {
        if (recording) statements.push(sql);
      },
    });
    key = server.key('INSTITUTIONAL');
  });
  afterAll(() => server?.close());

  async function modelStatements(run: () => Promise<unknown>): Promise<string[]> {
    statements.length = 0;
    recording = true;
    await run();
    recording = false;
    return statements.filter((s) => MODEL_TABLES.test(s));
  }

  /** The same read three times after a version moved: by statement, building the model, from it. */
  async function threeWays(read: () => Promise<{ status: number; text: string }>): Promise<string> {
    await staleKeptAnswers(server);
    const first = await read();
    const second = await read();
    let third: { status: number; text: string } | undefined;
    const ran = await modelStatements(async () => {
      third = await read();
    });
    expect(ran, 'the third read runs no statement on calls, orders or vendors').toEqual([]);
    // A refusal names its request; everything else is the same bytes.
    const same = (text: string) => text.replace(/"requestId":"[^"]*"/, '"requestId":""');
    expect(second.status).toBe(first.status);
    expect(same(second.text) === same(first.text), `second read: ${second.text.slice(0, 300)}`).toBe(true);
    expect(third!.status).toBe(first.status);
    expect(same(third!.text) === same(first.text), `third read: ${third!.text.slice(0, 300)}`).toBe(true);
    return first.text;
  }

  const get = (path: string) => () => rest(server.url, path, { key });

  /** A new bunkering order on a scheduled call, by a vendor serving the call's port. */
  async function orderBunkers(): Promise<{ call: Json; vendor: Json; orderId: string }> {
    const { call, vendor } = await orderableCall(server.url, key);
    return { call, vendor, orderId: await postBunkers(server.url, key, call, vendor) };
  }

  it('the first read of a version reads by statement, the second builds the model, the third reads none', async () => {
    await staleKeptAnswers(server);
    const path = '/v1/port-calls?status=SCHEDULED&limit=10';
    expect(await modelStatements(get(path))).not.toEqual([]);
    const build = await modelStatements(get(path));
    expect(build.some((s) => /from "port_calls"/.test(s))).toBe(true);
    expect(build.some((s) => /from "vendors" where "account_id"/.test(s))).toBe(true);
    // A list that shows no orders reads none.
    expect(build.some((s) => /from "service_orders"/.test(s))).toBe(false);
    expect(await modelStatements(get(path))).toEqual([]);
    expect(server.app.services.accountCalls.size).toBeGreaterThan(0);
  });

  it('a model is carried over a write to its calls, rebuilt after one it cannot be carried over when it served more than one read, and read by statement when it served one', async () => {
    const path = '/v1/port-calls?status=SCHEDULED&limit=10';
    const builds = (ran: string[]) => ran.some((s) => /from "vendors" where "account_id"/.test(s));
    const rereads = (ran: string[]) =>
      ran.some((s) => /from "port_calls" where "account_id" = \? and "id" in/.test(s));
    // Whatever the earlier tests left, after three reads of one version a model has served two.
    await staleKeptAnswers(server);
    for (let i = 0; i < 3; i++) await get(path)();
    expect(await modelStatements(get(path))).toEqual([]);
    // A new order changes its call's own data: the model reads that call again, nothing else.
    const { call, orderId } = await orderBunkers();
    const carried = await modelStatements(get(path));
    expect(rereads(carried), 'the call read again').toBe(true);
    expect(builds(carried), 'not rebuilt').toBe(false);
    expect(await modelStatements(get(path))).toEqual([]);
    // A status move changes lists: the model, which served more than one read, is rebuilt at once.
    const moved = await rest(server.url, `/v1/port-calls/${call.id}/status`, {
      method: 'POST',
      key,
      body: { status: 'ARRIVED' },
    });
    expect(moved.status, moved.text).toBe(200);
    expect(builds(await modelStatements(get(path))), 'rebuilt on the first read').toBe(true);
    // This model has answered one read when the next such move comes: read by statement, then built.
    const cancelled = await rest(server.url, `/v1/service-orders/${orderId}/status`, {
      method: 'POST',
      key,
      body: { status: 'CANCELLED' },
    });
    expect(cancelled.status, cancelled.text).toBe(200);
    await staleKeptAnswers(server); // a move the log cannot vouch for
    const first = await modelStatements(get(path));
    expect(first).not.toEqual([]);
    expect(builds(first), 'read by statement').toBe(false);
    expect(builds(await modelStatements(get(path))), 'built on the second read').toBe(true);
  });

  it('a model carried over writes to its calls answers the same bytes as one built afresh', async () => {
    const paths = [
      '/v1/dashboard/port-calls?limit=50',
      '/v1/dashboard/port-calls?status=SCHEDULED&limit=20',
      '/v1/port-calls?status=SCHEDULED&limit=10',
    ];
    const builds = (ran: string[]) => ran.some((s) => /from "vendors" where "account_id"/.test(s));
    await staleKeptAnswers(server);
    for (const path of paths) for (let i = 0; i < 3; i++) await get(path)();
    // Two calls' own data change: a new order on one, the agent of another.
    const { call } = await orderBunkers();
    const other = (
      (await rest(server.url, '/v1/port-calls?status=SCHEDULED&limit=20', { key })).body.data as Json[]
    ).find((c) => c.id !== call.id)!;
    const patched = await rest(server.url, `/v1/port-calls/${other.id}`, {
      method: 'PATCH',
      key,
      body: { agent: `Carried Agency ${Date.now()}` },
    });
    expect(patched.status, patched.text).toBe(200);
    const carried: string[] = [];
    const ran = await modelStatements(async () => {
      for (const path of paths) carried.push((await get(path)()).text);
    });
    expect(builds(ran), 'carried, not rebuilt').toBe(false);
    expect(carried.join()).toContain(patched.body.agent as string);
    await staleKeptAnswers(server); // a move the log cannot vouch for: the next model is built afresh
    for (const [i, path] of paths.entries()) expect((await get(path)()).text, path).toBe(carried[i]);
  });

  it('every filter, order and page answers the same bytes from the model as by statement', async () => {
    const all = JSON.parse(await threeWays(get('/v1/port-calls?limit=100'))) as Json;
    expect(all.data).toHaveLength(100);
    const sample = all.data[7];
    // ETA bounds taken from the data: etaFrom includes its instant, etaTo excludes its own.
    const etas = (all.data as Json[]).map((c) => c.eta as string).sort();
    const paths = [
      '/v1/port-calls?status=SCHEDULED&limit=10',
      '/v1/port-calls?status=SCHEDULED&limit=10&offset=10',
      '/v1/port-calls?status=DEPARTED&limit=25&offset=5',
      '/v1/port-calls?status=BERTHED',
      '/v1/port-calls?status=CANCELLED&limit=3',
      `/v1/port-calls?portLocode=${sample.portLocode}&limit=20`,
      `/v1/port-calls?vesselImo=${sample.vesselImo}&limit=20&offset=2`,
      `/v1/port-calls?portLocode=${sample.portLocode}&status=DEPARTED&limit=5`,
      `/v1/port-calls?etaFrom=${etas[10]}&etaTo=${etas[60]}&limit=100`,
      `/v1/port-calls?etaFrom=${etas[10]}&limit=7`,
      `/v1/port-calls?etaTo=${etas[60]}&status=DEPARTED&limit=7`,
      '/v1/port-calls?limit=10&offset=100000',
      '/v1/port-calls?status=SCHEDULED&limit=1&offset=100000',
      '/v1/dashboard/port-calls?limit=50',
      '/v1/dashboard/port-calls?status=SCHEDULED&limit=20&offset=20',
      // Refusals: the same error whichever way the list is read.
      '/v1/port-calls?status=NOPE',
      '/v1/port-calls?portLocode=ZZZZZ',
      '/v1/port-calls?etaFrom=yesterday',
    ];
    for (const path of paths) {
      const body = JSON.parse(await threeWays(get(path))) as Json;
      if (path.includes('offset=100000')) expect(body.data, path).toEqual([]);
    }
  });

  it('GraphQL: the dashboard, a second page by cursor and the orders and vendors of every call', async () => {
    const read = (query: string, variables?: Record<string, unknown>) => async () => {
      const res = await gql(server.url, query, { key, variables });
      // Without `extensions`: the cost budget left moves with every request.
      return { status: res.status, text: JSON.stringify({ data: res.body.data, errors: res.body.errors }) };
    };
    const dashboard = JSON.parse(await threeWays(read(DASHBOARD_QUERY))) as Json;
    expect(dashboard.errors).toBeUndefined();
    expect(dashboard.data.portCalls.nodes).toHaveLength(50);
    const orders = (dashboard.data.portCalls.nodes as Json[]).flatMap((n) => n.serviceOrders as Json[]);
    expect(orders.length).toBeGreaterThan(20);
    expect(orders.every((o) => o.vendor === null || typeof o.vendor.name === 'string')).toBe(true);
    const paged = `query P($after: String) {
      portCalls(first: 5, after: $after, status: DEPARTED) {
        totalCount pageInfo { hasNextPage endCursor } edges { cursor node { id eta vesselImo portLocode serviceOrders { id createdAt } } }
      }
    }`;
    const first = JSON.parse(await threeWays(read(paged))) as Json;
    const after = first.data.portCalls.pageInfo.endCursor as string;
    const second = JSON.parse(await threeWays(read(paged, { after }))) as Json;
    expect(second.data.portCalls.edges[0].node.id).not.toBe(first.data.portCalls.edges[4].node.id);
  });

  it("a client's write is read back on its next request after the model was built", async () => {
    const scheduled = get('/v1/port-calls?status=SCHEDULED&limit=100');
    await staleKeptAnswers(server);
    await scheduled();
    await scheduled(); // the model is built
    const { call, vendor, orderId } = await orderBunkers();
    const LIST = `query { portCalls(first: 100, status: SCHEDULED) { nodes { id serviceOrders { id vendor { id } } } } }`;
    const ordersOf = async () =>
      ((await gql(server.url, LIST, { key })).body.data!.portCalls as Json).nodes.find(
        (n: Json) => n.id === call.id,
      ).serviceOrders as Json[];
    expect((await ordersOf()).map((o) => o.id)).toContain(orderId);
    expect((await ordersOf()).find((o) => o.id === orderId).vendor.id).toBe(vendor.id);

    const moved = await rest(server.url, `/v1/port-calls/${call.id}/status`, {
      method: 'POST',
      key,
      body: { status: 'ARRIVED' },
    });
    expect(moved.status, moved.text).toBe(200);
    expect(((await scheduled()).body.data as Json[]).map((c) => c.id)).not.toContain(call.id);
    const arrived = get('/v1/port-calls?status=ARRIVED&limit=100');
    expect(((await arrived()).body.data as Json[]).map((c) => c.id)).toContain(call.id);
    expect(((await arrived()).body.data as Json[]).map((c) => c.id)).toContain(call.id);
  });

  it("a client's next read after its write takes the version from the database, not from a notice still on its way", async () => {
    // Kept answers are off here: the mutation must still mark what its caller reads, or on
    // PostgreSQL the model would answer from the version in memory until the write's notice lands.
    const path = '/v1/port-calls?status=SCHEDULED&limit=10';
    await staleKeptAnswers(server);
    for (let i = 0; i < 3; i++) await get(path)();
    await orderBunkers();
    statements.length = 0;
    recording = true;
    await get(path)();
    recording = false;
    expect(statements.filter((s) => /from read_model_versions/.test(s))).not.toEqual([]);
  });

  it("a new service order or port call moves its account's version, never the shared one", async () => {
    const shared = async () =>
      Number(
        (
          (await server.database.db
            .em()
            .getConnection()
            .execute(`select version from read_model_versions where name = 'port-ops'`)) as Json[]
        )[0].version,
      );
    const before = await shared();
    const { call } = await orderBunkers();
    const created = await rest(server.url, '/v1/port-calls', {
      method: 'POST',
      key,
      body: {
        vesselImo: call.vesselImo,
        portLocode: call.portLocode,
        voyageReference: 'SHARED-1',
        eta: new Date(Date.parse(call.eta) + 86_400_000).toISOString(),
      },
    });
    expect(created.status, created.text).toBe(201);
    // Every account's kept answers, vessels, ports and models hang on the shared version.
    expect(await shared()).toBe(before);
  });

  it('a write that did not come through the pipeline is served within the bound for other writers', async () => {
    const list = get('/v1/port-calls?limit=20');
    await staleKeptAnswers(server);
    await list();
    const before = (await list()).body.data as Json[];
    const id = before[3].id as string;
    const reference = `RAW-${Date.now()}`;
    await server.database.db
      .em()
      .getConnection()
      .execute(`update port_calls set voyage_reference = '${reference}' where id = '${id}'`);
    const read = async () => ((await list()).body.data as Json[]).find((c) => c.id === id)?.voyageReference;
    expect(await servedWithin(read, (v) => v === reference, otherWriterBoundMs(dialect))).toBe(reference);
  });

  it('bounds: an account past the per-account bound reads by statement from then on; past the total, nothing is kept; never in a transaction or for an admin', async () => {
    const em = server.app.services.db.em();
    const rows = (await em
      .getConnection()
      .execute(
        `select account_id from port_calls group by account_id order by count(*) desc limit 1`,
      )) as Array<{ account_id: string }>;
    const account = { accountId: rows[0]!.account_id, scopes: new Set<string>() };
    const versions = server.app.services.versions;

    const small = new AccountCalls(versions, new ChangeLog(), { maxRows: 1_000_000, maxAccountCalls: 10 });
    expect(await small.model(em, account)).toBeUndefined(); // first sight
    expect(await small.model(em, account)).toBeUndefined(); // too large: not built
    expect(await small.model(em, account)).toBeUndefined(); // and not read again
    expect(small.size).toBe(0);

    const tight = new AccountCalls(versions, new ChangeLog(), { maxRows: 10, maxAccountCalls: 1_000_000 });
    await tight.model(em, account);
    const built = await tight.model(em, account);
    expect(built?.calls.length).toBeGreaterThan(10); // this read is answered from it …
    expect(tight.size).toBe(0); // … but it is not kept

    const roomy = new AccountCalls(versions, new ChangeLog());
    await roomy.model(em, account);
    const kept = await roomy.model(em, account);
    expect(roomy.size).toBe(kept!.rows);
    expect(await roomy.model(em, account)).toBe(kept);
    // Inside a transaction the list reads by statement.
    await em.transactional(async (tx) => {
      expect(await roomy.model(tx, account)).toBeUndefined();
    });
    // An admin's lists span accounts: never the model, even of its own account.
    const admin = { ...account, scopes: new Set(['admin']) };
    expect(await roomy.model(em, admin)).toBeUndefined();
    expect(await roomy.model(em, admin)).toBeUndefined();
  });
});
