import type { EntityManager } from '@mikro-orm/knex';
import { parse as parseCsv } from 'csv-parse/sync';
import type { Clock } from '../kernel/clock.js';
import { badInput } from '../kernel/errors.js';
import type { DomainEvent } from '../gateway/context.js';
import { stageEvents, type EventDraft } from '../events/stage.js';
import {
  LiquidityDay,
  Protocol,
  RegulatoryStatus,
  Watchlist,
  WatchlistAlert,
  WatchlistAlertKind,
  WatchlistItem,
  type LiquidityTier,
} from './entities.js';
import { round2, scoreProtocol, type ScoreInputs } from './engine/score.js';
import { daysBetween, inputsOf, insertDays, shiftDate, termsOf } from './service.js';

/**
 * Daily-metrics ingestion: parse → validate every row (a bad file is rejected whole, naming the
 * line and field) → in one transaction score each new day, carry every other active protocol
 * forward to the newest day (so history stays daily and staleness shows), update the latest
 * state, raise watchlist alerts and stage domain events. Events compare each protocol's state
 * before the file with its state after it.
 */

export type IngestFormat = 'CSV' | 'JSON';

export interface MetricRow {
  line: number;
  slug: string;
  date: string;
  aumUsd: number;
  volumeUsd: number | null;
  holders: number | null;
  topHolderPct: number | null;
  redemptionQueueUsd: number | null;
  navDeviationBps: number | null;
  lastAttestationDate: string | null;
  regulatoryStatus: RegulatoryStatus | null;
}

/** Event thresholds (METHODOLOGY.md "Events"). */
export const SCORE_EVENT_MIN_DELTA = 1;
export const AUM_EVENT_MIN_PCT = 5;
export const CIRCUIT_BREAKER_DROP = 15;
export const CIRCUIT_BREAKER_NAV_BPS = 200;
export const STALE_AFTER_DAYS = 7;
export const ATTESTATION_OVERDUE_DAYS = 90;
export const MAX_ROWS = 100_000;

const COLUMNS = [
  'slug',
  'date',
  'aum_usd',
  'volume_usd',
  'holders',
  'top_holder_pct',
  'redemption_queue_usd',
  'nav_deviation_bps',
  'last_attestation_date',
  'regulatory_status',
];

function fail(line: number, field: string, message: string): never {
  throw badInput(field, `line ${line}: ${message}`, { line });
}

function isDate(value: string): boolean {
  return (
    /^\d{4}-\d{2}-\d{2}$/.test(value) && new Date(`${value}T00:00:00Z`).toISOString().slice(0, 10) === value
  );
}

