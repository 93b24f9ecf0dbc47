import { afterAll, beforeAll, expect, it } from 'vitest';
import { ManualClock } from '../../../src/kernel/clock.js';
import { describeEachDialect } from '../../helpers/env.js';
import { rest, startTestServer, type Json, type TestServer } from '../../helpers/server.js';

/**
 * A fresh result's body is shaped in place by the route's compiled shaper; a kept (frozen) one is
 * shaped as a copy by shapeBody (src/gateway/doors/rest-shape.ts). With kept answers off every
 * request takes the first path, with them on every one takes the second: the same database, read
 * through both, must give the same bytes for every filter, page and error.
 */
describeEachDialect('REST bodies shaped in place and as a copy', (dialect) => {
  let cold: TestServer;
  let kept: TestServer;
  beforeAll(async () => {
    // One instant for both: they copy the one demo seeded there. On the system clock a run that
    // crosses midnight seeds each server afresh, and two seeds differ (ids, the latest day).
    const at = '2026-06-15T10:00:00Z';
    [cold, kept] = await Promise.all([
      startTestServer({ dialect, clock: new ManualClock(at), env: { ANSWER_CACHE_MB: '0' } }),
      startTestServer({ dialect, clock: new ManualClock(at) }),
    ]);
  });
  afterAll(async () => {
    await Promise.all([cold?.close(), kept?.close()]);
  });

  /** Status and text by both servers; the request id of an error body is per request. */
  async function both(path: string): Promise<{ status: number; text: string; body: Json }> {
    const [a, b] = await Promise.all(
      [cold, kept].map((s) => rest(s.url, path, { key: s.key('INSTITUTIONAL') })),
    );
    const text = (r: { text: string }) => r.text.replace(/"requestId":"[^"]*"/, '"requestId":"…"');
    expect({ path, status: a!.status, text: text(a!) }).toEqual({ path, status: b!.status, text: text(b!) });
    return { status: a!.status, text: a!.text, body: a!.body };
  }

  it('lists protocols alike: pages, offsets and every filter, money as numbers, category lower-case', async () => {
    const all = await both('/v1/protocols?limit=100');
    expect(all.body).toHaveLength(40);
    expect(all.body[0]).toMatchObject({
      aum_usd: expect.any(Number),
      category: expect.stringMatching(/^[a-z_]+$/),
    });
    expect(all.text).toContain('"minimum_investment_usd":');
    for (const path of [
      '/v1/protocols',
      '/v1/protocols?limit=5&offset=5',
      '/v1/protocols?offset=39',
      '/v1/protocols?category=private-credit&limit=100',
      '/v1/protocols?tier=l1&limit=100',
      '/v1/protocols?min_score=50&min_aum=100000000',
      '/v1/protocols?category=TREASURY&tier=ILLIQUID',
      '/api/v1/protocols?limit=3',
    ])
      expect((await both(path)).status).toBe(200);
    const slug = (all.body[0] as { slug: string }).slug;
    expect((await both(`/v1/protocols/${slug}`)).body).toMatchObject({
      slug,
      yield_attribution: expect.any(Array),
    });
  });

  it('gives scores, history, audits, backtests and the market alike, JSON values snake_case inside', async () => {
    const scores = await both('/v1/scores?limit=100');
    expect(scores.body.length).toBeGreaterThan(0);
    await both('/v1/scores');
    await both('/v1/scores?limit=7&offset=3');
    const first = scores.body[0] as { slug: string; audit_id: string };
    await both(`/v1/scores/${first.slug}/history`);
    const audit = await both(`/v1/audits/${first.audit_id}`);
    expect(audit.text).toContain('"inputs":{');
    expect(audit.text).not.toMatch(/"[a-z]+[A-Z][a-zA-Z]*":/);
    await both('/v1/backtest?lookback=30');
    await both('/v1/market');
    await both('/v1/market?category=real-estate');
    await both('/v1/watchlist');
    await both('/v1/scoring-profiles');
  });

  it('answers errors alike: unknown slugs, bad filters and pages', async () => {
    for (const [path, status] of [
      ['/v1/protocols/no-such-protocol', 404],
      ['/v1/protocols?limit=0', 400],
      ['/v1/protocols?limit=5&limit=6', 400],
      ['/v1/protocols?category=moon', 400],
      ['/v1/protocols?min_score=101', 400],
      ['/v1/scores?profile_id=not-a-uuid', 400],
      ['/v1/scores/no-such-protocol/history', 404],
    ] as const)
      expect((await both(path)).status).toBe(status);
  });
});
