import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../../src/kernel/clock.js';
import { createKey, gql, rest, startTestServer, type TestServer } from '../../helpers/server.js';

describe('plan rate limits over HTTP (REST and GraphQL share one budget)', () => {
  let server: TestServer;
  const clock = new ManualClock('2026-07-01T12:00:05Z');
  beforeAll(async () => {
    server = await startTestServer({ clock });
  });
  afterAll(() => server?.close());

  it('admits 60 Analyst calls in a minute, answers the 61st with 429 and Retry-After, and admits again next minute', async () => {
    const key = server.key('ANALYST');
    const remaining: string[] = [];
    for (let i = 0; i < 60; i++) {
      const res =
        i % 3 === 0
          ? await gql(server.url, '{ market { protocolCount } }', { key })
          : await rest(server.url, '/v1/market', { key });
      expect(res.status, `call ${i + 1}`).toBe(200);
      expect(res.headers.get('x-ratelimit-limit')).toBe('60');
      expect(res.headers.get('x-ratelimit-reset')).toBe(String(Date.parse('2026-07-01T12:01:00Z') / 1000));
      remaining.push(res.headers.get('x-ratelimit-remaining')!);
    }
    expect(remaining.at(0)).toBe('59');
    expect(remaining.at(-1)).toBe('0');

    const rejected = await rest(server.url, '/v1/protocols', { key });
    expect(rejected.status).toBe(429);
    expect(rejected.body.error.code).toBe('RATE_LIMIT_EXCEEDED');
    expect(rejected.body.error.message).toMatch(/Analyst plan allows 60 requests per minute/);
    expect(rejected.headers.get('retry-after')).toBe('55');
    expect(rejected.headers.get('x-ratelimit-remaining')).toBe('0');
    expect(rejected.headers.get('x-ratelimit-limit')).toBe('60');

    const viaGraphql = await gql(server.url, '{ market { protocolCount } }', { key });
    expect(viaGraphql.status).toBe(429);
    expect(viaGraphql.body.errors?.[0]?.extensions?.code).toBe('RATE_LIMIT_EXCEEDED');
    expect(viaGraphql.headers.get('retry-after')).toBe('55');
    expect(viaGraphql.headers.get('x-ratelimit-remaining')).toBe('0');

    // Port operations have their own per-credential budget.
    const vessel = await rest(server.url, '/v1/vessels/lookup?imo=9074729', { key });
    expect(vessel.status).toBe(200);
    expect(vessel.headers.get('x-ratelimit-limit')).toBe('600');

    clock.advance(60_000);
    const next = await rest(server.url, '/v1/market', { key });
    expect(next.status).toBe(200);
    expect(next.headers.get('x-ratelimit-remaining')).toBe('59');
  });
});

describe('rate-limit headers on refusals, and admins', () => {
  let server: TestServer;
  const clock = new ManualClock('2026-07-01T12:00:05Z');
  beforeAll(async () => {
    server = await startTestServer({ clock });
  });
  afterAll(() => server?.close());

  it('402 and 403 still carry X-RateLimit-* and spend nothing', async () => {
    const key = server.key('ANALYST');
    const exported = await rest(server.url, '/v1/export', { key });
    expect(exported.status).toBe(402);
    expect(exported.headers.get('x-ratelimit-limit')).toBe('60');
    expect(exported.headers.get('x-ratelimit-remaining')).toBe('60');
    const graphql = await gql(server.url, '{ scoringProfiles { totalCount } }', { key });
    expect(graphql.status).toBe(402);
    expect(graphql.headers.get('x-ratelimit-remaining')).toBe('60');

    const { secret } = await createKey(server, { scopes: 'read:port_calls' });
    const forbidden = await rest(server.url, '/v1/vessels/lookup?imo=9074729', { key: secret });
    expect(forbidden.status).toBe(403);
    expect(forbidden.headers.get('x-ratelimit-limit')).toBe('600');
    expect(forbidden.headers.get('x-ratelimit-remaining')).toBe('600');
    // The refusals spent nothing: the first admitted call leaves 59.
    expect((await rest(server.url, '/v1/market', { key })).headers.get('x-ratelimit-remaining')).toBe('59');
  });

  it('a REST 400 for a parameter carries X-RateLimit-* and spends nothing', async () => {
    const key = server.key('PROFESSIONAL');
    for (const path of ['/v1/protocols?limit=abc', '/v1/backtest?lookback=5']) {
      const res = await rest(server.url, path, { key });
      expect(res.status, path).toBe(400);
      expect(res.headers.get('x-ratelimit-limit'), path).toBe('200');
      expect(res.headers.get('x-ratelimit-remaining'), path).toBe('200');
      expect(res.headers.get('x-ratelimit-reset'), path).toBe(
        String(Date.parse('2026-07-01T12:01:00Z') / 1000),
      );
    }
    expect((await rest(server.url, '/v1/market', { key })).headers.get('x-ratelimit-remaining')).toBe('199');
  });

  it("charges an admin's liquidity calls to the admin's credential, not the account's plan", async () => {
    const observer = server.demo.accounts.find((a) => a.plan === 'OBSERVER')!;
    const { secret } = await createKey(server, { accountId: observer.accountId, scopes: 'admin' });
    const res = await rest(server.url, '/v1/market', { key: secret });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-ratelimit-limit')).toBe('600');
    // The Observer plan itself still has no API access.
    expect((await rest(server.url, '/v1/market', { key: observer.apiKey })).status).toBe(402);
  });
});

describe('monthly quota over HTTP', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({
      clock: new ManualClock('2026-07-31T23:00:00Z'),
      env: { LIMIT_ANALYST_PER_MONTH: '5' },
    });
  });
  afterAll(() => server?.close());

  it('answers 429 LIMIT_REACHED once the month’s quota is spent', async () => {
    const key = server.key('ANALYST');
    for (let i = 0; i < 5; i++) {
      const res = await rest(server.url, '/v1/market', { key });
      expect(res.status).toBe(200);
      expect(res.headers.get('x-quota-remaining')).toBe(String(4 - i));
    }
    const res = await rest(server.url, '/v1/market', { key });
    expect(res.status).toBe(429);
    expect(res.body.error.code).toBe('LIMIT_REACHED');
    expect(res.body.error.message).toMatch(/5 calls per calendar month/);
    expect(res.headers.get('retry-after')).toBe('3600');
    expect(res.headers.get('x-ratelimit-limit')).toBe('60');
    // Another plan's account is unaffected.
    expect((await rest(server.url, '/v1/market', { key: server.key('PROFESSIONAL') })).status).toBe(200);
  });
});
