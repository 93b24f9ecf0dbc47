import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachDialect } from '../helpers/env.js';
import { gql, rest, startTestServer, type Json, type TestServer } from '../helpers/server.js';

const LIST_FIELDS = [
  'accredited_only',
  'active',
  'aum_usd',
  'auditor',
  'category',
  'chains',
  'currency',
  'custodian',
  'governance_maturity',
  'governance_model',
  'id',
  'issuer',
  'jurisdiction',
  'kyc_required',
  'last_data_at',
  'launch_date',
  'liquidity_score',
  'liquidity_tier',
  'minimum_investment_usd',
  'name',
  'notice_period_days',
  'qualified_custodian',
  'redemption_frequency',
  'redemption_gates',
  'regulatory_status',
  'sanctions_screening',
  'score_as_of',
  'slug',
  'token_standard',
  'token_symbol',
  'transfer_restrictions',
  'updated_at',
  'website',
  'yield_pct',
];

describeEachDialect('liquidity REST routes', (dialect) => {
  let server: TestServer;
  let inst: string;
  beforeAll(async () => {
    server = await startTestServer({ dialect });
    inst = server.key('INSTITUTIONAL');
  });
  afterAll(() => server?.close());

  it('lists active protocols as a JSON array with snake_case fields, 20 by default, up to 100, with offset', async () => {
    const res = await rest(server.url, '/v1/protocols', { key: server.key('ANALYST') });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-ratelimit-limit')).toBe('60');
    expect(res.headers.get('x-ratelimit-remaining')).toBeTruthy();
    expect(res.headers.get('x-ratelimit-reset')).toMatch(/^\d+$/);
    expect(Array.isArray(res.body)).toBe(true);
    expect(res.body).toHaveLength(20);
    const first = res.body[0];
    expect(first).toMatchObject({
      id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      slug: expect.any(String),
      aum_usd: expect.any(Number),
      currency: 'USD',
      liquidity_tier: expect.stringMatching(/^(L1|L2|L3|ILLIQUID)$/),
    });
    // The seed: "more than 30 fields per protocol" in the list form.
    expect(Object.keys(first).sort()).toEqual([...LIST_FIELDS].sort());
    expect(LIST_FIELDS.length).toBeGreaterThan(30);
    const all = await rest(server.url, '/v1/protocols?limit=100', { key: inst });
    expect(all.body).toHaveLength(40);
    const page = await rest(server.url, '/v1/protocols?limit=5&offset=5', { key: inst });
    expect(page.body.map((p: Json) => p.slug)).toEqual(all.body.slice(5, 10).map((p: Json) => p.slug));
  });

  it('filters by category (any case), tier, min_score and min_aum', async () => {
    const treasury = await rest(server.url, '/v1/protocols?category=treasury&limit=100', { key: inst });
    expect(treasury.body.length).toBe(8);
    expect(treasury.body.every((p: Json) => p.category === 'treasury')).toBe(true);
    const l1 = await rest(server.url, '/v1/protocols?tier=L1&limit=100', { key: inst });
    expect(l1.body.length).toBeGreaterThan(0);
    expect(l1.body.every((p: Json) => p.liquidity_tier === 'L1')).toBe(true);
    const all = (await rest(server.url, '/v1/protocols?limit=100', { key: inst })).body as Json[];
    const rich = await rest(server.url, '/v1/protocols?min_score=60&min_aum=100000000&limit=100', {
      key: inst,
    });
    const expected = all.filter((p) => p.liquidity_score >= 60 && p.aum_usd >= 1e8).map((p) => p.slug);
    // The filter keeps some protocols and drops others, so both sides of it are exercised.
    expect(expected.length).toBeGreaterThan(0);
    expect(expected.length).toBeLessThan(all.length);
    expect(rich.body.map((p: Json) => p.slug)).toEqual(expected);
  });

  it('rejects bad list parameters with 400 naming the parameter', async () => {
    for (const [query, pattern] of [
      ['limit=101', /limit: must be between 1 and 100/],
      ['limit=0', /limit: must be between 1 and 100/],
      ['offset=-1', /offset: must be between 0/],
      // Enum filters are coerced by GraphQL: its wording, the parameter in details.field.
      ['category=bonds', /"BONDS" does not exist in "ProtocolCategory" enum/],
      ['tier=L9', /"L9" does not exist in "LiquidityTier" enum/],
      ['min_score=abc', /min_score: must be a number/],
    ] as const) {
      const res = await rest(server.url, `/v1/protocols?${query}`, { key: inst });
      expect(res.status, query).toBe(400);
      expect(res.body.error.code).toBe('BAD_USER_INPUT');
      expect(res.body.error.message).toMatch(pattern);
    }
  });

  it('returns the full profile by slug, also under /api/v1, and 404 NOT_FOUND for an unknown slug', async () => {
    const res = await rest(server.url, '/api/v1/protocols/harbor-treasury', { key: inst });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      slug: 'harbor-treasury',
      category: 'treasury',
      yield_attribution: [expect.objectContaining({ source: expect.any(String), share_pct: 100 })],
      regulatory_filings: [
        expect.objectContaining({ regulator: expect.any(String), reference: expect.any(String) }),
      ],
      governance_maturity: expect.any(String),
      kyc_required: true,
    });
    expect(Object.keys(res.body).length).toBeGreaterThanOrEqual(35);
    const missing = await rest(server.url, '/v1/protocols/no-such-protocol', { key: inst });
    expect(missing.status).toBe(404);
    expect(missing.body.error).toMatchObject({
      code: 'NOT_FOUND',
      message: "Protocol 'no-such-protocol' was not found",
    });
  });

  it('serves latest scores with five components, five penalties, confidence and an audit id', async () => {
    const res = await rest(server.url, '/v1/scores?limit=3', { key: inst });
    expect(res.status).toBe(200);
    expect(res.body).toHaveLength(3);
    const s = res.body[0];
    expect(Object.keys(s.components).sort()).toEqual([
      'aum',
      'issuer',
      'jurisdiction',
      'redemption',
      'volume',
    ]);
    expect(s.penalties.map((p: Json) => p.kind)).toEqual([
      'CONCENTRATION',
      'DEVIATION',
      'QUEUE',
      'STALENESS',
      'ATTESTATION',
    ]);
    expect(s).toMatchObject({
      methodology_version: '1.7',
      audit_id: expect.stringMatching(/^[0-9a-f]{64}$/),
      confidence: { level: expect.stringMatching(/HIGH|MEDIUM|LOW/) },
    });
  });

  it('serves a 30-day history with a trajectory; the demo has steady, drifting and stale protocols', async () => {
    const all = (await rest(server.url, '/v1/scores?limit=100', { key: inst })).body as Json[];
    const steady = await rest(server.url, '/v1/scores/harbor-treasury/history', { key: inst });
    expect(steady.status).toBe(200);
    expect(steady.body.points).toHaveLength(30);
    expect(steady.body.points.every((p: Json) => p.tier === 'L1')).toBe(true);
    const drifting = all.filter((s) => s.tier === 'ILLIQUID' && s.data_date === s.as_of);
    expect(drifting.length).toBeGreaterThan(0);
    const trajectories = await Promise.all(
      drifting.map((s) => rest(server.url, `/v1/scores/${s.slug}/history`, { key: inst })),
    );
    expect(trajectories.some((t) => t.body.trajectory === 'DECLINING')).toBe(true);
    const stale = all.filter((s) => s.data_date < s.as_of);
    expect(stale.length).toBeGreaterThan(0);
    expect(stale.every((s) => s.penalties.find((p: Json) => p.kind === 'STALENESS').points > 0)).toBe(true);
    const missing = await rest(server.url, '/v1/scores/nope/history', { key: inst });
    expect(missing.status).toBe(404);
  });

  it('runs the backtest for an Analyst and rejects a lookback outside 7–365', async () => {
    const res = await rest(server.url, '/v1/backtest?lookback=90', { key: server.key('ANALYST') });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      lookback_days: 90,
      protocols_evaluated: 40,
      l1_stability_rate: expect.any(Number),
      illiquid_prediction_accuracy: expect.any(Number),
      aum_retention_correlation: expect.any(Number),
    });
    for (const lookback of [6, 366]) {
      const bad = await rest(server.url, `/v1/backtest?lookback=${lookback}`, { key: inst });
      expect(bad.status).toBe(400);
      expect(bad.body.error.message).toMatch(/lookback: must be between 7 and 365/);
    }
    const gql400 = await gql(server.url, '{ backtest(lookback: 400) { lookbackDays } }', { key: inst });
    expect(gql400.body.errors?.[0]?.message).toMatch(/lookback: must be between 7 and 365 days \(got 400\)/);
  });

  it('aggregates the market with five indices, filterable by category', async () => {
    const res = await rest(server.url, '/v1/market', { key: inst });
    expect(res.status).toBe(200);
    expect(res.body.protocol_count).toBe(40);
    expect(res.body.indices.map((i: Json) => i.code)).toEqual(['ILT', 'ILC', 'ILRA', 'ILRWA', 'ILIG']);
    const dist = res.body.tier_distribution;
    expect(dist.L1 + dist.L2 + dist.L3 + dist.ILLIQUID).toBe(40);
    const credit = await rest(server.url, '/v1/market?category=private_credit', { key: inst });
    expect(credit.body).toMatchObject({ category: 'private_credit', protocol_count: 8 });
  });

  it('gates by plan: Observer gets 402 everywhere, Analyst gets 402 for export naming Professional', async () => {
    const observer = await rest(server.url, '/v1/protocols', { key: server.key('OBSERVER') });
    expect(observer.status).toBe(402);
    expect(observer.body.error).toMatchObject({ code: 'PLAN_REQUIRED' });
    expect(observer.body.error.message).toMatch(/requires the Analyst plan or higher/);
    const exp = await rest(server.url, '/v1/export?format=csv', { key: server.key('ANALYST') });
    expect(exp.status).toBe(402);
    expect(exp.body.error.message).toMatch(/requires the Professional plan or higher/);
    const unauth = await rest(server.url, '/v1/protocols');
    expect(unauth.status).toBe(401);
    expect(unauth.body.error.code).toBe('UNAUTHORIZED');
  });

  it('exports CSV that a CSV parser reads back to the same rows as the JSON export', async () => {
    const key = server.key('PROFESSIONAL');
    const csvRes = await fetch(`${server.url}/v1/export?format=csv`, {
      headers: { authorization: `Bearer ${key}` },
    });
    expect(csvRes.status).toBe(200);
    expect(csvRes.headers.get('content-type')).toMatch(/^text\/csv/);
    expect(csvRes.headers.get('content-disposition')).toMatch(
      /^attachment; filename="tidegate-liquidity-\d{4}-\d{2}-\d{2}\.csv"$/,
    );
    expect(csvRes.headers.get('x-ratelimit-limit')).toBe('200');
    const text = await csvRes.text();
    const csvRows = parse(text, { columns: true }) as Array<Record<string, string>>;
    const jsonRes = await rest(server.url, '/v1/export?format=json', { bearer: key });
    expect(jsonRes.status).toBe(200);
    const jsonRows = jsonRes.body as Array<Record<string, unknown>>;
    expect(csvRows).toHaveLength(40);
    const asCsvText = (v: unknown) =>
      v === null ? '' : typeof v === 'object' ? JSON.stringify(v) : String(v);
    expect(csvRows).toEqual(
      jsonRows.map((r) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, asCsvText(v)]))),
    );
    // Nested values and descriptions contain commas and quotes, so quoting was exercised.
    expect(text).toMatch(/"\[""/);
    const bad = await rest(server.url, '/v1/export?format=xml', { bearer: key });
    expect(bad.status).toBe(400);
    expect(bad.body.error.message).toMatch(/format: must be csv or json/);
  });

  it('rejects a malformed profile_id and repeated export parameters with 400 naming the parameter', async () => {
    const pro = server.key('PROFESSIONAL');
    for (const path of ['/v1/scores?profile_id=nope', '/v1/scores/harbor-treasury/history?profile_id=nope']) {
      const res = await rest(server.url, path, { key: pro });
      expect(res.status, path).toBe(400);
      expect(res.body.error).toMatchObject({
        code: 'BAD_USER_INPUT',
        message: "profileId / profile_id: must be a scoring profile id, a UUID (got 'nope')",
      });
    }
    const id = '7a0c1f4e-1d2b-4c3a-9e8f-0123456789ab';
    for (const [query, message] of [
      ['profile_id=nope', "profileId / profile_id: must be a scoring profile id, a UUID (got 'nope')"],
      ['format=csv&format=json', 'format: must be given once (got 2 values)'],
      [`profile_id=${id}&profile_id=${id}`, 'profile_id: must be given once (got 2 values)'],
    ] as const) {
      const res = await rest(server.url, `/v1/export?${query}`, { key: pro });
      expect(res.status, query).toBe(400);
      expect(res.body.error).toMatchObject({ code: 'BAD_USER_INPUT', message });
    }
    // The shim routes refuse a repeat with the same words.
    const twice = await rest(server.url, `/v1/scores?profile_id=${id}&profile_id=${id}`, { key: pro });
    expect(twice.status).toBe(400);
    expect(twice.body.error).toMatchObject({
      code: 'BAD_USER_INPUT',
      message: 'profile_id: must be given once (got 2 values)',
    });
    const gqlRes = await gql(server.url, '{ score(slug: "harbor-treasury", profileId: "nope") { score } }', {
      key: pro,
    });
    expect(gqlRes.body.errors?.[0]?.extensions).toMatchObject({ code: 'BAD_USER_INPUT', field: 'profileId' });
    // A well-formed id of no profile is still a 404, on both databases.
    const unknown = await rest(server.url, `/v1/scores?profile_id=${id}`, { key: pro });
    expect(unknown.status).toBe(404);
  });

  it('resolves an audit id to the stored inputs that produce the score', async () => {
    const score = (await rest(server.url, '/v1/scores?limit=1', { key: inst })).body[0];
    const res = await rest(server.url, `/v1/audits/${score.audit_id}`, { key: inst });
    expect(res.status).toBe(200);
    expect(res.body.result.score).toBe(score.score);
    expect(res.body.inputs).toMatchObject({ as_of: score.as_of, aum_usd: expect.any(Number) });
    const unknown = await rest(server.url, `/v1/audits/${'0'.repeat(64)}`, { key: inst });
    expect(unknown.status).toBe(404);
    const malformed = await rest(server.url, '/v1/audits/xyz', { key: inst });
    expect(malformed.status).toBe(400);
  });
});

