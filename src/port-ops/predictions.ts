import type { EntityManager } from '@mikro-orm/knex';
import { DAY, HOUR, type Clock } from '../kernel/clock.js';
import { badInput, conflict, notFound } from '../kernel/errors.js';
import type { Principal } from '../kernel/principal.js';
import { findOwned, tenant } from './common.js';
import {
  Port,
  PortCall,
  PortCallStatus,
  ServiceOrder,
  ServiceOrderStatus,
  ServiceType,
  Vessel,
  VesselType,
} from './entities.js';
import { periodKey, Period } from './analytics.js';
import { HOURS, mean, quantile, round, sortNumbers, stdev } from './stats.js';
import { parseLocode } from './validation.js';

/*
 * Predictions are empirical, from the account's own history; see README "Predictions" for the
 * method. Every number comes with its spread (p10/p50/p90), the sample it came from, and the
 * error the same method made on the last 90 days when trained on what came before.
 */

export const PORT_CALL_METHOD = { name: 'empirical-quantiles', version: '1.0.0' } as const;
export const BUNKER_METHOD = { name: 'seasonal-naive-mean', version: '1.0.0' } as const;

/** Fewest past calls a group needs before its quantiles are used instead of the next fall-back. */
export const MIN_SAMPLE = 20;
export const HOLDOUT_DAYS = 90;

export type Basis = 'PORT_VESSEL_TYPE_SEASON' | 'PORT_VESSEL_TYPE' | 'PORT' | 'GLOBAL';

/** Meteorological seasons (northern hemisphere months): DJF, MAM, JJA, SON. */
export function seasonOf(date: Date): string {
  return ['DJF', 'DJF', 'MAM', 'MAM', 'MAM', 'JJA', 'JJA', 'JJA', 'SON', 'SON', 'SON', 'DJF'][
    date.getUTCMonth()
  ]!;
}

interface Sample {
  portId: string;
  vesselType: VesselType;
  season: string;
  ata: Date;
  waitHours: number;
  berthHours: number;
  inPortHours: number;
}

interface Distributions {
  basis: Basis;
  samples: Sample[];
}

/** Finds the narrowest group with enough history: port × type × season → port × type → port → global. */
function choose(history: Sample[], portId: string, vesselType: VesselType, season: string): Distributions {
  const levels: Array<[Basis, (s: Sample) => boolean]> = [
    [
      'PORT_VESSEL_TYPE_SEASON',
      (s) => s.portId === portId && s.vesselType === vesselType && s.season === season,
    ],
    ['PORT_VESSEL_TYPE', (s) => s.portId === portId && s.vesselType === vesselType],
    ['PORT', (s) => s.portId === portId],
  ];
  for (const [basis, keep] of levels) {
    const samples = history.filter(keep);
    if (samples.length >= MIN_SAMPLE) return { basis, samples };
  }
  return { basis: 'GLOBAL', samples: history };
}

export interface Quantiles {
  p10: number;
  p50: number;
  p90: number;
}

function quantiles(values: number[]): Quantiles {
  const sorted = sortNumbers(values);
  return {
    p10: round(quantile(sorted, 0.1)),
    p50: round(quantile(sorted, 0.5)),
    p90: round(quantile(sorted, 0.9)),
  };
}

async function loadHistory(em: EntityManager, principal: Principal, before: Date): Promise<Sample[]> {
  const [calls, vessels] = await Promise.all([
    em.find(
      PortCall,
      { ...tenant(principal), status: PortCallStatus.DEPARTED, atd: { $lt: before } },
      { fields: ['portId', 'vesselId', 'ata', 'atb', 'atd'] },
    ),
    em.find(Vessel, {}, { fields: ['id', 'type'] }),
  ]);
  const types = new Map(vessels.map((v) => [v.id, v.type]));
  return calls
    .filter((c) => c.ata && c.atb && c.atd)
    .map((c) => ({
      portId: c.portId,
      vesselType: types.get(c.vesselId)!,
      season: seasonOf(c.ata!),
      ata: c.ata!,
      waitHours: HOURS(c.atb!.getTime() - c.ata!.getTime()),
      berthHours: HOURS(c.atd!.getTime() - c.atb!.getTime()),
      inPortHours: HOURS(c.atd!.getTime() - c.ata!.getTime()),
    }));
}

export interface PortCallPrediction {
  portCall: PortCall;
  method: string;
  methodVersion: string;
  basis: Basis;
  sampleSize: number;
  /** The time the predictions count from: ATA when arrived, ATB when berthed, else ETA. */
  anchor: Date;
  anchorKind: 'ETA' | 'ATA' | 'ATB';
  berthWaitHours: Quantiles | null;
  timeInPortHours: Quantiles | null;
  berthAt: { p10: Date; p50: Date; p90: Date };
  departureAt: { p10: Date; p50: Date; p90: Date };
  evaluation: {
    holdoutDays: number;
    evaluatedCalls: number;
    berthWaitMaeHours: number | null;
    timeInPortMaeHours: number | null;
  };
}

const shift = (anchor: Date, q: Quantiles) => ({
  p10: new Date(anchor.getTime() + q.p10 * HOUR),
  p50: new Date(anchor.getTime() + q.p50 * HOUR),
  p90: new Date(anchor.getTime() + q.p90 * HOUR),
});

