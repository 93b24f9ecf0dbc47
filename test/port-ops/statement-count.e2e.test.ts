import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachDialect } from '../helpers/env.js';
import { DASHBOARD_QUERY } from '../bench/port-ops.js';
import {
  gql,
  rest,
  staleKeptAnswers,
  staleToStatements,
  startTestServer,
  type TestServer,
} from '../helpers/server.js';

/*
 * Statements the edge runs for every request whatever it asks (credential cache fill, audit
 * batch, revocation and deny-list polling) are not the resolvers' work; they are listed and
 * excluded by table so the assertion is about the query alone.
 */
const EDGE_TABLES =
  /\b(api_keys|audit_records|accounts|oauth_\w+|revoked_\w+|access_tokens|refresh_tokens|token_\w+|events|webhook_\w+)\b/;

describeEachDialect('SQL statements of the port-call dashboard', (dialect) => {
  let server: TestServer;
  let recording = false;
  const statements: string[] = [];
  beforeAll(async () => {
    server = await startTestServer({
      dialect,
      onQuery: (sql) => {
        // begin/commit without a statement come from background pollers (webhook outbox), not from reads.
        if (recording && /^\[query\] (select|insert|update|delete|with)\b/i.test(sql)) statements.push(sql);
      },
    });
  });
  afterAll(() => server?.close());

  const VERSION_READ = /from read_model_versions/;
  /**
   * Versions are kept in memory (src/db/versions.ts): PostgreSQL hears of moves by notice, SQLite
   * polls at most every POLL_MS (one statement: the rows stamped since the last poll), so a request
   * sends at most a poll's statement for each version it checks (the kept answer's, and
   * when the operation executes, the shared data's for the kept vessels and ports and the
   * account's for the port-call read model, whose first read of a version reads by statement,
   * which is what these tests count).
   */
  const pollStatements = dialect === 'sqlite' ? 1 : 0;

  async function record(run: () => Promise<unknown>): Promise<{ domain: string[]; versions: string[] }> {
    statements.length = 0;
    recording = true;
    await run();
    recording = false;
    const reads = statements.filter((s) => !EDGE_TABLES.test(s));
    return {
      domain: reads.filter((s) => !VERSION_READ.test(s)),
      versions: reads.filter((s) => VERSION_READ.test(s)),
    };
  }

  /**
   * The statements of an execution (the kept answer is made stale first), then of the same request
   * again: answered from the kept result after checking the data version alone.
   */
  async function count(run: () => Promise<unknown>): Promise<{ domain: string[] }> {
    // Warms the credential cache too, so the measured run is steady-state.
    await staleToStatements(server, run);
    const executed = await record(run);
    // Proof the log is really captured: each relation's one batched statement is there (the orders'
    // vendors in the orders' statement).
    for (const table of ['port_calls', 'vessels', 'ports', 'service_orders', 'vendors']) {
      expect(
        executed.domain.some((s) => new RegExp(`(from|join) .${table}. `).test(s)),
        `${table} in\n${executed.domain.join('\n')}`,
      ).toBe(true);
    }
    expect(executed.domain.filter((s) => /from .vendors. /.test(s))).toEqual([]);
    expect(executed.versions.length).toBeLessThanOrEqual(3 * pollStatements);
    const kept = await record(run);
    expect(kept.domain, kept.domain.join('\n')).toEqual([]);
    expect(kept.versions.length).toBeLessThanOrEqual(pollStatements);
    return executed;
  }

  it('GraphQL: 50 port calls with vessel, port, orders and vendors in at most 4 statements plus the version check, then in the version check alone', async () => {
    let answer: Awaited<ReturnType<typeof gql>> | undefined;
    const { domain } = await count(async () => {
      answer = await gql(server.url, DASHBOARD_QUERY, { key: server.key('INSTITUTIONAL') });
    });
    expect(answer!.body.errors).toBeUndefined();
    const nodes = (answer!.body.data!.portCalls as { nodes: Array<{ serviceOrders: unknown[] }> }).nodes;
    expect(nodes).toHaveLength(50);
    expect(nodes.flatMap((n) => n.serviceOrders).length).toBeGreaterThan(20);
    expect(domain.length, domain.join('\n')).toBeLessThanOrEqual(4);
  });

  it('REST: the same dashboard route in at most 4 statements plus the version check, then in the version check alone', async () => {
    let body: { data: unknown[] } | undefined;
    const { domain } = await count(async () => {
      const res = await rest(server.url, '/v1/dashboard/port-calls?limit=50', {
        key: server.key('INSTITUTIONAL'),
      });
      expect(res.status).toBe(200);
      body = res.body;
    });
    expect(body!.data).toHaveLength(50);
    expect(domain.length, domain.join('\n')).toBeLessThanOrEqual(4);
  });

  it('GraphQL: the orders of a list and their vendors in one statement, named through edges and fragments too, with the same answer', async () => {
    const key = server.key('INSTITUTIONAL');
    const viaFragments = `query Dashboard {
      portCalls(first: 50) { totalCount edges { node { ...Call } } }
    }
    fragment Call on PortCall {
      id status voyageReference eta etb etd ata atb atd
      vessel { imo name type flag }
      port { locode name timeZone }
      ... on PortCall { serviceOrders { ...Order } }
    }
    fragment Order on ServiceOrder { id serviceType status details vendor { id name } }`;
    const plain = await gql(server.url, DASHBOARD_QUERY, { key });
    expect(plain.body.errors).toBeUndefined();
    let answer: Awaited<ReturnType<typeof gql>> | undefined;
    await staleToStatements(server, () => gql(server.url, viaFragments, { key }));
    const { domain } = await record(async () => {
      answer = await gql(server.url, viaFragments, { key });
    });
    expect(answer!.body.errors).toBeUndefined();
    const edges = (answer!.body.data!.portCalls as { edges: Array<{ node: unknown }> }).edges;
    expect(edges.map((e) => e.node)).toEqual((plain.body.data!.portCalls as { nodes: unknown[] }).nodes);
    const orders = domain.filter((s) => /from .service_orders. /.test(s));
    expect(orders, domain.join('\n')).toHaveLength(1);
    expect(orders[0]).toMatch(/join .vendors. /);
    expect(domain.filter((s) => /from .vendors. /.test(s))).toEqual([]);
  });

  it("GraphQL: a list's calls, orders and vendors read only the columns the operation's fields read, anywhere in it", async () => {
    const key = server.key('INSTITUTIONAL');
    await staleKeptAnswers(server);
    const { domain } = await record(() => gql(server.url, DASHBOARD_QUERY, { key }));
    const [calls] = domain.filter((s) => /from .port_calls. /.test(s));
    const columns = calls!.slice(0, calls!.indexOf(' from '));
    expect(columns).toMatch(/e\."voyage_reference"/);
    expect(columns).not.toMatch(/e\.\*|created_at|account_id|agent/);
    const [orders] = domain.filter((s) => /from .service_orders. /.test(s));
    expect(orders).toMatch(/e\."service_type"/);
    expect(orders).toMatch(/j\."name" as "joined__name"/);
    expect(orders).not.toMatch(/requested_for|completed_at|contact_email|"services"/);

    // Rows read ahead answer every order and vendor of the request: a second list of the same calls
    // and the vendors of invoices read what the first list left out.
    const parts = {
      narrow: 'narrow: portCalls(first: 50) { nodes { id serviceOrders { id status vendor { id name } } } }',
      wide: 'wide: portCalls(first: 50) { nodes { agent createdAt serviceOrders { requestedFor updatedAt vendor { contactEmail services active } } } }',
      invoices: 'invoices(first: 20) { nodes { id vendor { contactPhone createdAt } } }',
    };
    const alone: Record<string, unknown> = {};
    for (const [name, part] of Object.entries(parts)) {
      const answer = await gql(server.url, `{ ${part} }`, { key });
      expect(answer.body.errors).toBeUndefined();
      alone[name] = answer.body.data![name];
    }
    expect((alone.invoices as { nodes: unknown[] }).nodes.length).toBeGreaterThan(0);
    await staleKeptAnswers(server);
    const together = await gql(server.url, `{ ${Object.values(parts).join(' ')} }`, { key });
    expect(together.body.errors).toBeUndefined();
    expect(together.body.data).toEqual(alone);
  });
});
