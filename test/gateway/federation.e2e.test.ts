import { composeServices } from '@apollo/composition';
import { ApolloGateway, RemoteGraphQLDataSource } from '@apollo/gateway';
import { ApolloServer } from '@apollo/server';
import { startStandaloneServer } from '@apollo/server/standalone';
import { Kind, parse, print, visit } from 'graphql';
import { randomUUID } from 'node:crypto';
import type { IncomingHttpHeaders } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AuditRecord } from '../../src/audit/entities.js';
import { SUBGRAPH_NAMES } from '../../src/config.js';
import { subgraph } from '../../src/modules.js';
import { DASHBOARD_QUERY } from '../bench/port-ops.js';
import { untilListening, wsSession } from '../events/helpers.js';
import { describeWithRedis, TEST_REDIS_URL } from '../helpers/env.js';
import { startSubgraphServer, startTestServer, type Json, type TestServer } from '../helpers/server.js';

/**
 * The subgraphs behind a real federation router: their `_service { sdl }`, fetched over HTTP and
 * composed, served by Apollo Gateway, which forwards the client's credentials; each operation
 * gets the same data and error codes through it as through the whole gateway's own /graphql.
 */

/** What the router hands each subgraph request: the client's credentials and request id. */
const FORWARDED = ['authorization', 'x-api-key', 'x-request-id'];

const SECURITY_DIRECTIVES = new Set(['authenticated', 'requiresScopes']);

/**
 * Apollo Gateway enforces no authorization directive, so it refuses a supergraph that links them
 * `for: SECURITY` (Apollo Router, Hive Gateway and Cosmo take it as it is). The subgraphs enforce
 * them whatever the router does, so this router gets the supergraph without them.
 */
function withoutSecurityFeatures(supergraphSdl: string): string {
  return print(
    visit(parse(supergraphSdl), {
      Directive(node) {
        if (SECURITY_DIRECTIVES.has(node.name.value)) return null;
        const url = node.arguments?.find((a) => a.name.value === 'url')?.value;
        const linksSecurity =
          node.name.value === 'link' &&
          url?.kind === Kind.STRING &&
          [...SECURITY_DIRECTIVES].some((name) => url.value.includes(`/${name}/`));
        return linksSecurity ? null : undefined;
      },
      DirectiveDefinition: (node) => (SECURITY_DIRECTIVES.has(node.name.value) ? null : undefined),
      ScalarTypeDefinition: (node) => (node.name.value === 'requiresScopes__Scope' ? null : undefined),
    }),
  );
}

