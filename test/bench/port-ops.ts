import type { BenchKeys, BenchRequest, BenchScenario } from './scenario.js';

/** The dashboard: 50 port calls with vessel, port, service orders and each order's vendor. */
export const DASHBOARD_QUERY = `query Dashboard {
  portCalls(first: 50) {
    totalCount
    nodes {
      id status voyageReference eta etb etd ata atb atd
      vessel { imo name type flag }
      port { locode name timeZone }
      serviceOrders { id serviceType status details vendor { id name } }
    }
  }
}`;

const DASHBOARD = 'GraphQL dashboard (50 port calls + vessel, port, orders, vendors)';
const inst = (k: BenchKeys) => ({ 'x-api-key': k.INSTITUTIONAL });
const gqlHeaders = (k: BenchKeys) => ({ ...inst(k), 'content-type': 'application/json' });
const DASHBOARD_BODY = JSON.stringify({ query: DASHBOARD_QUERY, operationName: 'Dashboard' });
/** One service order per WRITE_EVERY requests of each connection. */
const WRITE_EVERY = 10;

/**
 * The write mix: each connection reads the dashboard and creates a service order every tenth
 * request. The orders go to a scheduled call that neither the dashboard page nor the scheduled
 * list shows, so the bytes the other scenarios (and their ceilings) answer stay the same.
 */
async function writeMix({ url, keys }: { url: string; keys: BenchKeys }): Promise<BenchRequest[]> {
  const get = async (path: string) =>
    (
      (await (await fetch(url + path, { headers: inst(keys) })).json()) as {
        data: Array<Record<string, string>>;
      }
    ).data;
  const dashboard = (await (
    await fetch(`${url}/graphql`, { method: 'POST', headers: gqlHeaders(keys), body: DASHBOARD_BODY })
  ).json()) as { data: { portCalls: { nodes: Array<{ id: string }> } } };
  const shown = new Set([
    ...dashboard.data.portCalls.nodes.map((n) => n.id),
    ...(await get('/v1/port-calls?status=SCHEDULED&limit=10')).map((c) => c.id),
  ]);
  const call = (await get('/v1/port-calls?status=SCHEDULED&limit=100')).find((c) => !shown.has(c.id!));
  if (!call) throw new Error('write mix: no scheduled port call outside the dashboard page');
  const vendors = (await get('/v1/vendors?serviceType=BUNKERING&limit=100')) as unknown as Array<{
    id: string;
    ports: string[];
  }>;
  const vendor = vendors.find((v) => v.ports.includes(call.portLocode!));
  if (!vendor) throw new Error(`write mix: no bunkering vendor at ${call.portLocode}`);
  const read: BenchRequest = {
    method: 'POST',
    path: '/graphql',
    headers: gqlHeaders(keys),
    body: DASHBOARD_BODY,
  };
  const write: BenchRequest = {
    method: 'POST',
    path: '/v1/service-orders',
    headers: { ...inst(keys), 'content-type': 'application/json' },
    body: JSON.stringify({
      portCallId: call.id,
      serviceType: 'BUNKERING',
      vendorId: vendor.id,
      details: { quantity: 500, unit: 'MT', fuelType: 'VLSFO' },
    }),
  };
  return [...Array.from({ length: WRITE_EVERY - 1 }, () => read), write];
}

export const scenarios: BenchScenario[] = [
  {
    name: DASHBOARD,
    method: 'POST',
    path: '/graphql',
    headers: gqlHeaders,
    body: DASHBOARD_BODY,
    ceiling: true,
    targetShare: 0.4,
    targetP99: 20,
    coldTarget: { share: { sqlite: 0.3, postgresql: 0.2 }, p99: 40 },
  },
  {
    name: 'REST /v1/dashboard/port-calls?limit=50 (same data)',
    method: 'GET',
    path: '/v1/dashboard/port-calls?limit=50',
    headers: inst,
    ceiling: true,
    // The GraphQL dashboard's 0.4 allows for the POST floor; a GET read is held to 0.5 like every other.
    targetShare: 0.5,
  },
  {
    name: 'write mix: the GraphQL dashboard + 1 service order per 10 requests',
    method: 'POST',
    path: '/graphql',
    headers: gqlHeaders,
    body: DASHBOARD_BODY,
    mix: writeMix,
    ceilingOf: DASHBOARD,
  },
  {
    name: 'REST /v1/port-calls?status=SCHEDULED&limit=10',
    method: 'GET',
    path: '/v1/port-calls?status=SCHEDULED&limit=10',
    headers: inst,
    ceiling: true,
    targetShare: 0.5,
    coldTarget: { share: { sqlite: 0.3, postgresql: 0.2 } },
  },
];
