import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gql, startTestServer, type TestServer } from '../helpers/server.js';

/*
 * One caller's expensive operation must not stall the gateway: demand control refuses what is
 * priced too high before anything runs, the deadline bounds what is admitted, and long computations
 * hand the event loop back between their steps so /healthz keeps answering. Nothing here is timed:
 * the tests assert refusals, error codes and the order in which answers arrive.
 */

const aliases = (n: number, field: string) =>
  `{ ${Array.from({ length: n }, (_, i) => `a${i}: ${field}`).join(' ')} }`;

async function healthz(url: string): Promise<number> {
  return (await fetch(`${url}/healthz`)).status;
}

async function firstScheduledCall(server: TestServer, key: string): Promise<string> {
  const res = await gql(server.url, '{ portCalls(first: 1, status: SCHEDULED) { nodes { id } } }', { key });
  return (res.body.data as { portCalls: { nodes: Array<{ id: string }> } }).portCalls.nodes[0]!.id;
}

describe('an amplified query with the default limits', () => {
  let server: TestServer;
  let key: string;
  beforeAll(async () => {
    server = await startTestServer();
    key = server.key('INSTITUTIONAL');
  });
  afterAll(() => server?.close());

  it('is refused before execution with the cost and the limit named, while /healthz answers', async () => {
    const id = await firstScheduledCall(server, key);
    const [refused, health] = await Promise.all([
      gql(server.url, aliases(6, `portCallPrediction(portCallId: "${id}") { basis }`), { key }),
      healthz(server.url),
    ]);
    expect(health).toBe(200);
    expect(refused.status).toBe(400);
    expect(refused.body.data).toBeUndefined();
    expect(refused.body.errors?.[0]?.message).toBe(
      'Operation has an estimated cost of 24006; the maximum is 20000. Ask for fewer computed reports or predictions, smaller pages or fewer nested lists.',
    );
    expect(refused.body.errors?.[0]?.extensions).toMatchObject({ cost: 24006, maxCost: 20000 });
  });

  it('of 1,000 aliases is refused while parsing, before the validation that would block the loop', async () => {
    const refused = await gql(server.url, aliases(1000, 'portCallPrediction(portCallId: "x") { basis }'), {
      key,
    });
    expect(refused.status).toBe(400);
    expect(refused.body.errors?.[0]?.extensions?.code).toBe('GRAPHQL_PARSE_FAILED');
    expect(refused.body.errors?.[0]?.message).toMatch(/more th\w+ 5000 tokens/);
  });
});

describe('an amplified analytics query admitted by a generous cost limit', () => {
  let server: TestServer;
  let key: string;
  afterAll(() => server?.close());

  it('lets /healthz answer between its steps', async () => {
    server = await startTestServer({ env: { GRAPHQL_MAX_COST: '100000000' } });
    key = server.key('INSTITUTIONAL');
    const order: string[] = [];
    const heavy = gql(
      server.url,
      aliases(20, 'portCallTurnaround(byVesselType: true, period: MONTH) { rows { calls } }'),
      {
        key,
      },
    ).then((r) => {
      order.push('heavy');
      return r;
    });
    // Let the heavy operation get into its execution first.
    await new Promise((r) => setTimeout(r, 50));
    const health = await healthz(server.url);
    order.push('healthz');
    const result = await heavy;
    expect(health).toBe(200);
    expect(result.body.errors).toBeUndefined();
    expect(order).toEqual(['healthz', 'heavy']);
  });

  it('is stopped by the deadline with DEADLINE_EXCEEDED naming the budget', async () => {
    await server.close();
    server = await startTestServer({ env: { GRAPHQL_MAX_COST: '100000000', GRAPHQL_DEADLINE_MS: '10' } });
    key = server.key('INSTITUTIONAL');
    const [result, health] = await Promise.all([
      gql(server.url, aliases(20, 'vendorPerformance { rows { orders } }'), { key }),
      healthz(server.url),
    ]);
    expect(health).toBe(200);
    const codes = new Set(result.body.errors?.map((e) => e.extensions?.code));
    expect(codes).toEqual(new Set(['DEADLINE_EXCEEDED']));
    expect(result.body.errors?.[0]?.message).toMatch(
      /ran out of its 10 ms budget while computing the vendor performance report/,
    );
    expect(result.body.errors?.[0]?.extensions).toMatchObject({ budgetMs: 10 });
  });
});

describe('aliased predictions in one operation', () => {
  let server: TestServer;
  const statements: string[] = [];
  beforeAll(async () => {
    server = await startTestServer({ onQuery: (sql) => statements.push(sql) });
  });
  afterAll(() => server?.close());

  it('share one read of the history and agree with predictions asked one by one', async () => {
    const key = server.key('INSTITUTIONAL');
    const res = await gql(server.url, '{ portCalls(first: 3, status: SCHEDULED) { nodes { id } } }', { key });
    const ids = (res.body.data as { portCalls: { nodes: Array<{ id: string }> } }).portCalls.nodes.map(
      (n) => n.id,
    );
    expect(ids).toHaveLength(3);
    const fields = 'basis sampleSize evaluation { evaluatedCalls departureMaeHours }';
    const historyReads = () => statements.filter((sql) => /from .port_calls.*\batd. </i.test(sql)).length;

    const before = historyReads();
    const together = await gql(
      server.url,
      `{ ${ids.map((id, i) => `p${i}: portCallPrediction(portCallId: "${id}") { ${fields} }`).join(' ')} }`,
      { key },
    );
    expect(together.body.errors).toBeUndefined();
    expect(historyReads() - before).toBe(1);

    for (const [i, id] of ids.entries()) {
      const alone = await gql(server.url, `{ portCallPrediction(portCallId: "${id}") { ${fields} } }`, {
        key,
      });
      expect((together.body.data as Record<string, unknown>)[`p${i}`]).toEqual(
        (alone.body.data as Record<string, unknown>).portCallPrediction,
      );
    }
    expect(historyReads() - before).toBe(1 + ids.length);
  });
});
