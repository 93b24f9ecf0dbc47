import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/kernel/clock.js';
import { registerClient, startAuthServer, tokenRequest } from '../auth/helpers.js';
import { describeEachDialect } from '../helpers/env.js';
import { gql, rest, startTestServer, type TestServer } from '../helpers/server.js';

describeEachDialect("the seed's three documented calls", (dialect) => {
  let server: TestServer;
  let key: string;
  beforeAll(async () => {
    const started = Date.now();
    server = await startTestServer({ dialect });
    console.log(`port-ops test server with demo seed (${dialect}): ${Date.now() - started} ms`);
    key = server.key('INSTITUTIONAL');
  });
  afterAll(() => server?.close());

  it('GET /v1/port-calls?status=SCHEDULED&limit=10 lists scheduled calls, soonest first, with paging', async () => {
    const res = await rest(server.url, '/v1/port-calls?status=SCHEDULED&limit=10', { key });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ limit: 10, offset: 0 });
    expect(res.body.data).toHaveLength(10);
    expect(res.body.total).toBeGreaterThan(10);
    for (const call of res.body.data) {
      expect(call).toMatchObject({ status: 'SCHEDULED' });
      expect(call.vesselImo).toMatch(/^\d{7}$/);
      expect(call.portLocode).toMatch(/^[A-Z]{5}$/);
    }
    const etas = res.body.data.map((c: { eta: string }) => c.eta);
    expect([...etas].sort()).toEqual(etas);

    const next = await rest(server.url, '/v1/port-calls?status=SCHEDULED&limit=10&offset=10', { key });
    expect(next.status).toBe(200);
    expect(next.body.offset).toBe(10);
    expect(next.body.total).toBe(res.body.total);
    const ids = new Set(res.body.data.map((c: { id: string }) => c.id));
    expect(next.body.data.some((c: { id: string }) => ids.has(c.id))).toBe(false);
  });

  it('POST /v1/service-orders with the seed body creates a REQUESTED bunkering order (201)', async () => {
    const calls = await rest(server.url, '/v1/port-calls?status=SCHEDULED&limit=1', { key });
    const call = calls.body.data[0];
    const vendors = await rest(
      server.url,
      `/v1/vendors?portLocode=${call.portLocode}&serviceType=BUNKERING`,
      { key },
    );
    expect(vendors.status).toBe(200);
    const vendorId = vendors.body.data[0].id;
    const body = {
      portCallId: call.id,
      serviceType: 'BUNKERING',
      vendorId,
      details: { quantity: 500, unit: 'MT', fuelType: 'VLSFO' },
    };
    const res = await rest(server.url, '/v1/service-orders', { method: 'POST', key, body });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ ...body, status: 'REQUESTED' });
    expect(res.body.id).toMatch(/^[0-9a-f-]{36}$/);
    const read = await rest(server.url, `/v1/service-orders/${res.body.id}`, { key });
    expect(read.body.statusHistory).toEqual([
      expect.objectContaining({ from: null, to: 'REQUESTED', actor: expect.stringMatching(/^api_key:/) }),
    ]);
  });

  it('GET /v1/vessels/lookup?imo=9074729 finds the demo vessel', async () => {
    const res = await rest(server.url, '/v1/vessels/lookup?imo=9074729', { key });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ imo: '9074729', name: 'Northern Tern', flag: 'SG', type: 'TANKER' });
  });

  it('GraphQL sees the same data as a connection', async () => {
    const res = await gql(
      server.url,
      '{ portCalls(status: SCHEDULED, first: 3) { totalCount nodes { id status vessel { imo } port { locode } } pageInfo { hasNextPage endCursor } } }',
      { key },
    );
    expect(res.body.errors).toBeUndefined();
    const conn = res.body.data!.portCalls as {
      totalCount: number;
      nodes: unknown[];
      pageInfo: { hasNextPage: boolean };
    };
    expect(conn.nodes).toHaveLength(3);
    expect(conn.pageInfo.hasNextPage).toBe(true);
  });
});

describe("the seed's three documented calls with an OAuth access token (client_credentials)", () => {
  let server: TestServer;
  let token: string;
  beforeAll(async () => {
    server = await startAuthServer();
    const accountId = server.demo.accounts.find((a) => a.plan === 'INSTITUTIONAL')!.accountId;
    const client = await registerClient(server, systemClock, {
      accountId,
      scopes: 'read:port_calls read:vessels read:vendors write:service_orders',
      grantTypes: 'client_credentials',
    });
    const res = await tokenRequest(server, {
      grant_type: 'client_credentials',
      client_id: client.client_id,
      client_secret: client.client_secret!,
      scope: 'port-calls:read vessels:read vendors:read service-orders:write',
    });
    expect(res.status).toBe(200);
    token = String(res.body.access_token);
  });
  afterAll(() => server?.close());

  it('lists, orders and looks up with Authorization: Bearer', async () => {
    const list = await rest(server.url, '/v1/port-calls?status=SCHEDULED&limit=10', { bearer: token });
    expect(list.status).toBe(200);
    expect(list.body.data).toHaveLength(10);
    const call = list.body.data[0];
    const vendors = await rest(
      server.url,
      `/v1/vendors?portLocode=${call.portLocode}&serviceType=BUNKERING`,
      { bearer: token },
    );
    const body = {
      portCallId: call.id,
      serviceType: 'BUNKERING',
      vendorId: vendors.body.data[0].id,
      details: { quantity: 500, unit: 'MT', fuelType: 'VLSFO' },
    };
    const created = await rest(server.url, '/v1/service-orders', { method: 'POST', bearer: token, body });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ ...body, status: 'REQUESTED' });
    const vessel = await rest(server.url, '/v1/vessels/lookup?imo=9074729', { bearer: token });
    expect(vessel.status).toBe(200);
    expect(vessel.body.name).toBe('Northern Tern');
  });
});
