/**
 * The mixed scenario of `npm run bench`: a multi-tenant dashboard load where tenants write while
 * they read. One sequence of requests, drawn once from a seeded generator and shared by all
 * connections (each connection takes the next request of it), picks for every request a tenant of
 * the fixture (fixture.ts) and:
 *
 * - 65 % a port-call dashboard variant: the GraphQL dashboard (vessel, port, orders, vendors nested)
 *   with 50 calls, its second page by cursor, SCHEDULED (20), BERTHED (10) or DEPARTED (25) only, or
 *   the REST dashboard of SCHEDULED calls (20);
 * - 30 % a liquidity list read with filters (category, tier, `min_score`) on REST or GraphQL;
 * - 5 % a write of that tenant that moves its data version: a new bunkering order on one of its
 *   planned calls, or the confirmation of one of its REQUESTED orders (each order once; when a
 *   tenant has none left, a new order instead). With `BENCH_MIXED_WRITES_APART=true` the same
 *   writes are made by one more tenant, whose data no read of the sequence asks for (with as many
 *   calls as all the others, so it has as many orders to confirm): the reads and the writes are
 *   the same, but no kept answer is carried or spliced and no read model moves, so the two runs
 *   tell the writes' own cost from what they cost the reads after them.
 *
 * Its ceiling replays the same sequence (same methods, headers and bodies) against the bare server,
 * which answers each request with the bytes the gateway gave for that read at start (or for a
 * write of the same kind), from a ready Buffer.
 */
import { mulberry32 } from '../../src/kernel/random.js';
import type { CapturedAnswer } from './ceiling.js';
import { CALLS_PER_TENANT, generateFixture, TENANTS, type Tenant } from './fixture.js';
import { benchFlag, type BenchRequest, type BenchScenario } from './scenario.js';

const DASHBOARD = `query MixedDashboard($first: Int, $after: String, $status: PortCallStatus) {
  portCalls(first: $first, after: $after, status: $status) {
    totalCount
    pageInfo { hasNextPage endCursor }
    nodes {
      id status voyageReference eta etb etd ata atb atd
      vessel { imo name type flag }
      port { locode name timeZone }
      serviceOrders { id serviceType status details vendor { id name } }
    }
  }
}`;
const PROTOCOLS = `query MixedProtocols($category: ProtocolCategory, $tier: LiquidityTier, $minScore: Float) {
  protocols(first: 20, category: $category, tier: $tier, minScore: $minScore) {
    nodes { slug name category liquidityScore liquidityTier }
  }
}`;

type Variables = Record<string, unknown>;
/** Dashboard variants and their weights within the dashboard share; `page2` follows the first page's cursor. */
const DASHBOARDS: Array<{ weight: number; variables?: Variables; page2?: boolean; rest?: string }> = [
  { weight: 30, variables: { first: 50 } },
  { weight: 10, variables: { first: 50 }, page2: true },
  { weight: 25, variables: { first: 20, status: 'SCHEDULED' } },
  { weight: 10, variables: { first: 10, status: 'BERTHED' } },
  { weight: 10, variables: { first: 25, status: 'DEPARTED' } },
  { weight: 15, rest: '/v1/dashboard/port-calls?status=SCHEDULED&limit=20' },
];
/** Liquidity list reads (the same answer for every tenant). */
const LIQUIDITY: Array<{ rest?: string; variables?: Variables }> = [
  { rest: '/v1/protocols?category=treasury&limit=20' },
  { rest: '/v1/protocols?category=private_credit&min_score=40' },
  { rest: '/v1/protocols?tier=l1&limit=50' },
  { rest: '/v1/protocols?tier=l2&min_score=30' },
  { rest: '/v1/protocols?min_score=60&limit=100' },
  { rest: '/v1/protocols?category=real_estate&tier=l3' },
  { variables: { category: 'TREASURY', minScore: 50 } },
  { variables: { tier: 'L2' } },
];

const SHARE_LIQUIDITY = 0.3;
/**
 * The writes' share, `BENCH_MIXED_WRITES` percent (default 5): 0 measures the same reads with no
 * write moving a version, the most the mix can take of its ceiling; the dashboards take what
 * the writes leave.
 */
const SHARE_WRITES = writeShare(process.env.BENCH_MIXED_WRITES);