describeEachDialect('liquidity over GraphQL', (dialect) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ dialect });
  });
  afterAll(() => server?.close());

  it('serves connections with totalCount and cursors, the same data as REST', async () => {
    const key = server.key('ANALYST');
    const res = await gql(
      server.url,
      '{ protocols(first: 5, category: TREASURY) { totalCount pageInfo { hasNextPage endCursor } nodes { slug aumUsd currency liquidityTier } } }',
      { key },
    );
    expect(res.status).toBe(200);
    const conn = res.body.data!.protocols as Json;
    expect(conn.totalCount).toBe(8);
    expect(conn.pageInfo.hasNextPage).toBe(true);
    const next = await gql(
      server.url,
      `{ protocols(first: 5, category: TREASURY, after: "${conn.pageInfo.endCursor}") { nodes { slug } } }`,
      { key },
    );
    expect((next.body.data!.protocols as Json).nodes).toHaveLength(3);
    const score = await gql(
      server.url,
      '{ score(slug: "harbor-treasury") { score tier auditId protocol { name } components { aum } } }',
      { key },
    );
    const restScore = (await rest(server.url, '/v1/scores?limit=100', { key })).body.find(
      (s: Json) => s.slug === 'harbor-treasury',
    );
    expect(score.body.data!.score).toMatchObject({
      score: restScore.score,
      auditId: restScore.audit_id,
      protocol: { name: 'Harbor Treasury' },
    });
  });

  it('answers 402 PLAN_REQUIRED to an Observer and names Professional for export fields', async () => {
    const observer = await gql(server.url, '{ market { protocolCount } }', { key: server.key('OBSERVER') });
    expect(observer.status).toBe(402);
    expect(observer.body.errors?.[0]?.extensions?.code).toBe('PLAN_REQUIRED');
    const analyst = await gql(server.url, '{ exportRows(first: 1) { totalCount } }', {
      key: server.key('ANALYST'),
    });
    expect(analyst.body.errors?.[0]?.message).toMatch(/Professional plan or higher/);
    expect(analyst.body.data ?? null).toBeNull();
  });
});
