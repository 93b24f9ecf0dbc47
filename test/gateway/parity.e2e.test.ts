import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { describeEachDialect } from '../helpers/env.js';
import { rest, startTestServer, type Json, type TestServer } from '../helpers/server.js';
import { ManualClock } from '../../src/kernel/clock.js';

/**
 * One pipeline behind every door: the same operation gets the same status and body whether it came
 * by the thin POST door, Apollo's door (POST with `extensions`, GET), graphql-ws or a REST shim, and
 * on its first sighting and its fifth.
 */

interface Operation {
  query: string;
  operationName?: string;
  variables?: Record<string, unknown>;
}

interface Reply {
  status: number;
  body: Json;
}

/**
 * The caller's remaining budget moves with every call, like a request id: it is compared apart
 * (tests of extensions.cost below), everything else must be identical.
 */
function stable(body: Json): Json {
  const budget = body?.extensions?.cost?.budget;
  if (budget) {
    expect(budget).toEqual({
      limit: expect.any(Number),
      remaining: expect.any(Number),
      resetAt: expect.any(String),
    });
    budget.remaining = budget.resetAt = '(varies)';
  }
  return body;
}

async function post(
  url: string,
  op: Operation,
  key?: string,
  extra: Record<string, unknown> = {},
): Promise<Reply> {
  const res = await fetch(`${url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(key ? { 'x-api-key': key } : {}) },
    body: JSON.stringify({ ...op, ...extra }),
  });
  return { status: res.status, body: stable(await res.json()) };
}

/** POST with an `extensions` member: not the thin door's shape, so Apollo Server answers it. */
const postViaApollo = (url: string, op: Operation, key?: string) => post(url, op, key, { extensions: {} });

async function get(url: string, op: Operation, key?: string): Promise<Reply> {
  const params = new URLSearchParams({ query: op.query });
  if (op.operationName !== undefined) params.set('operationName', op.operationName);
  if (op.variables) params.set('variables', JSON.stringify(op.variables));
  const res = await fetch(`${url}/graphql?${params}`, {
    // Apollo's CSRF prevention wants a non-simple header on GET.
    headers: { 'apollo-require-preflight': 'true', ...(key ? { 'x-api-key': key } : {}) },
  });
  return { status: res.status, body: stable(await res.json()) };
}

/** One operation over graphql-transport-ws: the `next` payload, or the `error` payload as `{errors}`. */
async function overWebSocket(url: string, op: Operation, key: string): Promise<Json> {
  const socket = new WebSocket(url.replace('http', 'ws') + '/graphql', 'graphql-transport-ws');
  const messages: Json[] = [];
  const done = new Promise<void>((resolve, reject) => {
    socket.on('message', (data) => {
      const message = JSON.parse(String(data));
      messages.push(message);
      if (message.type === 'connection_ack')
        socket.send(JSON.stringify({ id: '1', type: 'subscribe', payload: op }));
      if (message.type === 'complete' || message.type === 'error') resolve();
    });
    socket.on('close', (code) => reject(new Error(`socket closed ${code}`)));
    socket.on('error', reject);
  });
  await new Promise((resolve) => socket.once('open', resolve));
  socket.send(JSON.stringify({ type: 'connection_init', payload: { apiKey: key } }));
  await done;
  socket.removeAllListeners('close');
  socket.close();
  const error = messages.find((m) => m.type === 'error');
  if (error) return { errors: error.payload };
  return stable(messages.find((m) => m.type === 'next')?.payload);
}

/** Five sightings by the thin door: all identical, returned once. */
async function fiveTimes(url: string, op: Operation, key?: string): Promise<Reply> {
  const replies: Reply[] = [];
  for (let i = 0; i < 5; i++) replies.push(await post(url, op, key));
  for (const reply of replies) expect(reply).toEqual(replies[0]);
  return replies[0]!;
}

/** The REST form of a GraphQL error: same code (REST spells 401 UNAUTHORIZED) and message. */
function expectRestMatches(restReply: { status: number; body: Json }, graphql: Reply, status: number): void {
  const error = graphql.body.errors[0];
  expect(restReply.status).toBe(status);
  const code = error.extensions.code === 'UNAUTHENTICATED' ? 'UNAUTHORIZED' : error.extensions.code;
  expect(restReply.body.error).toMatchObject({ code, message: error.message });
}

const LOOKUP = 'query RestVesselLookup($imo: String!) { vessel(imo: $imo) { imo name } }';
const ORDERS_BY_TYPE =
  'query Orders($serviceType: ServiceType) { serviceOrders(serviceType: $serviceType, first: 1) { totalCount } }';

describeEachDialect('the answer never depends on the door or the sighting', (dialect) => {
  let server: TestServer;
  let url: string;
  let analyst: string;
  beforeAll(async () => {
    server = await startTestServer({ dialect, env: { GRAPHQL_MAX_DEPTH: '4' } });
    url = server.url;
    analyst = server.key('INSTITUTIONAL');
  });
  afterAll(() => server?.close());

  /** Every GraphQL door agrees with the thin door's five identical answers. */
  async function everyDoor(op: Operation, key: string, options: { get?: boolean } = {}): Promise<Reply> {
    const first = await fiveTimes(url, op, key);
    expect(await postViaApollo(url, op, key)).toEqual(first);
    if (options.get !== false) expect(await get(url, op, key)).toEqual(first);
    expect(await overWebSocket(url, op, key)).toEqual(first.body);
    return first;
  }

  it('a success', async () => {
    const reply = await everyDoor({ query: LOOKUP, variables: { imo: '9074729' } }, analyst);
    expect(reply.status).toBe(200);
    expect(reply.body.data).toEqual({ vessel: { imo: '9074729', name: 'Northern Tern' } });
    // The estimate and the per-operation maximum, as Shopify and GitHub report them.
    expect(reply.body.extensions.cost).toMatchObject({ requested: expect.any(Number), maximum: 20_000 });
  });

  it('@include and @skip, through every door', async () => {
    const query =
      'query($x: Boolean!) { vessel(imo: "9074729") { imo name @include(if: $x) flag @skip(if: $x) } }';
    const shown = await everyDoor({ query, variables: { x: true } }, analyst);
    expect(shown.body.data.vessel).toEqual({ imo: '9074729', name: 'Northern Tern' });
    const hidden = await everyDoor({ query, variables: { x: false } }, analyst);
    expect(hidden.body.data.vessel).toEqual({ imo: '9074729', flag: 'SG' });
  });

  it('a syntax error', async () => {
    const reply = await everyDoor({ query: '{ vessel(imo: "9074729" { imo } }' }, analyst);
    expect(reply.status).toBe(400);
    expect(reply.body.errors[0]).toMatchObject({
      message: expect.stringMatching(/^Syntax Error/),
      extensions: { code: 'GRAPHQL_PARSE_FAILED' },
    });
  });

  it('a validation error', async () => {
    const reply = await everyDoor({ query: '{ vessel(imo: "9074729") { nope } }' }, analyst);
    expect(reply.status).toBe(400);
    expect(reply.body.errors[0]).toMatchObject({
      message: expect.stringMatching(/^Cannot query field "nope" on type "Vessel"\./),
      extensions: { code: 'GRAPHQL_VALIDATION_FAILED' },
    });
  });

  it('an operation too deep for the depth limit', async () => {
    const query = '{ portCalls(first: 1) { nodes { serviceOrders { vendor { name } } } } }';
    const reply = await everyDoor({ query }, analyst);
    expect(reply.status).toBe(400);
    expect(reply.body.errors[0].extensions).toMatchObject({ code: 'GRAPHQL_VALIDATION_FAILED', maxDepth: 4 });
  });

  it('a variable that does not coerce: graphql names the value, never "Internal server error"', async () => {
    const op = { query: ORDERS_BY_TYPE, variables: { serviceType: 'TELEPORT' } };
    const reply = await everyDoor(op, analyst);
    expect(reply.status).toBe(400);
    expect(reply.body.errors[0]).toMatchObject({
      message: expect.stringContaining('TELEPORT'),
      extensions: { code: 'BAD_USER_INPUT' },
    });
    const shim = await rest(url, '/v1/service-orders?serviceType=TELEPORT', { key: analyst });
    expect(shim.status).toBe(400);
    expect(shim.body.error.code).toBe('BAD_USER_INPUT');
    expect(shim.body.error.message).toContain('TELEPORT');
  });

  it('the same mutation with an unknown enum value, five times: five identical answers', async () => {
    const calls = await rest(url, '/v1/port-calls?limit=1', { key: analyst });
    const vendors = await rest(url, '/v1/vendors?limit=1', { key: analyst });
    const input = {
      portCallId: calls.body.data[0].id,
      vendorId: vendors.body.data[0].id,
      serviceType: 'TELEPORT',
      details: {},
    };
    const op = {
      query:
        'mutation RestCreateServiceOrder($input: ServiceOrderInput!) { createServiceOrder(input: $input) { id } }',
      variables: { input },
    };
    const reply = await everyDoor(op, analyst, { get: false });
    expect(reply.status).toBe(400);
    expect(reply.body.errors[0].message, JSON.stringify(reply.body)).toContain(
      '"TELEPORT" does not exist in "ServiceType" enum',
    );
    expectRestMatches(
      await rest(url, '/v1/service-orders', { method: 'POST', key: analyst, body: input }),
      reply,
      400,
    );
  });

  it('an operation that cannot be chosen: one code and message by every door (400 over HTTP)', async () => {
    const query = 'query A { viewer { plan } } query B { viewer { plan } }';
    const cases: Array<[Operation, string]> = [
      [{ query, operationName: 'Z' }, 'Unknown operation named "Z".'],
      [{ query }, 'Must provide operation name if query contains multiple operations.'],
      // An empty name is a name, and not the absent one: it must not share the answer of `{ query }`.
      [{ query: 'query A { viewer { plan } }', operationName: '' }, 'Unknown operation named "".'],
    ];
    for (const [op, message] of cases) {
      const reply = await everyDoor(op, analyst);
      expect(reply.status).toBe(400);
      expect(reply.body.errors).toEqual([{ message, extensions: { code: 'OPERATION_RESOLUTION_FAILURE' } }]);
    }
    // The same document with a name it holds, after the refusals above: the refusals were not kept for it.
    const chosen = await everyDoor({ query, operationName: 'B' }, analyst);
    expect(chosen.status).toBe(200);
    const single = await everyDoor({ query: 'query A { viewer { plan } }' }, analyst);
    expect(single.status).toBe(200);
  });

  it('a mutation over GET is refused by the protocol (405)', async () => {
    const reply = await get(url, { query: 'mutation { deletePortCall(id: "x") }' }, analyst);
    expect(reply.status).toBe(405);
  });

  it('a resolver error: 200 with the error in GraphQL, its status in REST', async () => {
    const op = { query: LOOKUP, variables: { imo: '9074728' } };
    const reply = await everyDoor(op, analyst);
    expect(reply.status).toBe(200);
    expect(reply.body.errors[0].extensions.code).toBe('BAD_USER_INPUT');
    expect(reply.body.data).toEqual({ vessel: null });
    expectRestMatches(await rest(url, '/v1/vessels/lookup?imo=9074728', { key: analyst }), reply, 400);
  });

  it('no credentials: 401 by every HTTP door', async () => {
    const op = { query: LOOKUP, variables: { imo: '9074729' } };
    const reply = await fiveTimes(url, op);
    expect(reply.status).toBe(401);
    expect(await postViaApollo(url, op)).toEqual(reply);
    expect(await get(url, op)).toEqual(reply);
    expectRestMatches(await rest(url, '/v1/vessels/lookup?imo=9074729'), reply, 401);
  });

  it('a plan denial: 402 by every door, REST included', async () => {
    const observer = server.key('OBSERVER');
    const reply = await everyDoor({ query: '{ market { category } }' }, observer);
    expect(reply.status).toBe(402);
    expect(reply.body.errors[0].extensions.code).toBe('PLAN_REQUIRED');
    expectRestMatches(await rest(url, '/v1/market', { key: observer }), reply, 402);
  });
});

describe('a rate limit answers alike by every door', () => {
  let server: TestServer;
  beforeAll(async () => {
    // A stopped clock in the middle of a minute: the fixed minute window cannot roll over between the
    // two allowed calls and the refused ones, and every door's Retry-After is the same number.
    const midMinute = Math.floor(Date.now() / 60_000) * 60_000 + 30_000;
    server = await startTestServer({
      env: { LIMIT_ANALYST_PER_MINUTE: '2' },
      clock: new ManualClock(new Date(midMinute)),
    });
  });
  afterAll(() => server?.close());

  it('429 RATE_LIMIT_EXCEEDED with Retry-After, from the thin door, Apollo, GET, WebSocket and REST', async () => {
    const key = server.key('ANALYST');
    const op = { query: 'query Market { market { category } }' };
    expect((await post(server.url, op, key)).status).toBe(200);
    expect((await post(server.url, op, key)).status).toBe(200);
    const refused = await fiveTimes(server.url, op, key);
    expect(refused.status).toBe(429);
    expect(refused.body.errors[0].extensions.code).toBe('RATE_LIMIT_EXCEEDED');
    expect(await postViaApollo(server.url, op, key)).toEqual(refused);
    expect(await get(server.url, op, key)).toEqual(refused);
    expect(await overWebSocket(server.url, op, key)).toEqual(refused.body);
    expectRestMatches(await rest(server.url, '/v1/market', { key }), refused, 429);
  });
});