function writeShare(text: string | undefined): number {
  if (text === undefined || text === '') return 0.05;
  const percent = Number(text);
  if (!/^\d+(\.\d+)?$/.test(text) || percent > 70)
    throw new Error(`BENCH_MIXED_WRITES must be a percentage from 0 to 70 (got '${text}')`);
  return percent / 100;
}
const SEQUENCE_LENGTH = 5000;

/**
 * `BENCH_MIXED_WRITES_APART=true`: the writes are made by a tenant no read asks for (one more
 * tenant in the fixture, with the calls of all the others, so that its orders to confirm last as
 * long as theirs) instead of by the reading tenants.
 */
const WRITES_APART = benchFlag('BENCH_MIXED_WRITES_APART');

const MIXED = `mixed: ${TENANTS} tenants × ${CALLS_PER_TENANT} port calls, dashboards + liquidity lists + ${+(SHARE_WRITES * 100).toFixed(2)} % writes${WRITES_APART ? ' by a tenant no read asks for' : ''}`;

type Entry =
  | { kind: 'read'; request: BenchRequest; answer: number }
  | { kind: 'write'; tenant: number; confirm: boolean };

export interface MixedPlan {
  /** The distinct answers the ceiling replays; an entry's `answer` indexes them. */
  answers: CapturedAnswer[];
  /** The gateway's sequence: each call returns the next request (shared by all connections). */
  gateway: () => BenchRequest;
  /** The ceiling's sequence: the same requests, each on the path of its answer. */
  ceiling: (pathOf: (answer: number) => string) => () => BenchRequest;
  /** Distinct reads, writes made while capturing. */
  stats: { reads: number; tenants: number };
}

const keyHeaders = (key: string) => ({ 'x-api-key': key });
const gqlHeaders = (key: string) => ({ ...keyHeaders(key), 'content-type': 'application/json' });

/**
 * Captures every distinct read of the sequence from the gateway at `url` and draws the sequence:
 * `tenants` read and write, or only read when `writer` makes every write.
 */
