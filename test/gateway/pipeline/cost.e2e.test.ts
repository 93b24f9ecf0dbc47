import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { estimateCost } from '../../../src/gateway/pipeline/demand.js';
import { gql, rest, startTestServer, type TestServer } from '../../helpers/server.js';
import { getOperationAST, parse } from 'graphql';

describe('extensions.cost: the estimate and the caller’s budget in every GraphQL answer', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server?.close());

  it('reports the estimate against the maximum, and the per-minute budget left after the call', async () => {
    const key = server.key('ANALYST');
    const query = '{ market { category totalAumUsd } protocols(first: 5) { nodes { slug } } }';
    const first = await gql(server.url, query, { key });
    const second = await gql(server.url, query, { key });
    const document = parse(query);
    const expected = estimateCost(schemaOf(server), document, getOperationAST(document)!, {});
    for (const res of [first, second]) {
      expect(res.status).toBe(200);
      expect(res.body.extensions).toEqual({
        cost: {
          requested: expected,
          maximum: 20_000,
          budget: { limit: 60, remaining: expect.any(Number), resetAt: expect.any(String) },
        },
      });
      const budget = (res.body.extensions as { cost: { budget: { remaining: number; resetAt: string } } })
        .cost.budget;
      expect(String(budget.remaining)).toBe(res.headers.get('x-ratelimit-remaining'));
      expect(Date.parse(budget.resetAt)).toBeGreaterThan(Date.now() - 1000);
    }
    const remaining = (r: typeof first) =>
      (r.body.extensions as { cost: { budget: { remaining: number } } }).cost.budget.remaining;
    expect(remaining(second)).toBe(remaining(first) - 1);
    // A priced field weighs what the schema says (market: 100) beyond a plain field.
    expect(expected).toBeGreaterThan(100);
  });

  it('a REST shim answers with its resource only: no extensions', async () => {
    const res = await rest(server.url, '/v1/market', { key: server.key('ANALYST') });
    expect(res.status).toBe(200);
    expect(res.body.extensions).toBeUndefined();
  });
});

function schemaOf(server: TestServer) {
  return server.app.services.policy.schema;
}
