import type { BenchScenario } from './scenario.js';

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

export const scenarios: BenchScenario[] = [
  {
    name: 'GraphQL dashboard (50 port calls + vessel, port, orders, vendors)',
    method: 'POST',
    path: '/graphql',
    headers: (k) => ({ 'content-type': 'application/json', 'x-api-key': k.INSTITUTIONAL }),
    body: JSON.stringify({ query: DASHBOARD_QUERY, operationName: 'Dashboard' }),
  },
  {
    name: 'REST /v1/dashboard/port-calls?limit=50 (same data)',
    method: 'GET',
    path: '/v1/dashboard/port-calls?limit=50',
    headers: (k) => ({ 'x-api-key': k.INSTITUTIONAL }),
    baseline: 'GraphQL dashboard (50 port calls + vessel, port, orders, vendors)',
  },
  {
    name: 'REST /v1/port-calls?status=SCHEDULED&limit=10',
    method: 'GET',
    path: '/v1/port-calls?status=SCHEDULED&limit=10',
    headers: (k) => ({ 'x-api-key': k.INSTITUTIONAL }),
  },
];