/** Parses CSV (header row) or JSON (an array of objects) into raw records with their line numbers. */
export function readRecords(
  text: string,
  format: IngestFormat,
): Array<{ line: number; record: Record<string, unknown> }> {
  if (format === 'CSV') {
    let records: Array<{ record: Record<string, string>; info: { lines: number } }>;
    try {
      records = parseCsv(text, {
        columns: true,
        skip_empty_lines: true,
        trim: true,
        info: true,
        bom: true,
      }) as never;
    } catch (e) {
      throw badInput('file', `is not valid CSV: ${(e as Error).message}`);
    }
    return records.map((r) => ({ line: r.info.lines, record: r.record }));
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (e) {
    throw badInput('file', `is not valid JSON: ${(e as Error).message}`);
  }
  if (!Array.isArray(parsed)) throw badInput('file', 'JSON must be an array of row objects');
  return parsed.map((record, i) => {
    if (typeof record !== 'object' || record === null || Array.isArray(record))
      fail(i + 1, 'row', 'must be an object');
    return { line: i + 1, record: record as Record<string, unknown> };
  });
}

/** Validates one record; `line` is the CSV line or the 1-based JSON array position. */
export function validateRow(line: number, record: Record<string, unknown>, today: string): MetricRow {
  for (const key of Object.keys(record))
    if (!COLUMNS.includes(key)) fail(line, key, `unknown field (expected ${COLUMNS.join(', ')})`);
  const text = (field: string): string | null => {
    const v = record[field];
    if (v === undefined || v === null || v === '') return null;
    if (typeof v !== 'string' && typeof v !== 'number') fail(line, field, 'must be a string or number');
    return String(v).trim();
  };
  const number = (
    field: string,
    opts: { required?: boolean; min?: number; max?: number; integer?: boolean } = {},
  ): number | null => {
    const raw = text(field);
    if (raw === null) {
      if (opts.required) fail(line, field, 'is required');
      return null;
    }
    const value = Number(raw);
    if (!Number.isFinite(value)) fail(line, field, `must be a number (got '${raw}')`);
    if (opts.integer && !Number.isInteger(value)) fail(line, field, `must be a whole number (got '${raw}')`);
    if ((opts.min !== undefined && value < opts.min) || (opts.max !== undefined && value > opts.max)) {
      fail(line, field, `must be between ${opts.min ?? '-∞'} and ${opts.max ?? '∞'} (got ${value})`);
    }
    return value;
  };
  const date = (field: string, required: boolean): string | null => {
    const raw = text(field);
    if (raw === null) {
      if (required) fail(line, field, 'is required');
      return null;
    }
    if (!isDate(raw)) fail(line, field, `must be a date YYYY-MM-DD (got '${raw}')`);
    if (raw > today) fail(line, field, `must not be in the future (today is ${today})`);
    return raw;
  };
  const slug = text('slug');
  if (!slug) fail(line, 'slug', 'is required');
  const status = text('regulatory_status');
  if (status !== null && !(status.toUpperCase() in RegulatoryStatus)) {
    fail(
      line,
      'regulatory_status',
      `must be one of ${Object.values(RegulatoryStatus).join(', ')} (got '${status}')`,
    );
  }
  return {
    line,
    slug: slug.toLowerCase(),
    date: date('date', true)!,
    aumUsd: number('aum_usd', { required: true, min: 0 })!,
    volumeUsd: number('volume_usd', { min: 0 }),
    holders: number('holders', { min: 0, integer: true }),
    topHolderPct: number('top_holder_pct', { min: 0, max: 100 }),
    redemptionQueueUsd: number('redemption_queue_usd', { min: 0 }),
    navDeviationBps: number('nav_deviation_bps', { min: -10_000, max: 10_000 }),
    lastAttestationDate: date('last_attestation_date', false),
    regulatoryStatus: status === null ? null : (status.toUpperCase() as RegulatoryStatus),
  };
}

export interface IngestResult {
  rows: number;
  protocols: number;
  daysScored: number;
  alerts: number;
  events: DomainEvent[];
}

interface Before {
  scoreAsOfBefore: string | null | undefined;
  score: number | null;
  tier: LiquidityTier | null;
  aum: number;
  regulatoryStatus: RegulatoryStatus;
  attestationOverdue: boolean;
}

/** Validates and applies a whole file in one transaction; returns the staged events to publish after commit. */
export async function ingestMetrics(
  em: EntityManager,
  clock: Clock,
  text: string,
  format: IngestFormat,
): Promise<IngestResult> {
  const today = clock.now().toISOString().slice(0, 10);
  const records = readRecords(text, format);
  if (records.length === 0) throw badInput('file', 'contains no rows');
  if (records.length > MAX_ROWS)
    throw badInput('file', `has ${records.length} rows; at most ${MAX_ROWS} per file`);
  const rows = records.map((r) => validateRow(r.line, r.record, today));

  return em.transactional(async (tx) => {
    const all = await tx.find(Protocol, { active: true });
    const bySlug = new Map(all.map((p) => [p.slug, p]));
    const seen = new Set<string>();
    for (const row of rows) {
      const p = bySlug.get(row.slug);
      if (!p) fail(row.line, 'slug', `no active protocol '${row.slug}'`);
      const key = `${row.slug}|${row.date}`;
      if (seen.has(key)) fail(row.line, 'date', `a second row for ${row.slug} on ${row.date}`);
      seen.add(key);
      if (p.scoreAsOf && row.date <= p.scoreAsOf)
        fail(row.line, 'date', `must be after ${row.slug}'s latest scored day ${p.scoreAsOf}`);
    }

    const latest = await latestInputs(tx, all);
    const before = new Map<string, Before>(all.map((p) => [p.id, snapshot(p, latest.get(p.id))]));
    const newestDay = rows.reduce((max, r) => (r.date > max ? r.date : max), rows[0]!.date);
    const byProtocol = new Map<string, MetricRow[]>();
    for (const row of [...rows].sort((a, b) => (a.date < b.date ? -1 : 1))) {
      const id = bySlug.get(row.slug)!.id;
      byProtocol.set(id, [...(byProtocol.get(id) ?? []), row]);
    }

    const days: Array<Omit<LiquidityDay, 'id'>> = [];
    const drafts: EventDraft[] = [];
    const circuitReasons = new Map<string, string>();
    for (const p of all) {
      let current = latest.get(p.id) ?? null;
      const score = (inputs: ScoreInputs) => {
        const r = scoreProtocol(inputs);
        days.push({ protocolId: p.id, ...inputs, score: r.score, tier: r.tier, auditId: r.auditId });
        p.liquidityScore = r.score;
        p.liquidityTier = r.tier as LiquidityTier;
        p.scoreAsOf = inputs.asOf;
        p.aum = inputs.aumUsd;
        p.lastDataAt = inputs.dataDate;
        current = inputs;
      };
      // Days between the last stored day and the target carry the last metrics forward.
      const fillTo = (until: string) => {
        while (current && current.asOf < until) score({ ...current, asOf: shiftDate(current.asOf, 1) });
      };
      for (const row of byProtocol.get(p.id) ?? []) {
        if (row.regulatoryStatus) p.regulatoryStatus = row.regulatoryStatus;
        if (current) fillTo(shiftDate(row.date, -1));
        if (row.navDeviationBps !== null && Math.abs(row.navDeviationBps) >= CIRCUIT_BREAKER_NAV_BPS) {
          circuitReasons.set(
            p.id,
            `NAV deviation of ${row.navDeviationBps} bps on ${row.date} (limit ±${CIRCUIT_BREAKER_NAV_BPS})`,
          );
        }
        score({
          asOf: row.date,
          dataDate: row.date,
          aumUsd: row.aumUsd,
          volumeUsd: row.volumeUsd,
          holders: row.holders,
          topHolderPct: row.topHolderPct,
          redemptionQueueUsd: row.redemptionQueueUsd,
          navDeviationBps: row.navDeviationBps,
          lastAttestationDate: row.lastAttestationDate ?? current?.lastAttestationDate ?? null,
          ...termsOf(p),
        });
        p.staleNotified = false;
      }
      if (current) fillTo(newestDay);
    }

    const touched = all.filter((p) => p.scoreAsOf !== before.get(p.id)!.scoreAsOfBefore);
    const asOf = newestDay;
    for (const p of all) {
      const b = before.get(p.id)!;
      const base = { slug: p.slug, protocolId: p.id, asOf };
      if (b.score !== null && p.liquidityScore !== null && p.liquidityScore !== undefined) {
        const delta = round2(p.liquidityScore - b.score);
        if (Math.abs(delta) >= SCORE_EVENT_MIN_DELTA) {
          drafts.push({
            type: 'score_change',
            payload: {
              ...base,
              previousScore: b.score,
              score: p.liquidityScore,
              delta,
              auditId: dayOf(days, p)?.auditId ?? null,
            },
          });
        }
        if (-delta >= CIRCUIT_BREAKER_DROP) {
          const reason = `score fell ${-delta} points (from ${b.score} to ${p.liquidityScore})`;
          circuitReasons.set(p.id, [circuitReasons.get(p.id), reason].filter(Boolean).join('; '));
        }
      }
      if (b.tier && p.liquidityTier && b.tier !== p.liquidityTier) {
        drafts.push({
          type: 'tier_change',
          payload: { ...base, previousTier: b.tier, tier: p.liquidityTier, score: p.liquidityScore },
        });
      }
      if (b.aum > 0 && byProtocol.has(p.id)) {
        const changePct = round2(((p.aum - b.aum) / b.aum) * 100);
        if (Math.abs(changePct) >= AUM_EVENT_MIN_PCT) {
          drafts.push({
            type: 'aum_change',
            payload: { ...base, previousAumUsd: b.aum.toFixed(2), aumUsd: p.aum.toFixed(2), changePct },
          });
        }
      }
      for (const message of complianceMessages(p, b, dayOf(days, p))) {
        drafts.push({ type: 'compliance_alert', payload: { ...base, ...message } });
      }
      if (p.lastDataAt && !p.staleNotified && daysBetween(p.lastDataAt, asOf) >= STALE_AFTER_DAYS) {
        p.staleNotified = true;
        drafts.push({
          type: 'data_stale',
          payload: { ...base, lastDataAt: p.lastDataAt, staleDays: daysBetween(p.lastDataAt, asOf) },
        });
      }
      const reason = circuitReasons.get(p.id);
      if (reason) drafts.push({ type: 'circuit_breaker', payload: { ...base, reason } });
    }
    const alerts = await watchlistAlerts(tx, clock, drafts, before, all);
    for (const p of touched) p.updatedAt = clock.now();
    await insertDays(tx, days);
    await tx.flush();
    const events = stageEvents(tx, clock, [...drafts, ...alerts.drafts]);
    await tx.flush();
    return {
      rows: rows.length,
      protocols: byProtocol.size,
      daysScored: days.length,
      alerts: alerts.count,
      events,
    };
  });
}

function dayOf(days: Array<Omit<LiquidityDay, 'id'>>, p: Protocol) {
  for (let i = days.length - 1; i >= 0; i--) if (days[i]!.protocolId === p.id) return days[i];
  return undefined;
}

async function latestInputs(em: EntityManager, protocols: Protocol[]): Promise<Map<string, ScoreInputs>> {
  const scored = protocols.filter((p) => p.scoreAsOf);
  if (scored.length === 0) return new Map();
  const days = await em.find(LiquidityDay, {
    protocolId: { $in: scored.map((p) => p.id) },
    asOf: { $in: [...new Set(scored.map((p) => p.scoreAsOf!))] },
  });
  const wanted = new Map(scored.map((p) => [p.id, p.scoreAsOf]));
  return new Map(
    days.filter((d) => wanted.get(d.protocolId) === d.asOf).map((d) => [d.protocolId, inputsOf(d)]),
  );
}

function snapshot(p: Protocol, inputs: ScoreInputs | undefined): Before {
  return {
    score: p.liquidityScore ?? null,
    tier: p.liquidityTier ?? null,
    aum: p.aum,
    regulatoryStatus: p.regulatoryStatus,
    attestationOverdue: inputs ? attestationOverdue(inputs) : false,
    scoreAsOfBefore: p.scoreAsOf,
  };
}

function attestationOverdue(i: Pick<ScoreInputs, 'asOf' | 'lastAttestationDate'>): boolean {
  return (
    i.lastAttestationDate === null || daysBetween(i.lastAttestationDate, i.asOf) > ATTESTATION_OVERDUE_DAYS
  );
}

function complianceMessages(
  p: Protocol,
  b: Before,
  day: Pick<ScoreInputs, 'asOf' | 'lastAttestationDate'> | undefined,
): Array<{ kind: string; message: string }> {
  const out: Array<{ kind: string; message: string }> = [];
  if (p.regulatoryStatus !== b.regulatoryStatus) {
    out.push({
      kind: 'REGULATORY_STATUS_CHANGED',
      message: `Regulatory status changed from ${b.regulatoryStatus} to ${p.regulatoryStatus}`,
    });
  }
  if (day && !b.attestationOverdue && attestationOverdue(day)) {
    out.push({
      kind: 'ATTESTATION_OVERDUE',
      message: `No reserve attestation for more than ${ATTESTATION_OVERDUE_DAYS} days (last: ${day.lastAttestationDate ?? 'never'})`,
    });
  }
  return out;
}

/** Turns the protocol events into alert rows (and `watchlist_alert` events) for watchlists whose thresholds they cross. */
async function watchlistAlerts(
  em: EntityManager,
  clock: Clock,
  drafts: EventDraft[],
  before: Map<string, Before>,
  protocols: Protocol[],
): Promise<{ count: number; drafts: EventDraft[] }> {
  const relevant = drafts.filter((d) =>
    ['score_change', 'tier_change', 'aum_change', 'compliance_alert'].includes(d.type),
  );
  if (relevant.length === 0) return { count: 0, drafts: [] };
  const ids = [...new Set(relevant.map((d) => d.payload.protocolId as string))];
  const items = await em.find(WatchlistItem, { protocolId: { $in: ids } });
  if (items.length === 0) return { count: 0, drafts: [] };
  const lists = new Map(
    (await em.find(Watchlist, { id: { $in: [...new Set(items.map((i) => i.watchlistId))] } })).map((w) => [
      w.id,
      w,
    ]),
  );
  const byId = new Map(protocols.map((p) => [p.id, p]));
  const out: EventDraft[] = [];
  let count = 0;
  for (const item of items) {
    const list = lists.get(item.watchlistId)!;
    const p = byId.get(item.protocolId)!;
    const b = before.get(p.id)!;
    for (const d of relevant.filter((e) => e.payload.protocolId === p.id)) {
      let alert: { kind: WatchlistAlertKind; message: string } | null = null;
      if (
        d.type === 'score_change' &&
        list.scoreChangeThreshold !== null &&
        Math.abs(d.payload.delta as number) >= list.scoreChangeThreshold
      ) {
        alert = {
          kind: WatchlistAlertKind.SCORE_CHANGE,
          message: `${p.name} score moved ${d.payload.delta} points (${b.score} → ${p.liquidityScore}); threshold ${list.scoreChangeThreshold}`,
        };
      } else if (d.type === 'tier_change' && list.tierShift) {
        alert = {
          kind: WatchlistAlertKind.TIER_SHIFT,
          message: `${p.name} moved from ${b.tier} to ${p.liquidityTier}`,
        };
      } else if (
        d.type === 'aum_change' &&
        list.aumChangePct !== null &&
        Math.abs(d.payload.changePct as number) >= list.aumChangePct
      ) {
        alert = {
          kind: WatchlistAlertKind.AUM_MOVE,
          message: `${p.name} AUM moved ${d.payload.changePct}%; threshold ${list.aumChangePct}%`,
        };
      } else if (d.type === 'compliance_alert' && list.complianceEvents) {
        alert = { kind: WatchlistAlertKind.COMPLIANCE, message: `${p.name}: ${d.payload.message as string}` };
      }
      if (!alert) continue;
      const row = em.create(WatchlistAlert, {
        watchlistId: list.id,
        accountId: list.accountId,
        protocolId: p.id,
        slug: p.slug,
        kind: alert.kind,
        message: alert.message,
        asOf: d.payload.asOf as string,
        createdAt: clock.now(),
      });
      em.persist(row);
      count++;
      out.push({
        type: 'watchlist_alert',
        accountId: list.accountId,
        payload: {
          watchlistId: list.id,
          alertId: row.id,
          kind: alert.kind,
          slug: p.slug,
          message: alert.message,
          asOf: row.asOf,
        },
      });
    }
  }
  return { count, drafts: out };
}
