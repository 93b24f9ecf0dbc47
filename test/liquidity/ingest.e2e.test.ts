import { afterAll, beforeAll, expect, it } from 'vitest';
import { EventRecord } from '../../src/events/entities.js';
import { ManualClock } from '../../src/kernel/clock.js';
import { LiquidityDay } from '../../src/liquidity/entities.js';
import { insertDays } from '../../src/liquidity/days.js';
import { describeEachDialect } from '../helpers/env.js';
import { createKey, gql, rest, startTestServer, type Json, type TestServer } from '../helpers/server.js';

const INGEST = `mutation Ingest($format: IngestFormat!, $data: String!, $replace: Boolean) {
  ingestLiquidityMetrics(format: $format, data: $data, replace: $replace) { rows protocols daysScored alerts events }
}`;

const nextDay = (d: string, n = 1) =>
  new Date(Date.parse(`${d}T00:00:00Z`) + n * 86_400_000).toISOString().slice(0, 10);

/** A JSON row repeating a day's stored inputs, with overrides. */
function rowFrom(slug: string, inputs: Json, date: string, overrides: Record<string, unknown> = {}) {
  return {
    slug,
    date,
    aum_usd: inputs.aum_usd,
    volume_usd: inputs.volume_usd,
    holders: inputs.holders,
    top_holder_pct: inputs.top_holder_pct,
    redemption_queue_usd: inputs.redemption_queue_usd,
    nav_deviation_bps: inputs.nav_deviation_bps,
    last_attestation_date: inputs.last_attestation_date,
    ...overrides,
  };
}

/**
 * Late and same-day data: ingestion compares each row with the protocol's last *reported* day,
 * replaces carried-forward days, re-scores what follows, and publishes only the final change.
 */
