import type { EntityManager } from '@mikro-orm/knex';
import { DAY, HOUR } from '../kernel/clock.js';
import { findPlain } from '../db/plain.js';
import { NO_DEADLINE, type Deadline } from '../kernel/deadline.js';
import { badInput, conflict } from '../kernel/errors.js';
import type { Principal } from '../kernel/principal.js';
import { findOwned, tenant } from './common.js';
import { PortCall, PortCallStatus, Vessel, VesselType } from './entities.js';
import { completedBunkering, periodKey, Period } from './analytics.js';
import { portByLocode } from './reference-data.js';
import { HOURS, mean, quantile, round, sortNumbers, stdev } from './stats.js';
import type { ServiceDeps } from '../kernel/deps.js';

/*
 * Predictions are empirical, from the account's own history; see src/port-ops/README.md, "Predictions".
 * Every number comes with its spread (p10/p50/p90), the sample it came from, and the error the
 * same method made, from the same kind of anchor, on the last 90 days when trained on what
 * came before.
 */

export const PORT_CALL_METHOD = { name: 'empirical-quantiles', version: '2.0.0' } as const;
export const BUNKER_METHOD = { name: 'seasonal-naive-mean', version: '1.0.0' } as const;

/** Fewest past calls a group needs before its quantiles are used instead of the next fall-back. */
export const MIN_SAMPLE = 20;
/** Fewest past calls that outlasted the elapsed time for the all-calls group to be conditioned on them. */
const MIN_CONDITIONED = 5;
export const HOLDOUT_DAYS = 90;

export type Basis = 'PORT_VESSEL_TYPE_SEASON' | 'PORT_VESSEL_TYPE' | 'PORT' | 'GLOBAL';
export type AnchorKind = 'ETA' | 'ATA' | 'ATB';
/**
 * NONE: nothing has elapsed since the anchor (a future ETA). ELAPSED: only past calls that were
 * still in the call's present state after as long as it has been there. MEMORYLESS: too few past
 * calls lasted that long, so the remaining time is taken as the group's whole distribution
 * counted from now.
 */
export type Conditioning = 'NONE' | 'ELAPSED' | 'MEMORYLESS';

/** Meteorological seasons (northern hemisphere months): DJF, MAM, JJA, SON. */
export function seasonOf(date: Date): string {
  return ['DJF', 'DJF', 'MAM', 'MAM', 'MAM', 'JJA', 'JJA', 'JJA', 'SON', 'SON', 'SON', 'DJF'][
    date.getUTCMonth()
  ]!;
}

/** One departed call, in hours from each possible anchor. */
export interface Sample {
  portId: string;
  vesselType: VesselType;
  eta: Date;
  ata: Date;
  atb: Date;
  atd: Date;
}

interface AnchorSpec {
  at: (s: Pick<Sample, 'eta' | 'ata' | 'atb'>) => Date;
  /** How long a past call stayed in the state a call at this anchor is in (SCHEDULED, ARRIVED, BERTHED). */
  stay: (s: Sample) => Date;
}

/** From which recorded time each anchor counts, and which time ends the state it anchors. */
const ANCHORS: Readonly<Record<AnchorKind, AnchorSpec>> = {
  ETA: { at: (s) => s.eta, stay: (s) => s.ata },
  ATA: { at: (s) => s.ata, stay: (s) => s.atb },
  ATB: { at: (s) => s.atb, stay: (s) => s.atd },
};

const hoursFrom = (from: Date, to: Date) => HOURS(to.getTime() - from.getTime());

function groupLevels(portId: string, vesselType: VesselType, season: string, kind: AnchorKind) {
  const levels: Array<[Basis, (s: Sample) => boolean]> = [
    [
      'PORT_VESSEL_TYPE_SEASON',
      (s) => s.portId === portId && s.vesselType === vesselType && seasonOf(ANCHORS[kind].at(s)) === season,
    ],
    ['PORT_VESSEL_TYPE', (s) => s.portId === portId && s.vesselType === vesselType],
    ['PORT', (s) => s.portId === portId],
    ['GLOBAL', () => true],
  ];
  return levels;
}