export async function buildMixed(url: string, tenants: Tenant[], writer?: Tenant): Promise<MixedPlan> {
  const answers: CapturedAnswer[] = [];
  const fetchAnswer = async (r: BenchRequest): Promise<{ index: number; json: unknown }> => {
    const res = await fetch(url + r.path, { method: r.method, headers: r.headers, body: r.body });
    const body = await res.text();
    if (!res.ok || body.includes('"errors"'))
      throw new Error(`mixed: ${r.method} ${r.path} ${r.body ?? ''}: ${res.status} ${body.slice(0, 300)}`);
    answers.push({
      path: `/m/${answers.length}`,
      contentType: res.headers.get('content-type') ?? 'application/json',
      body,
    });
    return { index: answers.length - 1, json: JSON.parse(body) as unknown };
  };

  // Per tenant, each dashboard variant: its request and its answer.
  const dashboards: Array<Array<{ request: BenchRequest; answer: number }>> = [];
  for (const tenant of tenants) {
    const mine: Array<{ request: BenchRequest; answer: number }> = [];
    let cursor: string | undefined;
    for (const v of DASHBOARDS) {
      let request: BenchRequest;
      if (v.rest) {
        request = { method: 'GET', path: v.rest, headers: keyHeaders(tenant.apiKey) };
      } else {
        const variables = v.page2 ? { ...v.variables, after: cursor } : v.variables;
        request = {
          method: 'POST',
          path: '/graphql',
          headers: gqlHeaders(tenant.apiKey),
          body: JSON.stringify({ query: DASHBOARD, operationName: 'MixedDashboard', variables }),
        };
      }
      const { index, json } = await fetchAnswer(request);
      if (!v.rest && !v.page2 && !v.variables?.status) {
        cursor = (json as { data: { portCalls: { pageInfo: { endCursor: string } } } }).data.portCalls
          .pageInfo.endCursor;
      }
      mine.push({ request, answer: index });
    }
    dashboards.push(mine);
  }
  // Liquidity reads: one answer per variant, asked with each tenant's key.
  const liquidity: Array<{ request: (key: string) => BenchRequest; answer: number }> = [];
  for (const v of LIQUIDITY) {
    const request = (key: string): BenchRequest =>
      v.rest
        ? { method: 'GET', path: v.rest, headers: keyHeaders(key) }
        : {
            method: 'POST',
            path: '/graphql',
            headers: gqlHeaders(key),
            body: JSON.stringify({
              query: PROTOCOLS,
              operationName: 'MixedProtocols',
              variables: v.variables,
            }),
          };
    liquidity.push({ request, answer: (await fetchAnswer(request(tenants[0]!.apiKey))).index });
  }
  // One write of each kind, made now, gives the bytes the ceiling answers writes with.
  const writers = writer ? [writer] : tenants;
  const pools = writers.map((t) => ({ scheduled: t.scheduled, requested: [...t.requested], next: 0 }));
  const writeRequest = (t: number, confirm: boolean): BenchRequest => {
    const tenant = writers[t]!;
    const pool = pools[t]!;
    const headers = gqlHeaders(tenant.apiKey);
    const order = confirm ? pool.requested.pop() : undefined;
    if (order)
      return {
        method: 'POST',
        path: `/v1/service-orders/${order}/status`,
        headers,
        body: JSON.stringify({ status: 'CONFIRMED' }),
      };
    const call = tenant.scheduled[pool.next++ % tenant.scheduled.length]!;
    return {
      method: 'POST',
      path: '/v1/service-orders',
      headers,
      body: JSON.stringify({
        portCallId: call.callId,
        serviceType: 'BUNKERING',
        vendorId: call.vendorId,
        details: { quantity: 500, unit: 'MT', fuelType: 'VLSFO' },
      }),
    };
  };
  const created = (await fetchAnswer(writeRequest(0, false))).index;
  const confirmed = (await fetchAnswer(writeRequest(0, true))).index;

  const random = mulberry32(28);
  const totalWeight = DASHBOARDS.reduce((n, v) => n + v.weight, 0);
  const entries: Entry[] = [];
  for (let i = 0; i < SEQUENCE_LENGTH; i++) {
    const t = Math.floor(random() * tenants.length);
    const roll = random();
    if (roll < SHARE_WRITES) {
      entries.push({ kind: 'write', tenant: writer ? 0 : t, confirm: random() < 0.5 });
    } else if (roll < SHARE_WRITES + SHARE_LIQUIDITY) {
      const v = liquidity[Math.floor(random() * liquidity.length)]!;
      entries.push({ kind: 'read', request: v.request(tenants[t]!.apiKey), answer: v.answer });
    } else {
      let w = random() * totalWeight;
      const v = DASHBOARDS.findIndex((d) => (w -= d.weight) < 0);
      entries.push({ kind: 'read', ...dashboards[t]![v === -1 ? 0 : v]! });
    }
  }

  let gatewayAt = 0;
  return {
    answers,
    gateway: () => {
      const e = entries[gatewayAt++ % entries.length]!;
      return e.kind === 'read' ? e.request : writeRequest(e.tenant, e.confirm);
    },
    ceiling: (pathOf) => {
      // The write bodies do not matter to the ceiling: it answers by path.
      const sample = writeRequest(0, false);
      const requests = entries.map((e) =>
        e.kind === 'read'
          ? { ...e.request, path: pathOf(e.answer) }
          : {
              ...sample,
              headers: gqlHeaders(writers[e.tenant]!.apiKey),
              path: pathOf(e.confirm ? confirmed : created),
            },
      );
      let at = 0;
      return () => requests[at++ % requests.length]!;
    },
    stats: { reads: answers.length - 2, tenants: tenants.length },
  };
}

export const scenarios: BenchScenario[] = [
  {
    name: MIXED,
    method: 'GET',
    path: '/',
    targetShare: { sqlite: 0.4, postgresql: 0.3 },
    targetP99: { sqlite: 25, postgresql: 40 },
    sequence: async ({ url, databaseUrl }) => {
      const t0 = performance.now();
      const calls = new Array<number>(TENANTS).fill(CALLS_PER_TENANT);
      if (WRITES_APART) calls.push(TENANTS * CALLS_PER_TENANT);
      const tenants = await generateFixture(databaseUrl, calls);
      console.error(
        `  mixed: fixture of ${tenants.length} tenants, ${calls.reduce((n, c) => n + c, 0)} port calls, written in ${Math.round(performance.now() - t0)} ms`,
      );
      const plan = await buildMixed(url, tenants.slice(0, TENANTS), tenants[TENANTS]);
      console.error(`  mixed: captured ${plan.stats.reads} distinct reads`);
      return plan;
    },
  },
];
