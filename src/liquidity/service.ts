import type { EntityManager } from '@mikro-orm/knex';
import { knexIn } from '../db/knex.js';
import { findPlain } from '../db/plain.js';
import { NO_DEADLINE, type Deadline } from '../kernel/deadline.js';
import type { FilterQuery } from '@mikro-orm/core';
import { badInput, notFound } from '../kernel/errors.js';
import type { Principal } from '../kernel/principal.js';
import type { Page } from '../gateway/connection.js';
import {
  FREQUENCY_DAYS,
  ProfileScoreAudit,
  LiquidityDay,
  Protocol,
  ProtocolCategory,
  LiquidityTier,
  ScoringProfile,
  SupersededAudit,
} from './entities.js';
import { isUuid } from '../kernel/ids.js';
import { badField, isSlug } from './fields.js';
import {
  DEFAULT_CAPS,
  DEFAULT_WEIGHTS,
  daysBetween,
  redemptionComponent,
  scoreProtocol,
  type PenaltyCaps,
  type ScoreInputs,
  type ScoreResult,
  type Weights,
} from './engine/score.js';
import {
  backtestMeasures,
  indices,
  INDEX_NAMES,
  trajectoryOf,
  type BacktestMeasures,
  type IndexCode,
  type Trajectory,
} from './engine/series.js';

/**
 * Reads of the liquidity domain. Every rule lives here; resolvers and REST shims only adapt.
 * Latest scores are the stored default-methodology results; under a scoring profile they are
 * recomputed from the same stored inputs with the profile's weights and caps.
 */

export const HISTORY_DAYS = 30;
export const BACKTEST_MIN = 7;
export const BACKTEST_MAX = 365;

export function parseCategory(raw: string, field = 'category'): ProtocolCategory {
  const value = raw.trim().toUpperCase().replace(/[-\s]/g, '_');
  if (!(value in ProtocolCategory)) {
    throw badInput(
      field,
      `must be one of ${Object.values(ProtocolCategory)
        .map((c) => c.toLowerCase())
        .join(', ')} (got '${raw}')`,
    );
  }
  return value as ProtocolCategory;
}

export function parseTier(raw: string, field = 'tier'): LiquidityTier {
  const value = raw.trim().toUpperCase();
  if (!(value in LiquidityTier))
    throw badInput(field, `must be one of ${Object.values(LiquidityTier).join(', ')} (got '${raw}')`);
  return value as LiquidityTier;
}

/** The engine inputs a stored day holds. */
export function inputsOf(day: LiquidityDay): ScoreInputs {
  return {
    asOf: day.asOf,
    dataDate: day.dataDate,
    aumUsd: day.aumUsd,
    volumeUsd: day.volumeUsd,
    holders: day.holders,
    topHolderPct: day.topHolderPct,
    redemptionQueueUsd: day.redemptionQueueUsd,
    navDeviationBps: day.navDeviationBps,
    lastAttestationDate: day.lastAttestationDate,
    redemptionFrequencyDays: day.redemptionFrequencyDays,
    noticePeriodDays: day.noticePeriodDays,
    redemptionGates: day.redemptionGates,
    audited: day.audited,
    qualifiedCustodian: day.qualifiedCustodian,
    regulatoryStatus: day.regulatoryStatus,
  };
}

/** The profile facts of a protocol the engine uses, as of now. */
export function termsOf(
  p: Protocol,
): Pick<
  ScoreInputs,
  | 'redemptionFrequencyDays'
  | 'noticePeriodDays'
  | 'redemptionGates'
  | 'audited'
  | 'qualifiedCustodian'
  | 'regulatoryStatus'
> {
  return {
    redemptionFrequencyDays: FREQUENCY_DAYS[p.redemptionFrequency],
    noticePeriodDays: p.noticePeriodDays,
    redemptionGates: p.redemptionGates,
    audited: Boolean(p.auditor),
    qualifiedCustodian: p.qualifiedCustodian,
    regulatoryStatus: p.regulatoryStatus,
  };
}

export interface ProtocolFilter {
  category?: string | null;
  tier?: string | null;
  minScore?: number | null;
  minAum?: number | null;
}

function protocolWhere(filter: ProtocolFilter): FilterQuery<Protocol> {
  const where: FilterQuery<Protocol> & Record<string, unknown> = { active: true };
  if (filter.category) where.category = parseCategory(filter.category);
  if (filter.tier) where.liquidityTier = parseTier(filter.tier);
  if (filter.minScore !== undefined && filter.minScore !== null) {
    if (filter.minScore < 0 || filter.minScore > 100)
      throw badField('minScore', `must be between 0 and 100 (got ${filter.minScore})`);
    where.liquidityScore = { $gte: filter.minScore };
  }
  if (filter.minAum !== undefined && filter.minAum !== null) {
    if (filter.minAum < 0) throw badField('minAum', `must be 0 or more (got ${filter.minAum})`);
    where.aum = { $gte: filter.minAum };
  }
  return where;
}