describeEachDialect('liquidity ingestion of same-day, late and corrected data', (dialect) => {
  let server: TestServer;
  let admin: string;
  let key: string;
  const clock = new ManualClock('2026-06-15T10:00:00Z');
  const today = '2026-06-15';

  const ingest = (rows: unknown[], replace?: boolean) =>
    gql(server.url, INGEST, {
      key: admin,
      variables: { format: 'JSON', data: JSON.stringify(rows), replace },
    });
  const scoreOf = async (slug: string) =>
    ((await rest(server.url, '/v1/scores?limit=100', { key })).body as Json[]).find((s) => s.slug === slug);
  const auditOf = async (auditId: string) => rest(server.url, `/v1/audits/${auditId}`, { key });
  const eventIds = async () =>
    new Set((await server.database.db.em().find(EventRecord, {})).map((e) => e.id));
  const newEvents = async (before: Set<string>) =>
    (await server.database.db.em().find(EventRecord, {})).filter((e) => !before.has(e.id));

  beforeAll(async () => {
    server = await startTestServer({ clock, dialect });
    admin = (await createKey(server, { plan: 'INSTITUTIONAL', scopes: 'admin' })).secret;
    key = server.key('INSTITUTIONAL');
  });
  afterAll(() => server?.close());

  it("accepts a second file for the same day with another protocol's row, replacing its carried-forward day", async () => {
    const harbor = (await auditOf((await scoreOf('harbor-treasury')).audit_id)).body.inputs;
    const first = await ingest([rowFrom('harbor-treasury', harbor, today)]);
    expect(first.body.errors).toBeUndefined();
    const harborAfter = await scoreOf('harbor-treasury');

    const carried = await scoreOf('meridian-bills');
    expect(carried).toMatchObject({ as_of: today, data_date: nextDay(today, -1) });
    const meridian = (await auditOf(carried.audit_id)).body.inputs;
    const second = await ingest([
      rowFrom('meridian-bills', meridian, today, { aum_usd: meridian.aum_usd * 1.2 }),
    ]);
    expect(second.body.errors).toBeUndefined();
    // Only meridian-bills' carried day was rewritten; nothing else moved.
    expect(second.body.data!.ingestLiquidityMetrics).toMatchObject({ rows: 1, protocols: 1, daysScored: 1 });

    const reported = await scoreOf('meridian-bills');
    expect(reported).toMatchObject({ as_of: today, data_date: today });
    expect(reported.audit_id).not.toBe(carried.audit_id);
    const history = (await rest(server.url, '/v1/scores/meridian-bills/history', { key })).body;
    expect(history.points.map((p: Json) => p.date).slice(-2)).toEqual([nextDay(today, -1), today]);
    expect(history.points.at(-1).audit_id).toBe(reported.audit_id);
    // The carried-forward score that was served keeps resolving to the inputs it was computed from.
    const superseded = await auditOf(carried.audit_id);
    expect(superseded.status).toBe(200);
    expect(superseded.body.inputs).toMatchObject({ as_of: today, data_date: nextDay(today, -1) });
    expect(superseded.body.result).toMatchObject({ audit_id: carried.audit_id, score: carried.score });
    expect(await scoreOf('harbor-treasury')).toEqual(harborAfter);
  });

  it("writes raw day rows inside the caller's transaction, so they roll back with it", async () => {
    const em = server.database.db.em();
    const day = await em.findOneOrFail(LiquidityDay, { asOf: { $ne: '' } }, { orderBy: { asOf: 'desc' } });
    const before = await em.count(LiquidityDay, {});
    const { id: _id, ...copy } = day;
    await expect(
      em.transactional(async (tx) => {
        await insertDays(tx, [{ ...copy, asOf: nextDay(today, 30), dataDate: nextDay(today, 30) }]);
        expect(await tx.count(LiquidityDay, {})).toBe(before + 1);
        throw new Error('abandon');
      }),
    ).rejects.toThrow('abandon');
    expect(await server.database.db.em().count(LiquidityDay, {})).toBe(before);
  });

  it('rejects a row for a day that already holds reported data, and corrects it only with replace', async () => {
    const days = await server.database.db.em().count(LiquidityDay, {});
    const events = await eventIds();
    const reported = await scoreOf('harbor-treasury');
    const inputs = (await auditOf(reported.audit_id)).body.inputs;
    const correction = [rowFrom('harbor-treasury', inputs, today, { aum_usd: inputs.aum_usd / 2 })];

    const dup = await ingest(correction);
    expect(dup.body.errors?.[0]?.message).toBe(
      `date: item 1: harbor-treasury already has reported data for ${today}; send the file with replace to correct it`,
    );
    expect(dup.body.errors?.[0]?.extensions).toMatchObject({
      code: 'BAD_USER_INPUT',
      field: 'date',
      item: 1,
    });
    expect(await server.database.db.em().count(LiquidityDay, {})).toBe(days);
    expect((await newEvents(events)).length).toBe(0);
    expect(await scoreOf('harbor-treasury')).toEqual(reported);

    const fixed = await ingest(correction, true);
    expect(fixed.body.errors).toBeUndefined();
    expect(fixed.body.data!.ingestLiquidityMetrics).toMatchObject({ daysScored: 1 });
    const corrected = await scoreOf('harbor-treasury');
    expect(corrected.audit_id).not.toBe(reported.audit_id);
    expect(corrected.components.aum).toBeLessThan(reported.components.aum);
    expect((await auditOf(reported.audit_id)).body.inputs.aum_usd).toBe(inputs.aum_usd);
    expect(await server.database.db.em().count(LiquidityDay, {})).toBe(days);
  });

  it('backfills a stale protocol, re-scores the days after it and publishes only the final change', async () => {
    const protocols = (await rest(server.url, '/v1/protocols?limit=100', { key })).body as Json[];
    const stale = protocols.find((p) => p.last_data_at <= nextDay(today, -7))!;
    expect(stale).toBeDefined();
    const before = await scoreOf(stale.slug);
    expect(before.penalties.find((p: Json) => p.kind === 'STALENESS').points).toBeGreaterThan(0);
    const template = (await auditOf(before.audit_id)).body.inputs;
    const dates: string[] = [];
    for (let d = nextDay(stale.last_data_at); d <= today; d = nextDay(d)) dates.push(d);
    const gap = dates[Math.floor(dates.length / 2)]!;
    const rows = dates
      .filter((d) => d !== gap)
      .map((d) => rowFrom(stale.slug, template, d, { last_attestation_date: d }));
    const events = await eventIds();

    const res = await ingest(rows);
    expect(res.body.errors).toBeUndefined();
    // Every carried-forward day from the old last report to today was rewritten.
    expect(res.body.data!.ingestLiquidityMetrics).toMatchObject({
      rows: rows.length,
      daysScored: dates.length,
    });
    const after = await scoreOf(stale.slug);
    expect(after).toMatchObject({ as_of: today, data_date: today });
    expect(after.penalties.find((p: Json) => p.kind === 'STALENESS').points).toBe(0);
    expect((await rest(server.url, `/v1/protocols/${stale.slug}`, { key })).body.last_data_at).toBe(today);
    const history = (await rest(server.url, `/v1/scores/${stale.slug}/history`, { key })).body;
    const gapPoint = history.points.find((p: Json) => p.date === gap);
    expect((await auditOf(gapPoint.audit_id)).body.inputs).toMatchObject({
      as_of: gap,
      data_date: nextDay(gap, -1),
      last_attestation_date: nextDay(gap, -1),
    });

    const published = (await newEvents(events)).filter((e) => e.payload.slug === stale.slug);
    const scoreEvents = published.filter((e) => e.type === 'score_change');
    expect(scoreEvents).toHaveLength(1);
    expect(scoreEvents[0]!.payload).toMatchObject({
      previousScore: before.score,
      score: after.score,
      asOf: today,
      auditId: after.audit_id,
    });
    expect(published.filter((e) => e.type === 'data_stale')).toEqual([]);

    // The gap is a carried-forward day, so late data may still fill it; the reported day after it keeps its inputs.
    const fill = await ingest([rowFrom(stale.slug, template, gap, { last_attestation_date: gap })]);
    expect(fill.body.errors).toBeUndefined();
    expect(fill.body.data!.ingestLiquidityMetrics).toMatchObject({ daysScored: 1 });
    expect(await scoreOf(stale.slug)).toEqual(after);
    const refilled = (await rest(server.url, `/v1/scores/${stale.slug}/history`, { key })).body;
    const filled = refilled.points.find((p: Json) => p.date === gap);
    expect((await auditOf(filled.audit_id)).body.inputs).toMatchObject({
      data_date: gap,
      last_attestation_date: gap,
    });
  });

  it("alerts on each watchlist's own thresholds, even below the event thresholds", async () => {
    const slug = 'northgate-t-bill';
    const fine = server.key('PROFESSIONAL');
    const coarse = server.key('ANALYST');
    for (const [k, body] of [
      [fine, { add: [slug], score_change_threshold: 0.5, aum_change_pct: 3 }],
      [coarse, { add: [slug] }],
    ] as const) {
      expect((await rest(server.url, '/v1/watchlist', { method: 'POST', key: k, body })).status).toBe(200);
    }
    const alertsBefore = async (k: string) =>
      ((await rest(server.url, '/v1/watchlist/alerts?limit=100', { key: k })).body as Json[]).length;
    const fineBefore = await alertsBefore(fine);
    const coarseBefore = await alertsBefore(coarse);
    const before = await scoreOf(slug);
    const inputs = (await auditOf(before.audit_id)).body.inputs;
    const events = await eventIds();

    // +4 % AUM and a top holder 1.4 points over the 20 % line (0.7 penalty points).
    const res = await ingest([
      rowFrom(slug, inputs, today, { aum_usd: inputs.aum_usd * 1.04, top_holder_pct: 21.4 }),
    ]);
    expect(res.body.errors).toBeUndefined();
    const after = await scoreOf(slug);
    const delta = Math.abs(after.score - before.score);
    // Below the event thresholds (1 point, 5 %), above the fine watchlist's (0.5 points, 3 %).
    expect(delta).toBeGreaterThanOrEqual(0.5);
    expect(delta).toBeLessThan(1);
    const published = (await newEvents(events)).filter(
      (e) => e.payload.slug === slug && e.type !== 'watchlist_alert',
    );
    expect(published.map((e) => e.type)).toEqual([]);

    const fineAlerts = (
      (await rest(server.url, '/v1/watchlist/alerts?limit=100', { key: fine })).body as Json[]
    )
      .slice(0, -fineBefore || undefined)
      .filter((a) => a.slug === slug);
    expect(fineAlerts.map((a) => a.kind).sort()).toEqual(['AUM_MOVE', 'SCORE_CHANGE']);
    expect(fineAlerts.find((a) => a.kind === 'AUM_MOVE').message).toMatch(/AUM moved 4%; threshold 3%$/);
    expect(fineAlerts.find((a) => a.kind === 'SCORE_CHANGE').message).toMatch(/threshold 0\.5$/);
    expect(await alertsBefore(coarse)).toBe(coarseBefore);
    const alertEvents = (await newEvents(events)).filter((e) => e.type === 'watchlist_alert');
    expect(alertEvents).toHaveLength(2);
  });
});
