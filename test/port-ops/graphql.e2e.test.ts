import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachDialect } from '../helpers/env.js';
import { createKey, gql, rest, startTestServer, type TestServer } from '../helpers/server.js';
import { portOpsState } from './state.js';

describeEachDialect('port-ops over GraphQL', (dialect) => {
  let server: TestServer;
  let key: string;
  beforeAll(async () => {
    server = await startTestServer({ dialect });
    key = server.key('INSTITUTIONAL');
  });
  afterAll(() => server?.close());

  it('pages a connection with first/after without overlap, and refuses after together with offset', async () => {
    const page = (after?: string) =>
      gql(
        server.url,
        'query($after: String) { portCalls(first: 5, after: $after) { totalCount nodes { id } pageInfo { endCursor hasNextPage } } }',
        {
          key,
          variables: { after },
        },
      );
    const first = (await page()).body.data!.portCalls as {
      nodes: Array<{ id: string }>;
      pageInfo: { endCursor: string };
    };
    const second = (await page(first.pageInfo.endCursor)).body.data!.portCalls as {
      nodes: Array<{ id: string }>;
    };
    expect(second.nodes).toHaveLength(5);
    expect(second.nodes.some((n) => first.nodes.some((f) => f.id === n.id))).toBe(false);
    const both = await gql(
      server.url,
      `{ portCalls(after: "${first.pageInfo.endCursor}", offset: 3) { totalCount } }`,
      { key },
    );
    expect(both.body.errors?.[0]?.message).toMatch(/^offset: give either after or offset/);
  });

  it('creates, reschedules, arrives and cancels a call; history names the actor', async () => {
    const created = await gql(
      server.url,
      'mutation { createPortCall(input: { vesselImo: "IMO 9321483", portLocode: "nl rtm", voyageReference: "G-1", eta: "2030-03-01T00:00:00Z" }) { id status vessel { name } port { name } } }',
      { key },
    );
    expect(created.body.errors).toBeUndefined();
    const call = created.body.data!.createPortCall as {
      id: string;
      vessel: { name: string };
      port: { name: string };
    };
    expect(call).toMatchObject({ vessel: { name: 'Harbour Lark' }, port: { name: 'Rotterdam' } });
    const patched = await gql(
      server.url,
      `mutation { updatePortCall(id: "${call.id}", patch: { agent: "Anchorpoint", etb: "2030-03-01T08:00:00Z" }) { agent etb eta } }`,
      { key },
    );
    expect(patched.body.data!.updatePortCall).toEqual({
      agent: 'Anchorpoint',
      etb: '2030-03-01T08:00:00.000Z',
      eta: '2030-03-01T00:00:00.000Z',
    });
    await gql(server.url, `mutation { transitionPortCall(id: "${call.id}", status: ARRIVED) { status } }`, {
      key,
    });
    const cancelled = await gql(
      server.url,
      `mutation { transitionPortCall(id: "${call.id}", status: CANCELLED) { status ata statusHistory { from to actor } } }`,
      { key },
    );
    const result = cancelled.body.data!.transitionPortCall as {
      status: string;
      ata: string;
      statusHistory: Array<{ from: string | null; to: string; actor: string }>;
    };
    expect(result.status).toBe('CANCELLED');
    expect(result.ata).toBeTruthy();
    expect(result.statusHistory.map((h) => `${h.from}->${h.to}`)).toEqual([
      'null->SCHEDULED',
      'SCHEDULED->ARRIVED',
      'ARRIVED->CANCELLED',
    ]);
    expect(result.statusHistory.every((h) => h.actor.startsWith('api_key:'))).toBe(true);
  });

  it('a bad IMO is BAD_USER_INPUT naming the field; an unknown id reads as null', async () => {
    const bad = await gql(
      server.url,
      'mutation { createPortCall(input: { vesselImo: "123", portLocode: "SGSIN", voyageReference: "G-2", eta: "2030-03-01T00:00:00Z" }) { id } }',
      {
        key,
      },
    );
    expect(bad.body.errors?.[0]?.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'vesselImo' });
    const missing = await gql(
      server.url,
      '{ portCall(id: "nope") { id } serviceOrder(id: "00000000-0000-4000-8000-000000000000") { id } }',
      { key },
    );
    expect(missing.body.data).toEqual({ portCall: null, serviceOrder: null });
  });

  it('nested fields need their own scopes: serviceOrders needs read:service_orders', async () => {
    const { secret } = await createKey(server, { scopes: 'read:port_calls' });
    const plain = await gql(server.url, '{ portCalls(first: 1) { nodes { id vesselImo portLocode } } }', {
      key: secret,
    });
    expect(plain.body.errors).toBeUndefined();
    const nested = await gql(server.url, '{ portCalls(first: 1) { nodes { id serviceOrders { id } } } }', {
      key: secret,
    });
    expect(nested.body.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    expect(nested.body.errors?.[0]?.message).toMatch(/read:service_orders/);
  });

  it('admin sees every account; an ordinary key of another account sees none', async () => {
    const { secret: adminKey } = await createKey(server, { plan: 'ANALYST', scopes: 'admin' });
    const all = await rest(server.url, '/v1/port-calls?limit=1', { key: adminKey });
    const own = await rest(server.url, '/v1/port-calls?limit=1', { key });
    expect(all.body.total).toBeGreaterThanOrEqual(own.body.total);
    expect(own.body.total).toBeGreaterThan(1000);
    expect(
      (await rest(server.url, '/v1/port-calls?limit=1', { key: server.key('ANALYST') })).body.total,
    ).toBe(0);
  });

  it('vendors: create, filter by port and service, deactivate (no new orders: 409)', async () => {
    const created = await rest(server.url, '/v1/vendors', {
      method: 'POST',
      key,
      body: { name: 'Gull Towage', services: ['TOWAGE'], ports: ['sgsin'], contactEmail: 'ops@gull.example' },
    });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ ports: ['SGSIN'], active: true });
    const found = await rest(server.url, '/v1/vendors?portLocode=SGSIN&serviceType=TOWAGE', { key });
    expect(found.body.data.map((v: { id: string }) => v.id)).toContain(created.body.id);
    const off = await rest(server.url, `/v1/vendors/${created.body.id}`, {
      method: 'PATCH',
      key,
      body: { active: false },
    });
    expect(off.body.active).toBe(false);
    const call = (await rest(server.url, '/v1/port-calls?status=SCHEDULED&portLocode=SGSIN&limit=1', { key }))
      .body.data[0];
    const before = await portOpsState(server);
    const order = await rest(server.url, '/v1/service-orders', {
      method: 'POST',
      key,
      body: { portCallId: call.id, serviceType: 'TOWAGE', vendorId: created.body.id, details: { tugs: 2 } },
    });
    expect(order.status).toBe(409);
    expect(order.body.error.message).toBe('Vendor Gull Towage is inactive and takes no new orders');
    expect(await portOpsState(server)).toEqual(before);
  });
});