interface Chosen {
  basis: Basis;
  samples: Sample[];
  conditioning: Conditioning;
}

/**
 * The narrowest group (port × vessel type × season → port × vessel type → port → all calls)
 * with at least MIN_SAMPLE calls that were still in the call's state after `elapsedHours`.
 * If none has that many: all calls that outlasted it, when at least MIN_CONDITIONED did;
 * otherwise the narrowest group by size alone, counted from now (MEMORYLESS).
 */
function chooseSamples(
  history: readonly Sample[],
  target: { portId: string; vesselType: VesselType; season: string },
  kind: AnchorKind,
  elapsedHours: number,
): Chosen {
  const levels = groupLevels(target.portId, target.vesselType, target.season, kind);
  const spec = ANCHORS[kind];
  const outlasted = (s: Sample) => hoursFrom(spec.at(s), spec.stay(s)) > elapsedHours;
  const conditioning: Conditioning = elapsedHours > 0 ? 'ELAPSED' : 'NONE';
  for (const [basis, keep] of levels) {
    const samples = history.filter((s) => keep(s) && (conditioning === 'NONE' || outlasted(s)));
    if (samples.length >= MIN_SAMPLE) return { basis, samples, conditioning };
  }
  const longer = history.filter(outlasted);
  if (conditioning === 'ELAPSED' && longer.length >= MIN_CONDITIONED)
    return { basis: 'GLOBAL', samples: longer, conditioning };
  // GLOBAL (every call) always qualifies, so `find` always finds a level.
  const [basis, keep] = levels.find(
    ([level, inGroup]) => level === 'GLOBAL' || history.filter(inGroup).length >= MIN_SAMPLE,
  )!;
  return {
    basis,
    samples: history.filter(keep),
    conditioning: conditioning === 'NONE' ? 'NONE' : 'MEMORYLESS',
  };
}

export interface Quantiles {
  p10: number;
  p50: number;
  p90: number;
}

export interface TimeQuantiles {
  p10: Date;
  p50: Date;
  p90: Date;
}

function quantilesOf(values: number[]): Quantiles {
  const sorted = sortNumbers(values);
  return { p10: quantile(sorted, 0.1), p50: quantile(sorted, 0.5), p90: quantile(sorted, 0.9) };
}

export interface PortCallPrediction {
  portCall: PortCall;
  method: string;
  methodVersion: string;
  basis: Basis;
  sampleSize: number;
  /** The time the predictions count from: ATA when arrived, ATB when berthed, else ETA. */
  anchor: Date;
  anchorKind: AnchorKind;
  /** Hours from the anchor to now (negative while the ETA is ahead). */
  elapsedHours: number;
  conditioning: Conditioning;
  /** Hours from the anchor to berthing; null once berthed. */
  berthHours: Quantiles | null;
  /** Hours from the anchor to departure. */
  departureHours: Quantiles;
  berthAt: TimeQuantiles;
  departureAt: TimeQuantiles;
  evaluation: Evaluation;
}

export interface Evaluation {
  holdoutDays: number;
  anchorKind: AnchorKind;
  evaluatedCalls: number;
  berthMaeHours: number | null;
  departureMaeHours: number | null;
  /** Share of held-out calls whose actual departure fell inside the p10–p90 interval. */
  departureCoverage: number | null;
}

/** What is known of the call being predicted. */
export interface PredictionTarget {
  status: PortCallStatus;
  portId: string;
  vesselType: VesselType;
  eta: Date;
  ata?: Date | null;
  atb?: Date | null;
}

function anchorOf(target: PredictionTarget): { kind: AnchorKind; at: Date } {
  if (target.status === PortCallStatus.BERTHED) return { kind: 'ATB', at: target.atb! };
  if (target.status === PortCallStatus.ARRIVED) return { kind: 'ATA', at: target.ata! };
  return { kind: 'ETA', at: target.eta };
}

/**
 * Quantiles of hours from the anchor to berthing and to departure. A predicted time before now
 * is reported as now: the call is still waiting for that event, so it cannot lie in the past.
 */
