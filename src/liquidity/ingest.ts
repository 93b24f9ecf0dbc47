import type { EntityManager } from '@mikro-orm/knex';
import { todayOf, type Clock } from '../kernel/clock.js';
import { conflictOnUnique } from '../db/errors.js';
import { knexIn } from '../db/knex.js';
import { badInput, conflict } from '../kernel/errors.js';
import type { DomainEvent } from '../kernel/events.js';
import { stageEvents, type EventDraft } from '../events/stage.js';
import {
  LiquidityDay,
  ProfileScoreAudit,
  Protocol,
  RegulatoryStatus,
  Watchlist,
  WatchlistAlert,
  WatchlistAlertKind,
  WatchlistItem,
  type LiquidityTier,
} from './entities.js';
import {
  DEFAULT_CAPS,
  DEFAULT_WEIGHTS,
  auditIdOf,
  daysBetween,
  round2,
  scoreProtocol,
  type DailyMetrics,
  type ScoreInputs,
  type Tier,
} from './engine/score.js';
import { FieldReader, failAt, readRecords, type FileFormat, type Locator } from './records.js';
import type { ReadModelVersions } from '../db/versions.js';
import { inputsOf, insertDays, latestDays, shiftDate, termsOf } from './days.js';
import type { ServiceDeps } from '../kernel/deps.js';

/**
 * Daily-metrics ingestion: parse → validate every row (a bad file is rejected whole, naming the
 * line or item and the field) → in one transaction, per protocol, replay its days from its
 * earliest row to its end: new rows become reported days, days already reported keep their
 * stored inputs, every other day carries the last report forward. Only days whose inputs change
 * are rewritten; the scores they replace stay resolvable by audit id (superseded audits). Every
 * active protocol is carried forward to the newest date in the file, so history stays daily
 * and staleness shows. Events and watchlist alerts compare each protocol's latest state before
 * the file with its latest state after it — never the intermediate days a backfill recomputed.
 */

export type IngestFormat = FileFormat;

export interface IngestOptions {
  /** Overwrite days that already hold reported data (a correction); otherwise such a row is an error. */
  replace?: boolean;
}

