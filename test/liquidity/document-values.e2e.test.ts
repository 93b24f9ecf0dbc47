import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gql, rest, startTestServer, type Json, type TestServer } from '../helpers/server.js';

/**
 * The values and spelling of the liquidity document's sample: `aum_usd` a JSON number,
 * `category: treasury`, snake_case names at every level of every REST body (export included);
 * GraphQL keeps money as decimal strings and takes enums for its filter arguments.
 */

/** Every key of a JSON value, at every depth, with its path. */
function keysOf(value: unknown, path = '', into: string[] = []): string[] {
  if (Array.isArray(value)) value.forEach((v) => keysOf(v, `${path}[]`, into));
  else if (value && typeof value === 'object')
    for (const [k, v] of Object.entries(value)) {
      into.push(`${path}.${k}`);
      keysOf(v, `${path}.${k}`, into);
    }
  return into;
}

/** Data keys (tier names in the market's tier distribution) are values, not field names. */
const camel = (keys: string[]) => keys.filter((k) => /\.[a-z]+[A-Z]\w*$/.test(k));

describe('the documents\u2019 values and spelling', () => {
  let server: TestServer;
  let key: string;
  beforeAll(async () => {
    server = await startTestServer();
    key = server.key('INSTITUTIONAL');
    const slug = (await rest(server.url, '/v1/protocols?limit=1', { key })).body[0].slug;
    await rest(server.url, '/v1/watchlist', { key, method: 'POST', body: { add: [slug] } });
  });
  afterAll(async () => server?.close());

  it('answers the protocol sample shape: aum_usd and liquidity_score as numbers, category lower-case', async () => {
    const [first] = (await rest(server.url, '/v1/protocols?category=treasury&limit=1', { key })).body;
    expect(first).toMatchObject({
      aum_usd: expect.any(Number),
      liquidity_score: expect.any(Number),
      category: 'treasury',
      liquidity_tier: expect.stringMatching(/^(L1|L2|L3|ILLIQUID)$/),
    });
    expect(typeof first.minimum_investment_usd).toBe('number');
    const market = (await rest(server.url, '/v1/market', { key })).body;
    expect(typeof market.total_aum_usd).toBe('number');
  });

  it('names every field snake_case at every level of every liquidity REST body', async () => {
    const slug = (await rest(server.url, '/v1/protocols?limit=1', { key })).body[0].slug;
    const audit = (await rest(server.url, '/v1/scores?limit=1', { key })).body[0].audit_id;
    for (const path of [
      '/v1/protocols',
      `/v1/protocols/${slug}`,
      '/v1/scores',
      `/v1/scores/${slug}/history`,
      '/v1/market',
      '/v1/watchlist',
      '/v1/backtest',
      `/v1/audits/${audit}`,
      '/v1/export?format=json',
    ]) {
      const res = await rest(server.url, path, { key });
      expect(res.status, path).toBe(200);
      expect(camel(keysOf(res.body)), path).toEqual([]);
    }
  });

  it('exports nested JSON in snake_case with the same numbers and category, in JSON and CSV alike', async () => {
    const rows = (await rest(server.url, '/v1/export?format=json', { key })).body as Json[];
    const withFilings = rows.find((r) => r.regulatory_filings?.length && r.yield_attribution?.length);
    expect(withFilings.yield_attribution[0]).toEqual({
      source: expect.any(String),
      share_pct: expect.any(Number),
    });
    expect(Object.keys(withFilings.regulatory_filings[0]).sort()).toEqual([
      'filed_on',
      'reference',
      'regulator',
    ]);
    expect(typeof withFilings.aum_usd).toBe('number');
    expect(withFilings.category).toMatch(/^[a-z_]+$/);
    const csv = (await rest(server.url, '/v1/export?format=csv', { key })).text;
    expect(csv).toContain('filed_on');
    expect(csv).not.toContain('filedOn');
    expect(csv).not.toContain('sharePct');
  });

  it('keeps money a decimal string in GraphQL', async () => {
    const res = await gql(server.url, '{ protocols(first: 1) { nodes { aumUsd category } } }', { key });
    const node = (res.body.data!.protocols as Json).nodes[0];
    expect(node.aumUsd).toMatch(/^\d+\.\d{2}$/);
    expect(node.category).toMatch(/^[A-Z_]+$/);
  });

  it('types every filter argument of protocols, market and the port-operations feeds as an enum', async () => {
    const res = await gql(
      server.url,
      `{ __schema { queryType { fields { name args { name type { kind name } } } }
                    subscriptionType { fields { name args { name type { kind name } } } } } }`,
      { key },
    );
    const schema = res.body.data!.__schema as Json;
    const arg = (fields: Json[], field: string, name: string) =>
      fields.find((f) => f.name === field).args.find((a: Json) => a.name === name).type;
    expect(arg(schema.queryType.fields, 'protocols', 'category')).toEqual({
      kind: 'ENUM',
      name: 'ProtocolCategory',
    });
    expect(arg(schema.queryType.fields, 'protocols', 'tier')).toEqual({
      kind: 'ENUM',
      name: 'LiquidityTier',
    });
    expect(arg(schema.queryType.fields, 'market', 'category')).toEqual({
      kind: 'ENUM',
      name: 'ProtocolCategory',
    });
    expect(arg(schema.subscriptionType.fields, 'portCallUpdated', 'status')).toEqual({
      kind: 'ENUM',
      name: 'PortCallStatus',
    });
    expect(arg(schema.subscriptionType.fields, 'serviceOrderUpdated', 'status')).toEqual({
      kind: 'ENUM',
      name: 'ServiceOrderStatus',
    });
    const refused = await gql(server.url, '{ protocols(category: "treasury") { totalCount } }', { key });
    expect(refused.body.errors?.[0]?.extensions?.code).toBe('GRAPHQL_VALIDATION_FAILED');
    const filtered = await gql(server.url, '{ protocols(category: TREASURY, tier: L1) { totalCount } }', {
      key,
    });
    expect(filtered.body.errors).toBeUndefined();
  });
});