export function predictFromHistory(
  history: readonly Sample[],
  target: PredictionTarget,
  now: Date,
): Omit<PortCallPrediction, 'portCall' | 'evaluation'> {
  const anchor = anchorOf(target);
  const elapsedHours = hoursFrom(anchor.at, now);
  const chosen = chooseSamples(
    history,
    { portId: target.portId, vesselType: target.vesselType, season: seasonOf(anchor.at) },
    anchor.kind,
    elapsedHours,
  );
  const from = ANCHORS[anchor.kind].at;
  // MEMORYLESS counts the remaining time from now rather than from the anchor.
  const offset = chosen.conditioning === 'MEMORYLESS' ? elapsedHours : 0;
  const toTimes = (q: Quantiles): { hours: Quantiles; at: TimeQuantiles } => {
    const hours = {} as Quantiles;
    const at = {} as TimeQuantiles;
    for (const key of ['p10', 'p50', 'p90'] as const) {
      const time = Math.max(anchor.at.getTime() + round(q[key] + offset) * HOUR, now.getTime());
      at[key] = new Date(time);
      hours[key] = round(hoursFrom(anchor.at, at[key]));
    }
    return { hours, at };
  };
  const departure = toTimes(quantilesOf(chosen.samples.map((s) => hoursFrom(from(s), s.atd))));
  const berth =
    anchor.kind === 'ATB' ? null : toTimes(quantilesOf(chosen.samples.map((s) => hoursFrom(from(s), s.atb))));
  return {
    method: PORT_CALL_METHOD.name,
    methodVersion: PORT_CALL_METHOD.version,
    basis: chosen.basis,
    sampleSize: chosen.samples.length,
    anchor: anchor.at,
    anchorKind: anchor.kind,
    elapsedHours: round(elapsedHours),
    conditioning: chosen.conditioning,
    berthHours: berth?.hours ?? null,
    departureHours: departure.hours,
    berthAt: berth?.at ?? { p10: anchor.at, p50: anchor.at, p90: anchor.at },
    departureAt: departure.at,
  };
}

/**
 * The method's error from one kind of anchor: trained on calls that departed before the
 * hold-out window, it predicts (at the anchor moment, nothing elapsed) each call that arrived
 * inside the window; scored by the p50's mean absolute error and the p10–p90 coverage.
 */
export function evaluateHoldout(history: readonly Sample[], now: Date, kind: AnchorKind): Evaluation {
  const cut = now.getTime() - HOLDOUT_DAYS * DAY;
  const train = history.filter((s) => s.atd.getTime() < cut);
  const test = history.filter((s) => s.ata.getTime() >= cut);
  const empty = {
    holdoutDays: HOLDOUT_DAYS,
    anchorKind: kind,
    evaluatedCalls: 0,
    berthMaeHours: null,
    departureMaeHours: null,
    departureCoverage: null,
  };
  if (train.length === 0 || test.length === 0) return empty;
  const from = ANCHORS[kind].at;
  const memo = new Map<string, { berth: Quantiles; departure: Quantiles }>();
  let berthError = 0;
  let departureError = 0;
  let covered = 0;
  for (const s of test) {
    const season = seasonOf(from(s));
    const key = `${s.portId}|${s.vesselType}|${season}`;
    let q = memo.get(key);
    if (!q) {
      const { samples } = chooseSamples(
        train,
        { portId: s.portId, vesselType: s.vesselType, season },
        kind,
        0,
      );
      q = {
        berth: quantilesOf(samples.map((c) => hoursFrom(from(c), c.atb))),
        departure: quantilesOf(samples.map((c) => hoursFrom(from(c), c.atd))),
      };
      memo.set(key, q);
    }
    const berth = hoursFrom(from(s), s.atb);
    const departure = hoursFrom(from(s), s.atd);
    berthError += Math.abs(berth - q.berth.p50);
    departureError += Math.abs(departure - q.departure.p50);
    if (departure >= q.departure.p10 && departure <= q.departure.p90) covered += 1;
  }
  return {
    ...empty,
    evaluatedCalls: test.length,
    berthMaeHours: kind === 'ATB' ? null : round(berthError / test.length),
    departureMaeHours: round(departureError / test.length),
    departureCoverage: round(covered / test.length, 3),
  };
}