export async function listProtocols(
  em: EntityManager,
  filter: ProtocolFilter,
  page: Page,
): Promise<{ items: Protocol[]; total: number }> {
  const where = protocolWhere(filter);
  // Listed protocols are only read: plain rows, not hydrated entities (src/db/plain.ts).
  const [items, total] = await Promise.all([
    findPlain(em, Protocol, where, { orderBy: { slug: 'asc' }, limit: page.limit, offset: page.offset }),
    em.count(Protocol, where),
  ]);
  return { items, total };
}

export async function protocolBySlug(em: EntityManager, slug: string): Promise<Protocol | null> {
  const value = slug.trim().toLowerCase();
  // Nothing that is not slug-shaped can be one: no query (PostgreSQL refuses a NUL in a parameter).
  return isSlug(value) ? em.findOne(Protocol, { slug: value }) : null;
}

async function requireProtocol(em: EntityManager, slug: string): Promise<Protocol> {
  const protocol = await protocolBySlug(em, slug);
  if (!protocol) throw notFound('Protocol', slug);
  return protocol;
}

/** The weights and caps to score with: the caller's profile, or the methodology defaults. */
export interface Scoring {
  profileId: string | null;
  weights: Weights;
  caps: PenaltyCaps;
}

export const DEFAULT_SCORING: Scoring = { profileId: null, weights: DEFAULT_WEIGHTS, caps: DEFAULT_CAPS };

export async function scoringFor(
  em: EntityManager,
  principal: Principal,
  profileId: string | null | undefined,
): Promise<Scoring> {
  if (!profileId) return DEFAULT_SCORING;
  // Checked before the query: PostgreSQL rejects a malformed uuid with an error, not an empty result.
  if (!isUuid(profileId))
    throw badField('profileId', `must be a scoring profile id, a UUID (got '${profileId}')`);
  const profile = await em.findOne(ScoringProfile, { id: profileId, accountId: principal.accountId });
  if (!profile) throw notFound('Scoring profile', profileId);
  return { profileId: profile.id, weights: profile.weights, caps: profile.penaltyCaps };
}

export interface ScoreView extends ScoreResult {
  protocol: Protocol;
  asOf: string;
  dataDate: string;
  profileId: string | null;
  inputs: ScoreInputs;
}

/**
 * Profile-weighted results get an audit row the first time they are served, so their audit id
 * resolves like any other; the same id is never written twice.
 */
async function rememberProfileAudits(
  em: EntityManager,
  scoring: Scoring,
  served: Array<{ auditId: string; dayId: number }>,
  now: Date,
): Promise<void> {
  if (!scoring.profileId || served.length === 0) return;
  const rows = [...new Map(served.map((s) => [s.auditId, s])).values()].map((s) => ({
    audit_id: s.auditId,
    day_id: s.dayId,
    profile_id: scoring.profileId,
    weights: JSON.stringify(scoring.weights),
    penalty_caps: JSON.stringify(scoring.caps),
    created_at: now,
  }));
  await knexIn(em)('liquidity_profile_audits').insert(rows).onConflict('audit_id').ignore();
}

function view(protocol: Protocol, day: LiquidityDay, scoring: Scoring): ScoreView {
  const inputs = inputsOf(day);
  const result = scoreProtocol(inputs, scoring.weights, scoring.caps);
  return {
    ...result,
    protocol,
    asOf: day.asOf,
    dataDate: day.dataDate,
    profileId: scoring.profileId,
    inputs,
  };
}

/** The latest stored day of each protocol, in one query. */
export async function latestDays(
  em: EntityManager,
  protocols: Protocol[],
): Promise<Map<string, LiquidityDay>> {
  const scored = protocols.filter((p) => p.scoreAsOf);
  if (scored.length === 0) return new Map();
  const dates = [...new Set(scored.map((p) => p.scoreAsOf!))];
  const days = await em.find(LiquidityDay, {
    protocolId: { $in: scored.map((p) => p.id) },
    asOf: { $in: dates },
  });
  const wanted = new Map(scored.map((p) => [p.id, p.scoreAsOf]));
  return new Map(days.filter((d) => wanted.get(d.protocolId) === d.asOf).map((d) => [d.protocolId, d]));
}