/** One row of an ingestion file: a protocol's metrics for a day, and a status change if reported. */
interface MetricRow extends DailyMetrics {
  at: Locator;
  slug: string;
  date: string;
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

/** Validates one record; `at` names its CSV line or JSON item. */
function validateRow(at: Locator, record: Record<string, unknown>, today: string): MetricRow {
  const f = new FieldReader(at, record);
  f.only(COLUMNS);
  const slug = f.text('slug', { required: true })!;
  const date = f.date('date', { required: true, notAfter: { date: today, why: `today (${today})` } })!;
  return {
    at,
    slug: slug.toLowerCase(),
    date,
    aumUsd: f.number('aum_usd', { required: true, min: 0 })!,
    volumeUsd: f.number('volume_usd', { min: 0 }),
    holders: f.number('holders', { min: 0, integer: true }),
    topHolderPct: f.number('top_holder_pct', { min: 0, max: 100 }),
    redemptionQueueUsd: f.number('redemption_queue_usd', { min: 0 }),
    navDeviationBps: f.number('nav_deviation_bps', { min: -10_000, max: 10_000 }),
    // An attestation dated after the row's own day would be scored as fresher than it was.
    lastAttestationDate: f.date('last_attestation_date', {
      notAfter: { date, why: `the row's date (${date})` },
    }),
    regulatoryStatus: f.choice('regulatory_status', Object.values(RegulatoryStatus)),
  };
}

export interface IngestResult {
  rows: number;
  protocols: number;
  daysScored: number;
  alerts: number;
  events: DomainEvent[];
}

/** A protocol's latest published state. */
interface State {
  score: number | null;
  tier: LiquidityTier | null;
  aum: number;
  regulatoryStatus: RegulatoryStatus;
  attestationOverdue: boolean;
}

interface DayResult {
  inputs: ScoreInputs;
  score: number;
  tier: Tier;
  auditId: string;
}

/** What one ingestion did to one protocol's latest state. */
interface Change {
  protocol: Protocol;
  before: State;
  asOf: string;
  /** Null when the protocol had no score before or after. */
  delta: number | null;
  /** Only for protocols with rows in the file and AUM before. */
  aumPct: number | null;
  tierShift: boolean;
  compliance: Array<{ kind: string; message: string }>;
  auditId: string | null;
  circuitReasons: string[];
}

/** Validates and applies a whole file in one transaction; returns the staged events to publish after commit. */
export async function ingestMetrics(
  { em, clock, events: publisher, versions }: ServiceDeps & { versions: ReadModelVersions },
  text: string,
  format: IngestFormat,
  options: IngestOptions = {},
): Promise<IngestResult> {
  const today = todayOf(clock);
  const records = readRecords(text, format);
  if (records.length === 0) throw badInput('file', 'contains no rows');
  if (records.length > MAX_ROWS)
    throw badInput('file', `has ${records.length} rows; at most ${MAX_ROWS} per file`);
  const rows = records.map((r) => validateRow(r.at, r.record, today));

  return inOneTransaction(versions, em, async (tx) => {
    const all = await tx.find(Protocol, { active: true });
    const bySlug = new Map(all.map((p) => [p.slug, p]));
    const byProtocol = new Map<string, MetricRow[]>();
    const seen = new Set<string>();
    for (const row of rows) {
      const p = bySlug.get(row.slug);
      if (!p) failAt(row.at, 'slug', `no active protocol '${row.slug}'`);
      const key = `${row.slug}|${row.date}`;
      if (seen.has(key)) failAt(row.at, 'date', `a second row for ${row.slug} on ${row.date}`);
      seen.add(key);
      const list = byProtocol.get(p.id);
      if (list) list.push(row);
      else byProtocol.set(p.id, [row]);
    }
    for (const list of byProtocol.values()) list.sort((a, b) => (a.date < b.date ? -1 : 1));

    const latest = await latestInputs(tx, all);
    const stored = await storedFrom(tx, byProtocol);
    for (const row of rows) {
      const day = stored.get(bySlug.get(row.slug)!.id)?.get(row.date);
      if (day && day.dataDate === day.asOf && !options.replace) {
        failAt(
          row.at,
          'date',
          `${row.slug} already has reported data for ${row.date}; send the file with replace to correct it`,
        );
      }
    }

    // The market's newest day: every active protocol is scored up to it (new and reactivated ones too).
    const newestDay = [...rows.map((r) => r.date), ...all.map((p) => p.scoreAsOf ?? '')].reduce((a, b) =>
      a > b ? a : b,
    );
    const writes: Array<Omit<LiquidityDay, 'id'>> = [];
    const replaced: LiquidityDay[] = [];
    const changes: Change[] = [];
    for (const p of all) {
      const before = stateOf(p, latest.get(p.id));
      const own = byProtocol.get(p.id) ?? [];
      const reportedBefore = p.lastDataAt ?? '';
      const days = stored.get(p.id) ?? new Map<string, LiquidityDay>();
      let previous = latest.get(p.id) ?? null;
      if (own.length > 0) {
        const dayBefore = days.get(shiftDate(own[0]!.date, -1));
        // Rows before the stored history start from nothing; a gap after it carries the latest day.
        previous = dayBefore
          ? inputsOf(dayBefore)
          : previous && previous.asOf < own[0]!.date
            ? previous
            : null;
      }
      const replay = replayDays(p, own, days, previous, newestDay, reportedBefore);
      writes.push(...replay.writes);
      replaced.push(...replay.replaced);
      if (replay.last) {
        p.liquidityScore = replay.last.score;
        p.liquidityTier = replay.last.tier as LiquidityTier;
        p.scoreAsOf = replay.last.inputs.asOf;
        p.aum = replay.last.inputs.aumUsd;
      }
      p.regulatoryStatus = replay.regulatoryStatus;
      const newestRow = own.at(-1);
      if (newestRow && newestRow.date > reportedBefore) {
        p.lastDataAt = newestRow.date;
        p.staleNotified = false;
      }
      if (replay.writes.length > 0 || p.regulatoryStatus !== before.regulatoryStatus)
        p.updatedAt = clock.now();
      changes.push(changeOf(p, before, replay.last, own.length > 0, newestRow));
    }

    await supersede(tx, clock, replaced);
    await insertDays(tx, writes);
    const drafts = eventDrafts(changes);
    const alerts = await watchlistAlerts(tx, clock, changes);
    await tx.flush();
    const events = await stageEvents(tx, { clock, events: publisher }, [...drafts, ...alerts.drafts]);
    return {
      rows: rows.length,
      protocols: byProtocol.size,
      daysScored: writes.length,
      alerts: alerts.count,
      events,
    };
  });
}

/**
 * Replays one protocol's days from its first row (or the day after its latest score) to `end`:
 * a row makes a reported day; a day already reported keeps its stored inputs; any other day
 * carries the previous day forward. Returns only the days whose inputs changed.
 */
function replayDays(
  p: Protocol,
  rows: MetricRow[],
  stored: Map<string, LiquidityDay>,
  previous: ScoreInputs | null,
  end: string,
  reportedBefore: string,
): {
  writes: Array<Omit<LiquidityDay, 'id'>>;
  replaced: LiquidityDay[];
  last: DayResult | null;
  regulatoryStatus: RegulatoryStatus;
} {
  const rowAt = new Map(rows.map((r) => [r.date, r]));
  const writes: Array<Omit<LiquidityDay, 'id'>> = [];
  const replaced: LiquidityDay[] = [];
  // A status reported on an older day than the protocol's newest report is history, not news.
  let status = p.regulatoryStatus;
  let current = previous;
  let last: DayResult | null = null;
  const start = previous ? shiftDate(previous.asOf, 1) : rows[0]?.date;
  if (!start) return { writes, replaced, last, regulatoryStatus: status };
  for (let d = start; d <= end; d = shiftDate(d, 1)) {
    const row = rowAt.get(d);
    const day = stored.get(d);
    let inputs: ScoreInputs | null;
    if (row) {
      if (row.regulatoryStatus && row.date >= reportedBefore) status = row.regulatoryStatus;
      inputs = {
        asOf: d,
        dataDate: d,
        aumUsd: row.aumUsd,
        volumeUsd: row.volumeUsd,
        holders: row.holders,
        topHolderPct: row.topHolderPct,
        redemptionQueueUsd: row.redemptionQueueUsd,
        navDeviationBps: row.navDeviationBps,
        lastAttestationDate: row.lastAttestationDate ?? current?.lastAttestationDate ?? null,
        ...termsOf(p),
        regulatoryStatus: row.regulatoryStatus ?? status,
      };
    } else if (day && day.dataDate === day.asOf) inputs = inputsOf(day);
    else if (current) inputs = { ...current, asOf: d };
    else inputs = day ? inputsOf(day) : null;
    if (!inputs) continue;
    current = inputs;
    if (day && day.auditId === auditIdOf(inputs, DEFAULT_WEIGHTS, DEFAULT_CAPS)) {
      last = { inputs, score: day.score, tier: day.tier, auditId: day.auditId };
      continue;
    }
    const r = scoreProtocol(inputs);
    writes.push({ protocolId: p.id, ...inputs, score: r.score, tier: r.tier, auditId: r.auditId });
    if (day) replaced.push(day);
    last = { inputs, score: r.score, tier: r.tier, auditId: r.auditId };
  }
  return { writes, replaced, last, regulatoryStatus: status };
}

function changeOf(
  p: Protocol,
  before: State,
  last: DayResult | null,
  hadRows: boolean,
  newestRow: MetricRow | undefined,
): Change {
  const score = p.liquidityScore ?? null;
  const delta = before.score !== null && score !== null ? round2(score - before.score) : null;
  const circuitReasons: string[] = [];
  // Only the report now in force can trip the breaker; a backfilled older day is history.
  if (
    newestRow &&
    newestRow.date === p.lastDataAt &&
    newestRow.navDeviationBps !== null &&
    Math.abs(newestRow.navDeviationBps) >= CIRCUIT_BREAKER_NAV_BPS
  ) {
    circuitReasons.push(
      `NAV deviation of ${newestRow.navDeviationBps} bps on ${newestRow.date} (limit ±${CIRCUIT_BREAKER_NAV_BPS})`,
    );
  }
  if (delta !== null && -delta >= CIRCUIT_BREAKER_DROP)
    circuitReasons.push(`score fell ${-delta} points (from ${before.score} to ${score})`);
  const compliance: Change['compliance'] = [];
  if (p.regulatoryStatus !== before.regulatoryStatus) {
    compliance.push({
      kind: 'REGULATORY_STATUS_CHANGED',
      message: `Regulatory status changed from ${before.regulatoryStatus} to ${p.regulatoryStatus}`,
    });
  }
  if (last && !before.attestationOverdue && attestationOverdue(last.inputs)) {
    compliance.push({
      kind: 'ATTESTATION_OVERDUE',
      message: `No reserve attestation for more than ${ATTESTATION_OVERDUE_DAYS} days (last: ${last.inputs.lastAttestationDate ?? 'never'})`,
    });
  }
  return {
    protocol: p,
    before,
    asOf: p.scoreAsOf ?? '',
    delta,
    aumPct: hadRows && before.aum > 0 ? round2(((p.aum - before.aum) / before.aum) * 100) : null,
    tierShift: Boolean(before.tier && p.liquidityTier && before.tier !== p.liquidityTier),
    compliance,
    auditId: last?.auditId ?? null,
    circuitReasons,
  };
}

function eventDrafts(changes: Change[]): EventDraft[] {
  const drafts: EventDraft[] = [];
  for (const c of changes) {
    const p = c.protocol;
    const base = { slug: p.slug, protocolId: p.id, asOf: c.asOf };
    if (c.delta !== null && Math.abs(c.delta) >= SCORE_EVENT_MIN_DELTA) {
      drafts.push({
        type: 'score_change',
        payload: {
          ...base,
          previousScore: c.before.score,
          score: p.liquidityScore,
          delta: c.delta,
          auditId: c.auditId,
        },
      });
    }
    if (c.tierShift) {
      drafts.push({
        type: 'tier_change',
        payload: { ...base, previousTier: c.before.tier, tier: p.liquidityTier, score: p.liquidityScore },
      });
    }
    if (c.aumPct !== null && Math.abs(c.aumPct) >= AUM_EVENT_MIN_PCT) {
      drafts.push({
        type: 'aum_change',
        payload: {
          ...base,
          previousAumUsd: c.before.aum.toFixed(2),
          aumUsd: p.aum.toFixed(2),
          changePct: c.aumPct,
        },
      });
    }
    for (const message of c.compliance)
      drafts.push({ type: 'compliance_alert', payload: { ...base, ...message } });
    if (p.lastDataAt && !p.staleNotified && daysBetween(p.lastDataAt, c.asOf) >= STALE_AFTER_DAYS) {
      p.staleNotified = true;
      drafts.push({
        type: 'data_stale',
        payload: { ...base, lastDataAt: p.lastDataAt, staleDays: daysBetween(p.lastDataAt, c.asOf) },
      });
    }
    if (c.circuitReasons.length > 0)
      drafts.push({ type: 'circuit_breaker', payload: { ...base, reason: c.circuitReasons.join('; ') } });
  }
  return drafts;
}

/** The latest stored inputs of each protocol (its `scoreAsOf` day), in one query. */
async function latestInputs(em: EntityManager, protocols: Protocol[]): Promise<Map<string, ScoreInputs>> {
  const days = await latestDays(em, protocols);
  return new Map([...days].map(([protocolId, day]) => [protocolId, inputsOf(day)]));
}

/** The stored days each protocol's rows may touch: from the day before its earliest row on. */
async function storedFrom(
  em: EntityManager,
  byProtocol: Map<string, MetricRow[]>,
): Promise<Map<string, Map<string, LiquidityDay>>> {
  const out = new Map<string, Map<string, LiquidityDay>>();
  const wanted = [...byProtocol].map(([protocolId, rows]) => ({
    protocolId,
    asOf: { $gte: shiftDate(rows[0]!.date, -1) },
  }));
  for (let i = 0; i < wanted.length; i += 100) {
    for (const d of await em.find(LiquidityDay, { $or: wanted.slice(i, i + 100) })) {
      const days = out.get(d.protocolId) ?? new Map<string, LiquidityDay>();
      days.set(d.asOf, d);
      out.set(d.protocolId, days);
    }
  }
  return out;
}

/**
 * Keeps the audit trail of the days about to be rewritten: their default-methodology audit ids
 * and every profile-weighted audit served from them move to `liquidity_superseded_audits` with
 * the inputs they were computed from; then the old rows go.
 */
async function supersede(em: EntityManager, clock: Clock, days: LiquidityDay[]): Promise<void> {
  if (days.length === 0) return;
  const knex = knexIn(em);
  const now = clock.now();
  for (let i = 0; i < days.length; i += 400) {
    const chunk = days.slice(i, i + 400);
    const byId = new Map(chunk.map((d) => [d.id, d]));
    const profileAudits = await em.find(ProfileScoreAudit, { dayId: { $in: [...byId.keys()] } });
    const row = (
      auditId: string,
      day: LiquidityDay,
      profileId: string | null,
      weights: object,
      caps: object,
    ) => ({
      audit_id: auditId,
      protocol_id: day.protocolId,
      as_of: day.asOf,
      profile_id: profileId,
      inputs: JSON.stringify(inputsOf(day)),
      weights: JSON.stringify(weights),
      penalty_caps: JSON.stringify(caps),
      superseded_at: now,
    });
    const rows = [
      ...chunk.map((d) => row(d.auditId, d, null, DEFAULT_WEIGHTS, DEFAULT_CAPS)),
      ...profileAudits.map((a) => row(a.auditId, byId.get(a.dayId)!, a.profileId, a.weights, a.penaltyCaps)),
    ];
    // The same result may have been superseded before (data corrected back and forth).
    await knex('liquidity_superseded_audits').insert(rows).onConflict('audit_id').ignore();
    await knex('liquidity_profile_audits')
      .whereIn('day_id', [...byId.keys()])
      .delete();
    await knex('liquidity_days')
      .whereIn('id', [...byId.keys()])
      .delete();
  }
}

function stateOf(p: Protocol, inputs: ScoreInputs | undefined): State {
  return {
    score: p.liquidityScore ?? null,
    tier: p.liquidityTier ?? null,
    aum: p.aum,
    regulatoryStatus: p.regulatoryStatus,
    attestationOverdue: inputs ? attestationOverdue(inputs) : false,
  };
}

function attestationOverdue(i: Pick<ScoreInputs, 'asOf' | 'lastAttestationDate'>): boolean {
  return (
    i.lastAttestationDate === null || daysBetween(i.lastAttestationDate, i.asOf) > ATTESTATION_OVERDUE_DAYS
  );
}

/**
 * Alerts for every watchlist holding a changed protocol, each judged against that watchlist's
 * own thresholds (which may be finer than the event thresholds), plus `watchlist_alert` events.
 */
async function watchlistAlerts(
  em: EntityManager,
  clock: Clock,
  changes: Change[],
): Promise<{ count: number; drafts: EventDraft[] }> {
  const moved = changes.filter(
    (c) =>
      (c.delta !== null && c.delta !== 0) ||
      (c.aumPct !== null && c.aumPct !== 0) ||
      c.tierShift ||
      c.compliance.length > 0,
  );
  if (moved.length === 0) return { count: 0, drafts: [] };
  const byProtocol = new Map(moved.map((c) => [c.protocol.id, c]));
  const items = await em.find(WatchlistItem, { protocolId: { $in: [...byProtocol.keys()] } });
  if (items.length === 0) return { count: 0, drafts: [] };
  const lists = new Map(
    (await em.find(Watchlist, { id: { $in: [...new Set(items.map((i) => i.watchlistId))] } })).map((w) => [
      w.id,
      w,
    ]),
  );
  const out: EventDraft[] = [];
  let count = 0;
  for (const item of items) {
    const list = lists.get(item.watchlistId)!;
    const c = byProtocol.get(item.protocolId)!;
    const p = c.protocol;
    for (const alert of alertsFor(list, c)) {
      const row = em.create(WatchlistAlert, {
        watchlistId: list.id,
        accountId: list.accountId,
        protocolId: p.id,
        slug: p.slug,
        kind: alert.kind,
        message: alert.message,
        asOf: c.asOf,
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

function alertsFor(list: Watchlist, c: Change): Array<{ kind: WatchlistAlertKind; message: string }> {
  const p = c.protocol;
  const out: Array<{ kind: WatchlistAlertKind; message: string }> = [];
  if (
    list.scoreChangeThreshold !== null &&
    c.delta !== null &&
    c.delta !== 0 &&
    Math.abs(c.delta) >= list.scoreChangeThreshold
  ) {
    out.push({
      kind: WatchlistAlertKind.SCORE_CHANGE,
      message: `${p.name} score moved ${c.delta} points (${c.before.score} → ${p.liquidityScore}); threshold ${list.scoreChangeThreshold}`,
    });
  }
  if (list.tierShift && c.tierShift) {
    out.push({
      kind: WatchlistAlertKind.TIER_SHIFT,
      message: `${p.name} moved from ${c.before.tier} to ${p.liquidityTier}`,
    });
  }
  if (
    list.aumChangePct !== null &&
    c.aumPct !== null &&
    c.aumPct !== 0 &&
    Math.abs(c.aumPct) >= list.aumChangePct
  ) {
    out.push({
      kind: WatchlistAlertKind.AUM_MOVE,
      message: `${p.name} AUM moved ${c.aumPct}%; threshold ${list.aumChangePct}%`,
    });
  }
  if (list.complianceEvents) {
    for (const m of c.compliance)
      out.push({ kind: WatchlistAlertKind.COMPLIANCE, message: `${p.name}: ${m.message}` });
  }
  return out;
}

/**
 * The whole file in one transaction. Two ingestions writing the same protocol-day at once collide
 * on the day's unique key: the later commit loses, all of it, with a 409 rather than a 500.
 */
function inOneTransaction<T>(
  versions: ReadModelVersions,
  em: EntityManager,
  work: (tx: EntityManager) => Promise<T>,
): Promise<T> {
  return conflictOnUnique(
    () => versions.changing(em, 'liquidity', work),
    () =>
      conflict('Another ingestion wrote some of these days at the same time; nothing was applied, retry', {
        reason: 'CONCURRENT',
      }),
  );
}