/** The account's departed calls before a moment; a request may share one load between predictions. */
export type HistorySource = (before: Date) => Promise<Sample[]>;

export async function loadHistory(em: EntityManager, principal: Principal, before: Date): Promise<Sample[]> {
  // Raw column rows: hydrating every departed call as an entity, or even mapping it to property
  // names, was most of a prediction's time and one long stretch of the event loop.
  const [calls, vessels] = await Promise.all([
    em
      .createQueryBuilder(PortCall)
      .select(['portId', 'vesselId', 'eta', 'ata', 'atb', 'atd'])
      .where({ ...tenant(principal), status: PortCallStatus.DEPARTED, atd: { $lt: before } })
      .execute<HistoryRow[]>('all', false),
    findPlain(em, Vessel, {}, { fields: ['id', 'type'] }),
  ]);
  const types = new Map(vessels.map((v) => [v.id, v.type]));
  const samples: Sample[] = [];
  for (const c of calls) {
    if (c.ata === null || c.atb === null || c.atd === null) continue;
    // SQLite gives epoch milliseconds, PostgreSQL Date objects: both construct the same Date.
    samples.push({
      portId: c.port_id,
      vesselType: types.get(c.vessel_id)!,
      eta: new Date(c.eta),
      ata: new Date(c.ata),
      atb: new Date(c.atb),
      atd: new Date(c.atd),
    });
  }
  return samples;
}

interface HistoryRow {
  port_id: string;
  vessel_id: string;
  eta: number | Date;
  ata: number | Date | null;
  atb: number | Date | null;
  atd: number | Date | null;
}

export async function predictPortCall(
  { em, clock }: Pick<ServiceDeps, 'em' | 'clock'>,
  principal: Principal,
  portCallId: string,
  deadline: Deadline = NO_DEADLINE,
  history: HistorySource = (before) => loadHistory(em, principal, before),
): Promise<PortCallPrediction> {
  await deadline.checkpoint('the prediction');
  const call = await findOwned(em, PortCall, 'PortCall', principal, portCallId);
  if (call.status === PortCallStatus.DEPARTED || call.status === PortCallStatus.CANCELLED) {
    throw conflict(`Port call ${call.id} is ${call.status}; there is nothing left to predict`, {
      status: call.status,
    });
  }
  const now = clock.now();
  const vessel = await em.findOneOrFail(Vessel, call.vesselId);
  await deadline.checkpoint('the prediction history');
  const samples = await history(now);
  if (samples.length === 0)
    throw conflict('No departed port calls in this account yet: predictions need history', { sampleSize: 0 });
  await deadline.checkpoint('the prediction');
  const prediction = predictFromHistory(samples, { ...call, vesselType: vessel.type }, now);
  await deadline.checkpoint('the prediction evaluation');
  return { portCall: call, ...prediction, evaluation: evaluateHoldout(samples, now, prediction.anchorKind) };
}

// ---------------------------------------------------------------- bunker demand

export interface BunkerForecastMonth {
  month: string;
  p10: number;
  p50: number;
  p90: number;
}

export interface BunkerForecast {
  portLocode: string;
  fuelType: string;
  unit: string;
  method: string;
  methodVersion: string;
  historyMonths: number;
  months: BunkerForecastMonth[];
  /** Mean absolute error of the p50 over the last 3 full months, forecast from the data before them. */
  maeQuantity: number | null;
  evaluatedMonths: number;
}

const LEVEL_MONTHS = 6;

function monthStart(date: Date, offset = 0): Date {
  return new Date(Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + offset, 1));
}

/**
 * Point: mean of the last 6 full months × seasonal index (that calendar month a year earlier ÷
 * the mean of that year's 12 months; 1 when there is no such year). Interval: p50 ± 1.2816 × the
 * standard deviation of the last 12 monthly volumes (a normal 80 % band), floored at 0.
 */