export async function latestScores(
  em: EntityManager,
  scoring: Scoring,
  page: Page,
  now: Date,
): Promise<{ items: ScoreView[]; total: number }> {
  const { items: protocols, total } = await listProtocols(em, {}, page);
  const days = await latestDays(em, protocols);
  const items = protocols.flatMap((p) => {
    const day = days.get(p.id);
    return day ? [{ view: view(p, day, scoring), dayId: day.id }] : [];
  });
  await rememberProfileAudits(
    em,
    scoring,
    items.map((i) => ({ auditId: i.view.auditId, dayId: i.dayId })),
    now,
  );
  return { items: items.map((i) => i.view), total };
}

export async function scoreOf(
  em: EntityManager,
  slug: string,
  scoring: Scoring,
  now: Date,
): Promise<ScoreView | null> {
  const protocol = await protocolBySlug(em, slug);
  if (!protocol) return null;
  const day = (await latestDays(em, [protocol])).get(protocol.id);
  if (!day) return null;
  const result = view(protocol, day, scoring);
  await rememberProfileAudits(em, scoring, [{ auditId: result.auditId, dayId: day.id }], now);
  return result;
}

export interface HistoryView {
  protocol: Protocol;
  profileId: string | null;
  trajectory: Trajectory;
  trend: number;
  points: Array<{ date: string; score: number; tier: string; auditId: string }>;
}

/** The last 30 stored days, oldest first, with the trajectory of that window. */
export async function scoreHistory(
  em: EntityManager,
  slug: string,
  scoring: Scoring,
  now: Date,
): Promise<HistoryView | null> {
  const protocol = await protocolBySlug(em, slug);
  if (!protocol) return null;
  const days = (
    await em.find(
      LiquidityDay,
      { protocolId: protocol.id },
      { orderBy: { asOf: 'desc' }, limit: HISTORY_DAYS },
    )
  ).reverse();
  const points = days.map((d) => {
    if (!scoring.profileId) return { date: d.asOf, score: d.score, tier: d.tier, auditId: d.auditId };
    const r = scoreProtocol(inputsOf(d), scoring.weights, scoring.caps);
    return { date: d.asOf, score: r.score, tier: r.tier, auditId: r.auditId };
  });
  await rememberProfileAudits(
    em,
    scoring,
    points.map((p, i) => ({ auditId: p.auditId, dayId: days[i]!.id })),
    now,
  );
  return { protocol, profileId: scoring.profileId, ...trajectoryOf(points.map((p) => p.score)), points };
}

/**
 * The stored inputs behind an audit id — a stored day's, a served profile result's, or one that
 * late or corrected data superseded — and the result they give.
 */
export async function scoreAudit(em: EntityManager, auditId: string): Promise<ScoreView | null> {
  if (!/^[0-9a-f]{64}$/.test(auditId)) throw badInput('auditId', 'must be 64 lower-case hex characters');
  const day = await em.findOne(LiquidityDay, { auditId });
  if (day) return view(await em.findOneOrFail(Protocol, { id: day.protocolId }), day, DEFAULT_SCORING);
  const audit = await em.findOne(ProfileScoreAudit, { auditId });
  if (audit) {
    const served = await em.findOneOrFail(LiquidityDay, { id: audit.dayId });
    return view(await em.findOneOrFail(Protocol, { id: served.protocolId }), served, {
      profileId: audit.profileId,
      weights: audit.weights,
      caps: audit.penaltyCaps,
    });
  }
  const superseded = await em.findOne(SupersededAudit, { auditId });
  if (!superseded) return null;
  const inputs = superseded.inputs as unknown as ScoreInputs;
  const protocol = await em.findOneOrFail(Protocol, { id: superseded.protocolId });
  return {
    ...scoreProtocol(inputs, superseded.weights, superseded.penaltyCaps),
    protocol,
    asOf: inputs.asOf,
    dataDate: inputs.dataDate,
    profileId: superseded.profileId,
    inputs,
  };
}

export interface BacktestView extends BacktestMeasures {
  lookbackDays: number;
  from: string;
  to: string;
}

export function validateLookback(lookback: number): void {
  if (!Number.isInteger(lookback) || lookback < BACKTEST_MIN || lookback > BACKTEST_MAX) {
    throw badInput('lookback', `must be between ${BACKTEST_MIN} and ${BACKTEST_MAX} days (got ${lookback})`);
  }
}

function shiftDate(date: string, days: number): string {
  return new Date(Date.parse(`${date}T00:00:00Z`) + days * 86_400_000).toISOString().slice(0, 10);
}