/** A subgraph's SDL as a router reads it: `_service { sdl }`, with no credential. */
async function serviceSdl(url: string): Promise<string> {
  const res = await fetch(`${url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ query: '{ _service { sdl } }' }),
  });
  const body = (await res.json()) as Json;
  if (!body.data) throw new Error(`_service: ${JSON.stringify(body.errors)}`);
  return body.data._service.sdl as string;
}

interface RouterContext {
  headers: IncomingHttpHeaders;
}

async function startRouter(subgraphs: Array<{ name: string; url: string }>) {
  const composed = composeServices(
    await Promise.all(
      subgraphs.map(async ({ name, url }) => ({
        name,
        url: `${url}/graphql`,
        typeDefs: parse(await serviceSdl(url)),
      })),
    ),
  );
  if (composed.errors) throw new Error(composed.errors.map((e) => e.message).join('\n'));
  const gateway = new ApolloGateway({
    supergraphSdl: withoutSecurityFeatures(composed.supergraphSdl),
    buildService: ({ url }) =>
      new RemoteGraphQLDataSource<RouterContext>({
        url,
        willSendRequest({ request, context }) {
          for (const name of FORWARDED) {
            const value = context.headers?.[name];
            if (typeof value === 'string') request.http?.headers.set(name, value);
          }
        },
      }),
  });
  // @apollo/gateway implements the gateway interface of Apollo Server 4, which version 5 still runs.
  const server = new ApolloServer<RouterContext>({ gateway: gateway as never });
  const { url } = await startStandaloneServer(server, {
    listen: { port: 0, host: '127.0.0.1' },
    context: async ({ req }) => ({ headers: req.headers }),
  });
  return { url: url.replace(/\/$/, ''), stop: () => server.stop() };
}

interface Outcome {
  data: Json;
  codes: string[];
}

/** POST to a /graphql; the data and the error codes, which must agree between doors. */
async function run(
  endpoint: string,
  query: string,
  headers: Record<string, string> = {},
  variables?: Record<string, unknown>,
): Promise<Outcome> {
  const res = await fetch(endpoint, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ query, variables }),
  });
  const body = (await res.json()) as Json;
  const codes = ((body.errors ?? []) as Json[]).map((e) => String(e.extensions?.code)).sort();
  return { data: body.data ?? null, codes };
}

describe('the subgraphs behind Apollo Gateway', () => {
  let whole: TestServer;
  let subgraphs: Array<Awaited<ReturnType<typeof startSubgraphServer>>> = [];
  let router: Awaited<ReturnType<typeof startRouter>>;

  beforeAll(async () => {
    whole = await startTestServer({ env: { PORT_OPS_PER_MINUTE: '1000' } });
    subgraphs = await Promise.all(SUBGRAPH_NAMES.map((name) => startSubgraphServer(whole, name)));
    router = await startRouter(SUBGRAPH_NAMES.map((name, i) => ({ name, url: subgraphs[i]!.url })));
  }, 60_000);
  afterAll(async () => {
    await router?.stop();
    await Promise.all(subgraphs.map((s) => s.close()));
    await whole?.close();
  });

  const bothWays = async (query: string, headers: Record<string, string>, variables?: Json) => {
    const direct = await run(`${whole.url}/graphql`, query, headers, variables);
    const routed = await run(`${router.url}/graphql`, query, headers, variables);
    return { direct, routed };
  };

  const key = (plan: 'OBSERVER' | 'ANALYST' | 'PROFESSIONAL' | 'INSTITUTIONAL') => ({
    'x-api-key': whole.key(plan),
  });

  it('the dashboard: 50 port calls with vessels, ports, orders and vendors', async () => {
    const { direct, routed } = await bothWays(DASHBOARD_QUERY, key('INSTITUTIONAL'));
    expect(direct.codes).toEqual([]);
    expect(direct.data.portCalls.nodes.length).toBeGreaterThan(0);
    expect(routed).toEqual(direct);
  });

  it('a liquidity list', async () => {
    const query = `{ protocols(first: 20) {
      totalCount nodes { slug name category liquidityScore liquidityTier aumUsd } } }`;
    const { direct, routed } = await bothWays(query, key('ANALYST'));
    expect(direct.codes).toEqual([]);
    expect(direct.data.protocols.nodes.length).toBeGreaterThan(0);
    expect(routed).toEqual(direct);
  });

  it('one operation across the three subgraphs: the viewer, port calls and protocols', async () => {
    const query = `query Overview { viewer { accountId plan scopes }
      portCalls(first: 3) { totalCount nodes { id vessel { imo } } }
      protocols(first: 3) { nodes { slug } } }`;
    const { direct, routed } = await bothWays(query, key('PROFESSIONAL'));
    expect(direct.codes).toEqual([]);
    expect(direct.data.viewer.plan).toBe('PROFESSIONAL');
    expect(routed).toEqual(direct);
  });

  it('a scope denial: the audit log wants admin', async () => {
    const { direct, routed } = await bothWays('{ auditLog(first: 1) { totalCount } }', key('INSTITUTIONAL'));
    expect(direct).toEqual({ data: null, codes: ['FORBIDDEN'] });
    expect(routed).toEqual(direct);
  });

  it('a plan denial: protocols want Analyst or higher', async () => {
    const { direct, routed } = await bothWays('{ protocols(first: 1) { totalCount } }', key('OBSERVER'));
    expect(direct.data).toBeNull();
    expect(direct.codes).toHaveLength(1);
    expect(routed).toEqual(direct);
  });

  it('no credential, or one that is not valid', async () => {
    for (const headers of [{}, { 'x-api-key': 'tg_not_a_key' }] as Array<Record<string, string>>) {
      const { direct, routed } = await bothWays('{ viewer { accountId } }', headers);
      expect(direct).toEqual({ data: null, codes: ['UNAUTHENTICATED'] });
      expect(routed).toEqual(direct);
    }
  });

  it('a validation error', async () => {
    const { direct, routed } = await bothWays('{ portCalls(first: 1) { nodes { berth } } }', key('ANALYST'));
    expect(direct).toEqual({ data: null, codes: ['GRAPHQL_VALIDATION_FAILED'] });
    expect(routed).toEqual(direct);
  });

  it('a bad argument, refused by the subgraph with the same code', async () => {
    const { direct, routed } = await bothWays('{ vessel(imo: "123") { name } }', key('ANALYST'));
    expect(direct.codes).toEqual(['BAD_USER_INPUT']);
    expect(routed).toEqual(direct);
  });

  it('each subgraph answers _service { sdl } to anyone, as checked in under schema/subgraphs/', async () => {
    for (const [i, name] of SUBGRAPH_NAMES.entries()) {
      expect(await serviceSdl(subgraphs[i]!.url)).toBe(subgraph(name).sdl);
    }
  });

  it('resolves the Viewer entity for the caller’s own account only, and only for a caller', async () => {
    const accounts = `${subgraphs[SUBGRAPH_NAMES.indexOf('accounts')]!.url}/graphql`;
    const query = `query ($representations: [_Any!]!) {
      _entities(representations: $representations) { ... on Viewer { accountId plan } } }`;
    const own = whole.demo.accounts.find((a) => a.plan === 'ANALYST')!.accountId;
    const other = whole.demo.accounts.find((a) => a.plan === 'PROFESSIONAL')!.accountId;
    const representations = [own, other].map((accountId) => ({ __typename: 'Viewer', accountId }));
    expect(await run(accounts, query, key('ANALYST'), { representations })).toEqual({
      data: { _entities: [{ accountId: own, plan: 'ANALYST' }, null] },
      codes: [],
    });
    expect(await run(accounts, query, {}, { representations })).toEqual({
      data: null,
      codes: ['UNAUTHENTICATED'],
    });
    const unknown = await run(accounts, query, key('ANALYST'), {
      representations: [{ __typename: 'Vessel', imo: '9074729' }],
    });
    expect(unknown.codes).toEqual(['BAD_USER_INPUT']);
  });

  it('serves subscriptions on the subgraph’s own graphql-ws endpoint, fed by mutations through the router', async () => {
    const portOps = subgraphs[SUBGRAPH_NAMES.indexOf('port-ops')]!;
    const listeners = () => portOps.app.services.bus.listenerCount;
    const before = listeners();
    const session = wsSession(portOps.url, { apiKey: whole.key('INSTITUTIONAL') });
    const updates = session.subscribe(
      'subscription { portCallUpdated { portCallId status previousStatus } }',
    );
    await untilListening(() => listeners() >= before + 1, 5_000, updates);
    const scheduled = await run(
      `${router.url}/graphql`,
      '{ portCalls(first: 1, status: SCHEDULED) { nodes { id } } }',
      key('INSTITUTIONAL'),
    );
    const id = scheduled.data.portCalls.nodes[0].id as string;
    const moved = await run(
      `${router.url}/graphql`,
      'mutation ($id: ID!) { transitionPortCall(id: $id, status: ARRIVED) { status } }',
      key('INSTITUTIONAL'),
      { id },
    );
    expect(moved).toEqual({ data: { transitionPortCall: { status: 'ARRIVED' } }, codes: [] });
    await updates.waitFor((s) => s.data.length >= 1);
    expect(updates.data).toEqual([
      { portCallUpdated: { portCallId: id, status: 'ARRIVED', previousStatus: 'SCHEDULED' } },
    ]);
    await session.dispose();
  });

  it('audits one row per subgraph request, under the request id the router forwarded', async () => {
    const requestId = randomUUID();
    const query = 'query Overview { viewer { accountId } ports(first: 1) { totalCount } }';
    const routed = await run(`${router.url}/graphql`, query, {
      ...key('ANALYST'),
      'x-request-id': requestId,
    });
    expect(routed.codes).toEqual([]);
    await Promise.all(subgraphs.map((s) => s.app.services.audit.flush()));
    const rows = await whole.database.db
      .em()
      .find(AuditRecord, { requestId }, { orderBy: { operation: 'asc' } });
    // The router names each subgraph's part of the operation after it.
    expect(rows.map((r) => [r.operation, r.status])).toEqual([
      [expect.stringMatching(/^query Overview__accounts__\d+$/), 200],
      [expect.stringMatching(/^query Overview__port_ops__\d+$/), 200],
    ]);
  });
});

describeWithRedis('the subgraphs’ rate limits, shared in Redis', () => {
  let whole: TestServer;
  let subgraphs: Array<Awaited<ReturnType<typeof startSubgraphServer>>> = [];
  let router: Awaited<ReturnType<typeof startRouter>>;
  const names = ['accounts', 'port-ops'] as const;

  beforeAll(async () => {
    whole = await startTestServer();
    const env = { REDIS_URL: TEST_REDIS_URL!, REDIS_PREFIX: `fed-${randomUUID()}`, PORT_OPS_PER_MINUTE: '3' };
    subgraphs = await Promise.all(names.map((name) => startSubgraphServer(whole, name, env)));
    router = await startRouter(names.map((name, i) => ({ name, url: subgraphs[i]!.url })));
  }, 60_000);
  afterAll(async () => {
    await router?.stop();
    await Promise.all(subgraphs.map((s) => s.close()));
    await whole?.close();
  });

  it('counts each subgraph request of a routed operation as one call against the one budget', async () => {
    const query = '{ viewer { accountId } ports(first: 1) { totalCount } }';
    const headers = { 'x-api-key': whole.key('ANALYST') };
    // Two subgraph requests: two of the credential's three calls a minute.
    expect((await run(`${router.url}/graphql`, query, headers)).codes).toEqual([]);
    // Two more: the third call passes, the fourth is refused, whichever subgraph makes it.
    expect(await run(`${router.url}/graphql`, query, headers)).toEqual({
      data: null,
      codes: ['RATE_LIMIT_EXCEEDED'],
    });
  });
});
