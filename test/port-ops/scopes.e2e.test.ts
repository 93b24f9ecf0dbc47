import {
  getNamedType,
  isObjectType,
  valueFromASTUntyped,
  type DirectiveNode,
  type GraphQLNamedType,
} from 'graphql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gatewaySchema } from '../../src/modules.js';
import { portOpsEntities } from '../../src/port-ops/entities.js';
import { createKey, gql, rest, startTestServer, type TestServer } from '../helpers/server.js';

/** The read scope(s) that expose each port-ops resource (any one suffices), as in the seed's scope table. */
const READ_SCOPE: Record<string, string[]> = {
  Vessel: ['read:vessels'],
  Port: ['read:port_calls', 'read:vessels'],
  PortCall: ['read:port_calls'],
  ServiceOrder: ['read:service_orders'],
  Vendor: ['read:vendors'],
  Invoice: ['read:invoices'],
  Document: ['read:documents'],
};
/** Status history is part of its subject: reading it needs the subject's read scope. */
const HISTORY = 'StatusChange';

const ROOTS = new Set(['Query', 'Mutation', 'Subscription']);

function scopesOf(directives: readonly DirectiveNode[] | undefined): string[][] | undefined {
  const node = directives?.find((d) => d.name.value === 'requiresScopes');
  const arg = node?.arguments?.find((a) => a.name.value === 'scopes');
  return arg ? (valueFromASTUntyped(arg.value) as string[][]) : undefined;
}

/** True when every OR-group of the rule includes one of the acceptable scopes. */
const demands = (rule: string[][] | undefined, acceptable: string[]) =>
  Boolean(rule?.length) && rule!.every((group) => group.some((scope) => acceptable.includes(scope)));

/**
 * Every field, on any type but the roots and a resource's own connection wrappers, that leads to
 * a port-ops resource: with the scope it must demand.
 */
function resourceFields() {
  const schema = gatewaySchema();
  const found: Array<{ coordinate: string; rules: Array<string[][] | undefined>; acceptable: string[] }> = [];
  for (const type of Object.values(schema.getTypeMap())) {
    if (!isObjectType(type) || type.name.startsWith('__') || ROOTS.has(type.name)) continue;
    for (const field of Object.values(type.getFields())) {
      const target: GraphQLNamedType = getNamedType(field.type);
      const wrapper = type.name === `${target.name}Connection` || type.name === `${target.name}Edge`;
      if (wrapper) continue;
      const acceptable = target.name === HISTORY ? READ_SCOPE[type.name] : READ_SCOPE[target.name];
      if (target.name !== HISTORY && !READ_SCOPE[target.name]) continue;
      found.push({
        coordinate: `${type.name}.${field.name}`,
        rules: [scopesOf(field.astNode?.directives), scopesOf(target.astNode?.directives)],
        acceptable: acceptable ?? [],
      });
    }
  }
  return { schema, found };
}

describe('port-ops schema: reading a nested resource needs that resource’s read scope', () => {
  const { schema, found } = resourceFields();

  it('classifies every port-ops object type of the schema', () => {
    const names = portOpsEntities.map((e) => e.name).filter((name) => isObjectType(schema.getType(name)));
    expect(names.sort()).toEqual([...Object.keys(READ_SCOPE), HISTORY].sort());
  });

  it('finds the nested resource fields (the walk is not vacuous)', () => {
    expect(found.map((f) => f.coordinate)).toEqual(
      expect.arrayContaining([
        'PortCallPrediction.portCall',
        'PortCall.vessel',
        'PortCall.port',
        'PortCall.serviceOrders',
        'PortCall.statusHistory',
        'ServiceOrder.vendor',
        'ServiceOrder.portCall',
        'ServiceOrder.statusHistory',
        'Invoice.vendor',
        'Invoice.statusHistory',
      ]),
    );
  });

  it('every such field (or its type) demands the read scope of what it returns', () => {
    const unscoped = found
      .filter((f) => !f.rules.some((rule) => demands(rule, f.acceptable)))
      .map((f) => `${f.coordinate} needs ${f.acceptable.join(' or ') || '(unclassified parent)'}`);
    expect(unscoped).toEqual([]);
  });
});

describe('port-ops scopes over the wire', () => {
  let server: TestServer;
  let callId: string;
  beforeAll(async () => {
    server = await startTestServer();
    callId = (
      await rest(server.url, '/v1/port-calls?status=SCHEDULED&limit=1', { key: server.key('INSTITUTIONAL') })
    ).body.data[0].id;
  });
  afterAll(() => server?.close());

  it('ai:predictions alone predicts (portCallId, REST route) but cannot read the call itself', async () => {
    const { secret } = await createKey(server, { scopes: 'ai:predictions' });
    const ok = await gql(
      server.url,
      `{ portCallPrediction(portCallId: "${callId}") { portCallId method } }`,
      {
        key: secret,
      },
    );
    expect(ok.body.errors).toBeUndefined();
    expect(ok.body.data?.portCallPrediction).toMatchObject({ portCallId: callId });
    const leak = await gql(
      server.url,
      `{ portCallPrediction(portCallId: "${callId}") { portCall { voyageReference agent statusHistory { actor } } } }`,
      { key: secret },
    );
    expect(leak.body.data ?? null).toBeNull();
    expect(leak.body.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    expect(leak.body.errors?.[0]?.message).toMatch(/read:port_calls/);
    const restRoute = await rest(server.url, `/v1/predictions/port-calls/${callId}`, { key: secret });
    expect(restRoute.status).toBe(200);
    expect(restRoute.body.portCallId).toBe(callId);
  });

  it('a call’s port needs read:port_calls or read:vessels; an order’s history needs read:service_orders', async () => {
    const { secret: calls } = await createKey(server, { scopes: 'read:port_calls' });
    const port = await gql(
      server.url,
      `{ portCall(id: "${callId}") { port { locode } statusHistory { to } } }`,
      {
        key: calls,
      },
    );
    expect(port.body.errors).toBeUndefined();
    const { secret: writer } = await createKey(server, { scopes: 'write:service_orders read:port_calls' });
    const history = await gql(
      server.url,
      `{ portCall(id: "${callId}") { id } serviceOrders(first: 1) { nodes { statusHistory { actor } } } }`,
      { key: writer },
    );
    expect(history.body.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    expect(history.body.errors?.[0]?.message).toMatch(/read:service_orders/);
  });

  it('a status transition over REST needs only the write scope (its answer carries no history)', async () => {
    const institutional = server.key('INSTITUTIONAL');
    const vendor = (
      await rest(server.url, '/v1/vendors?serviceType=PILOTAGE&limit=100', { key: institutional })
    ).body.data.find((v: { ports: string[] }) => v.ports.length > 0);
    const call = (
      await rest(server.url, `/v1/port-calls?status=SCHEDULED&portLocode=${vendor.ports[0]}&limit=1`, {
        key: institutional,
      })
    ).body.data[0];
    const { secret } = await createKey(server, { scopes: 'write:service_orders' });
    const order = await rest(server.url, '/v1/service-orders', {
      method: 'POST',
      key: secret,
      body: { portCallId: call.id, serviceType: 'PILOTAGE', vendorId: vendor.id, details: {} },
    });
    expect(order.status, JSON.stringify(order.body)).toBe(201);
    const moved = await rest(server.url, `/v1/service-orders/${order.body.id}/status`, {
      method: 'POST',
      key: secret,
      body: { status: 'CONFIRMED' },
    });
    expect(moved.status).toBe(200);
    expect(moved.body).toMatchObject({ status: 'CONFIRMED' });
    expect(moved.body.statusHistory).toBeUndefined();
  });
});