export async function backtest(
  em: EntityManager,
  lookback: number,
  deadline: Deadline = NO_DEADLINE,
): Promise<BacktestView> {
  validateLookback(lookback);
  await deadline.checkpoint('the backtest');
  const latest = await em.findOne(LiquidityDay, { asOf: { $ne: '' } }, { orderBy: { asOf: 'desc' } });
  if (!latest) return { lookbackDays: lookback, from: '', to: '', ...backtestMeasures([]) };
  const to = latest.asOf;
  const from = shiftDate(to, -lookback);
  await deadline.checkpoint('the backtest');
  const days = await em.find(LiquidityDay, { asOf: { $in: [from, to] } });
  await deadline.checkpoint('the backtest');
  const byProtocol = new Map<string, { start?: LiquidityDay; end?: LiquidityDay }>();
  for (const d of days) {
    const entry = byProtocol.get(d.protocolId) ?? {};
    if (d.asOf === from) entry.start = d;
    else entry.end = d;
    byProtocol.set(d.protocolId, entry);
  }
  const pick = (d: LiquidityDay) => ({ score: d.score, tier: d.tier, aumUsd: d.aumUsd });
  const pairs = [...byProtocol.values()].flatMap((e) =>
    e.start && e.end ? [{ start: pick(e.start), end: pick(e.end) }] : [],
  );
  return { lookbackDays: lookback, from, to, ...backtestMeasures(pairs) };
}

export interface MarketView {
  category: ProtocolCategory | null;
  asOf: string | null;
  protocolCount: number;
  totalAumUsd: number;
  averageScore: number | null;
  averageYieldPct: number | null;
  tierDistribution: Record<LiquidityTier, number>;
  indices: Array<{ code: IndexCode; name: string; score: number | null }>;
}

export async function market(em: EntityManager, category?: string | null): Promise<MarketView> {
  const where = protocolWhere({ category });
  const protocols = (await findPlain(em, Protocol, where, { orderBy: { slug: 'asc' } })).filter(
    (p) => p.liquidityScore !== null && p.liquidityScore !== undefined,
  );
  const totalAum = protocols.reduce((s, p) => s + p.aum, 0);
  const round = (x: number) => Math.round(x * 100) / 100;
  const tierDistribution = { L1: 0, L2: 0, L3: 0, ILLIQUID: 0 } as Record<LiquidityTier, number>;
  for (const p of protocols) tierDistribution[p.liquidityTier!]++;
  const members = protocols.map((p) => ({
    category: p.category,
    aumUsd: p.aum,
    score: p.liquidityScore!,
    tier: p.liquidityTier!,
    redemption: redemptionComponent(termsOf(p)),
  }));
  const idx = indices(members);
  return {
    category: category ? parseCategory(category) : null,
    asOf: protocols.reduce<string | null>(
      (max, p) => (p.scoreAsOf && (!max || p.scoreAsOf > max) ? p.scoreAsOf : max),
      null,
    ),
    protocolCount: protocols.length,
    totalAumUsd: totalAum,
    averageScore: protocols.length
      ? round(protocols.reduce((s, p) => s + p.liquidityScore!, 0) / protocols.length)
      : null,
    averageYieldPct:
      totalAum > 0 ? round(protocols.reduce((s, p) => s + p.aum * p.yieldPct, 0) / totalAum) : null,
    tierDistribution,
    indices: (Object.keys(idx) as IndexCode[]).map((code) => ({
      code,
      name: INDEX_NAMES[code],
      score: idx[code],
    })),
  };
}

/**
 * Bulk insert of day rows straight through knex (inside the caller's transaction): the ORM's
 * per-entity bookkeeping costs seconds for the demo's 16,800 rows.
 */
export async function insertDays(em: EntityManager, days: Array<Omit<LiquidityDay, 'id'>>): Promise<void> {
  const knex = knexIn(em);
  for (let i = 0; i < days.length; i += 500) {
    const chunk = days.slice(i, i + 500).map((d) => ({
      protocol_id: d.protocolId,
      as_of: d.asOf,
      data_date: d.dataDate,
      aum_usd: d.aumUsd,
      volume_usd: d.volumeUsd,
      holders: d.holders,
      top_holder_pct: d.topHolderPct,
      redemption_queue_usd: d.redemptionQueueUsd,
      nav_deviation_bps: d.navDeviationBps,
      last_attestation_date: d.lastAttestationDate,
      redemption_frequency_days: d.redemptionFrequencyDays,
      notice_period_days: d.noticePeriodDays,
      redemption_gates: d.redemptionGates,
      audited: d.audited,
      qualified_custodian: d.qualifiedCustodian,
      regulatory_status: d.regulatoryStatus,
      score: d.score,
      tier: d.tier,
      audit_id: d.auditId,
    }));
    await knex('liquidity_days').insert(chunk);
  }
}

export { requireProtocol, shiftDate, daysBetween };