export function forecastFrom(
  series: Map<string, number>,
  firstTarget: Date,
  horizon: number,
): BunkerForecastMonth[] {
  const at = (d: Date) => series.get(periodKey(d, Period.MONTH)!) ?? 0;
  const level = mean(Array.from({ length: LEVEL_MONTHS }, (_, i) => at(monthStart(firstTarget, -1 - i))));
  const last12 = Array.from({ length: 12 }, (_, i) => at(monthStart(firstTarget, -1 - i)));
  const spread = 1.2816 * stdev(last12);
  return Array.from({ length: horizon }, (_, h) => {
    const target = monthStart(firstTarget, h);
    const yearAgo = Array.from({ length: 12 }, (_, i) => at(monthStart(target, -12 - 5 + i)));
    const yearMean = mean(yearAgo);
    const index = yearMean > 0 ? at(monthStart(target, -12)) / yearMean : 1;
    const p50 = level * (Number.isFinite(index) && index > 0 ? index : 1);
    return {
      month: periodKey(target, Period.MONTH)!,
      p10: round(Math.max(0, p50 - spread), 0),
      p50: round(p50, 0),
      p90: round(p50 + spread, 0),
    };
  });
}

export async function bunkerDemandForecast(
  { em, clock }: Pick<ServiceDeps, 'em' | 'clock'>,
  principal: Principal,
  input: { portLocode: string; fuelType?: string | null; months?: number | null },
  deadline: Deadline = NO_DEADLINE,
): Promise<BunkerForecast[]> {
  const horizon = input.months ?? 3;
  if (!Number.isInteger(horizon) || horizon < 1 || horizon > 12)
    throw badInput('months', `must be from 1 to 12 (got ${horizon})`);
  await deadline.checkpoint('the bunker demand forecast');
  const port = await portByLocode(em, input.portLocode);
  const locode = port.locode;
  const now = clock.now();
  const since = monthStart(now, -36);
  const rows = await completedBunkering(em, principal, since, monthStart(now));
  const atPort = new Set(
    (
      await findPlain(
        em,
        PortCall,
        { ...tenant(principal), portId: port.id, eta: { $gte: new Date(since.getTime() - 60 * DAY) } },
        { fields: ['id'] },
      )
    ).map((c) => c.id),
  );
  await deadline.checkpoint('the bunker demand forecast');
  const series = new Map<string, Map<string, number>>();
  for (const order of rows) {
    if (!atPort.has(order.portCallId)) continue;
    const { fuelType, unit, quantity } = order;
    if (input.fuelType && fuelType !== input.fuelType) continue;
    const key = `${fuelType}|${unit}`;
    const months = series.get(key) ?? new Map<string, number>();
    const month = periodKey(order.completedAt, Period.MONTH)!;
    months.set(month, (months.get(month) ?? 0) + quantity);
    series.set(key, months);
  }
  const firstTarget = monthStart(now);
  return [...series.entries()]
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([key, months]) => {
      const [fuelType, unit] = key.split('|') as [string, string];
      const evaluationStart = monthStart(now, -3);
      const backtest = forecastFrom(months, evaluationStart, 3);
      const errors = backtest.map((m) => Math.abs((months.get(m.month) ?? 0) - m.p50));
      const first = [...months.keys()].sort()[0]!;
      return {
        portLocode: locode,
        fuelType,
        unit,
        method: BUNKER_METHOD.name,
        methodVersion: BUNKER_METHOD.version,
        historyMonths: monthsBetween(first, periodKey(monthStart(now, -1), Period.MONTH)!) + 1,
        months: forecastFrom(months, firstTarget, horizon),
        maeQuantity: round(mean(errors), 0),
        evaluatedMonths: errors.length,
      };
    });
}

function monthsBetween(a: string, b: string): number {
  const [ay, am] = a.split('-').map(Number) as [number, number];
  const [by, bm] = b.split('-').map(Number) as [number, number];
  return (by - ay) * 12 + (bm - am);
}