export async function predictPortCall(
  em: EntityManager,
  clock: Clock,
  principal: Principal,
  portCallId: string,
): Promise<PortCallPrediction> {
  const call = await findOwned(em, PortCall, 'PortCall', principal, portCallId);
  if (call.status === PortCallStatus.DEPARTED || call.status === PortCallStatus.CANCELLED) {
    throw conflict(`Port call ${call.id} is ${call.status}; there is nothing left to predict`, {
      status: call.status,
    });
  }
  const now = clock.now();
  const [history, vessel] = await Promise.all([
    loadHistory(em, principal, now),
    em.findOneOrFail(Vessel, call.vesselId),
  ]);
  if (history.length === 0)
    throw conflict('No departed port calls in this account yet: predictions need history', { sampleSize: 0 });

  const anchorKind =
    call.status === PortCallStatus.BERTHED ? 'ATB' : call.status === PortCallStatus.ARRIVED ? 'ATA' : 'ETA';
  const anchor = anchorKind === 'ATB' ? call.atb! : anchorKind === 'ATA' ? call.ata! : call.eta;
  const chosen = choose(history, call.portId, vessel.type, seasonOf(anchor));
  const wait = quantiles(chosen.samples.map((s) => s.waitHours));
  const inPort = quantiles(chosen.samples.map((s) => s.inPortHours));
  const berth = quantiles(chosen.samples.map((s) => s.berthHours));
  const berthed = anchorKind === 'ATB';
  return {
    portCall: call,
    method: PORT_CALL_METHOD.name,
    methodVersion: PORT_CALL_METHOD.version,
    basis: chosen.basis,
    sampleSize: chosen.samples.length,
    anchor,
    anchorKind,
    berthWaitHours: berthed ? null : wait,
    timeInPortHours: berthed ? null : inPort,
    berthAt: berthed ? { p10: anchor, p50: anchor, p90: anchor } : shift(anchor, wait),
    departureAt: shift(anchor, berthed ? berth : inPort),
    evaluation: evaluate(history, now),
  };
}

/** Trains on calls that departed before the hold-out window and scores p50 on those that arrived inside it. */
function evaluate(history: Sample[], now: Date): PortCallPrediction['evaluation'] {
  const cut = now.getTime() - HOLDOUT_DAYS * DAY;
  const train = history.filter((s) => s.ata.getTime() + s.inPortHours * HOUR < cut);
  const test = history.filter((s) => s.ata.getTime() >= cut);
  if (train.length === 0 || test.length === 0)
    return {
      holdoutDays: HOLDOUT_DAYS,
      evaluatedCalls: 0,
      berthWaitMaeHours: null,
      timeInPortMaeHours: null,
    };
  const memo = new Map<string, { wait: number; inPort: number }>();
  let waitError = 0;
  let inPortError = 0;
  for (const s of test) {
    const key = `${s.portId}|${s.vesselType}|${s.season}`;
    let p50 = memo.get(key);
    if (!p50) {
      const chosen = choose(train, s.portId, s.vesselType, s.season).samples;
      p50 = {
        wait: quantile(sortNumbers(chosen.map((c) => c.waitHours)), 0.5),
        inPort: quantile(sortNumbers(chosen.map((c) => c.inPortHours)), 0.5),
      };
      memo.set(key, p50);
    }
    waitError += Math.abs(s.waitHours - p50.wait);
    inPortError += Math.abs(s.inPortHours - p50.inPort);
  }
  return {
    holdoutDays: HOLDOUT_DAYS,
    evaluatedCalls: test.length,
    berthWaitMaeHours: round(waitError / test.length),
    timeInPortMaeHours: round(inPortError / test.length),
  };
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
function forecastFrom(
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
  em: EntityManager,
  clock: Clock,
  principal: Principal,
  input: { portLocode: string; fuelType?: string | null; months?: number | null },
): Promise<BunkerForecast[]> {
  const locode = parseLocode(input.portLocode);
  const horizon = input.months ?? 3;
  if (!Number.isInteger(horizon) || horizon < 1 || horizon > 12)
    throw badInput('months', `must be from 1 to 12 (got ${horizon})`);
  const port = await em.findOne(Port, { locode });
  if (!port) throw notFound('Port', locode);
  const now = clock.now();
  const since = monthStart(now, -36);
  const rows = await em.find(ServiceOrder, {
    ...tenant(principal),
    serviceType: ServiceType.BUNKERING,
    status: ServiceOrderStatus.COMPLETED,
    completedAt: { $gte: since, $lt: monthStart(now) },
  });
  const atPort = new Set(
    (
      await em.find(
        PortCall,
        { ...tenant(principal), portId: port.id, eta: { $gte: new Date(since.getTime() - 60 * DAY) } },
        { fields: ['id'] },
      )
    ).map((c) => c.id),
  );
  const series = new Map<string, Map<string, number>>();
  for (const order of rows) {
    if (!atPort.has(order.portCallId)) continue;
    const { fuelType, unit, quantity } = order.details as {
      fuelType: string;
      unit: string;
      quantity: number;
    };
    if (input.fuelType && fuelType !== input.fuelType) continue;
    const key = `${fuelType}|${unit}`;
    const months = series.get(key) ?? new Map<string, number>();
    const month = periodKey(order.completedAt!, Period.MONTH)!;
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
