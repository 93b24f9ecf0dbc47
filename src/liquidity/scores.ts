import type { EntityManager } from '@mikro-orm/knex';
import { knexIn } from '../db/knex.js';
import { NO_DEADLINE, type Deadline } from '../kernel/deadline.js';
import { badInput, notFound } from '../kernel/errors.js';
import { isUuid } from '../kernel/ids.js';
import type { Principal } from '../kernel/principal.js';
import type { Page } from '../gateway/schema/connection.js';
import { LiquidityDay, ProfileScoreAudit, Protocol, ScoringProfile, SupersededAudit } from './entities.js';
import { BACKTEST_MAX, type MarketView, type Published } from './read-model.js';
import { badField } from './fields.js';
import { inputsOf } from './days.js';
import { listProtocols, parseCategory, publishedProtocol } from './protocol-queries.js';
import {
  DEFAULT_CAPS,
  DEFAULT_WEIGHTS,
  scoreProtocol,
  type PenaltyCaps,
  type ScoreInputs,
  type ScoreResult,
  type Weights,
} from './engine/score.js';
import { backtestMeasures, trajectoryOf, type BacktestMeasures, type Trajectory } from './engine/series.js';

/**
 * The score reads of the liquidity domain; resolvers and REST shims only adapt. Latest scores are
 * the stored default-methodology results; under a scoring profile they are recomputed from the
 * same stored inputs with the profile's weights and caps.
 */

export const BACKTEST_MIN = 7;

/** The weights and caps to score with: the caller's profile, or the methodology defaults. */
export interface Scoring {
  profileId: string | null;
  weights: Weights;
  caps: PenaltyCaps;
}

export const DEFAULT_SCORING: Scoring = { profileId: null, weights: DEFAULT_WEIGHTS, caps: DEFAULT_CAPS };

export async function scoringFor(
  emWhenNeeded: EmWhenNeeded,
  principal: Principal,
  profileId: string | null | undefined,
): Promise<Scoring> {
  if (!profileId) return DEFAULT_SCORING;
  // Checked before the query: PostgreSQL rejects a malformed uuid with an error, not an empty result.
  if (!isUuid(profileId))
    throw badField('profileId', `must be a scoring profile id, a UUID (got '${profileId}')`);
  const profile = await emWhenNeeded().findOne(ScoringProfile, {
    id: profileId,
    accountId: principal.accountId,
  });
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
 * The entity manager of a read that may need one: only scoring-profile work reads or writes the
 * database, so the methodology's own scores (most reads) never fork one.
 */
export type EmWhenNeeded = () => EntityManager;

/**
 * Profile-weighted results get an audit row the first time they are served, so their audit id
 * resolves like any other; the same id is never written twice.
 */
async function rememberProfileAudits(
  emWhenNeeded: EmWhenNeeded,
  scoring: Scoring,
  served: Array<{ auditId: string; dayId: number }>,
  now: Date,
): Promise<void> {
  if (!scoring.profileId || served.length === 0) return;
  const em = emWhenNeeded();
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

/** The latest score of a published protocol under `scoring`, computed once per snapshot and scoring. */
function latestView(state: Published, protocol: Protocol, scoring: Scoring): ScoreView | null {
  const day = state.latest.get(protocol.id);
  if (!day) return null;
  const key = scoring.profileId
    ? `latest:${scoring.profileId}:${JSON.stringify(scoring.weights)}:${JSON.stringify(scoring.caps)}`
    : 'latest';
  const views = state.derived(key, () => new Map<string, ScoreView>());
  let v = views.get(protocol.id);
  if (!v) views.set(protocol.id, (v = view(protocol, day, scoring)));
  return v;
}

export async function latestScores(
  em: EmWhenNeeded,
  state: Published,
  scoring: Scoring,
  page: Page,
  now: Date,
): Promise<{ items: ScoreView[]; total: number }> {
  const { items: protocols, total } = listProtocols(state, {}, page);
  const items = protocols.flatMap((p) => latestView(state, p, scoring) ?? []);
  await rememberProfileAudits(
    em,
    scoring,
    items.map((v) => ({ auditId: v.auditId, dayId: state.latest.get(v.protocol.id)!.id })),
    now,
  );
  return { items, total };
}

export async function scoreOf(
  em: EmWhenNeeded,
  state: Published,
  slug: string,
  scoring: Scoring,
  now: Date,
): Promise<ScoreView | null> {
  const protocol = publishedProtocol(state, slug);
  const result = protocol && latestView(state, protocol, scoring);
  if (!result) return null;
  await rememberProfileAudits(
    em,
    scoring,
    [{ auditId: result.auditId, dayId: state.latest.get(protocol.id)!.id }],
    now,
  );
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
  em: EmWhenNeeded,
  state: Published,
  slug: string,
  scoring: Scoring,
  now: Date,
): Promise<HistoryView | null> {
  const protocol = publishedProtocol(state, slug);
  if (!protocol) return null;
  const days = state.history.get(protocol.id) ?? [];
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

export async function backtest(
  state: Published,
  lookback: number,
  deadline: Deadline = NO_DEADLINE,
): Promise<BacktestView> {
  validateLookback(lookback);
  // From memory, one pass: the only point where the operation's deadline can have passed is before it.
  await deadline.checkpoint('the backtest');
  const { from, to, pairs } = state.backtestPairs(lookback);
  return { lookbackDays: lookback, from, to, ...backtestMeasures(pairs) };
}

export function market(state: Published, category?: string | null): MarketView {
  return state.markets.get(category ? parseCategory(category) : null)!;
}
