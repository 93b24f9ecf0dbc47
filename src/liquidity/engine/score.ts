import { hash } from 'node:crypto';
import { Lru } from '../../kernel/lru.js';

/**
 * Liquidity scoring, methodology 1.7. Pure functions: no database, no clock — the same inputs,
 * weights and caps always give the same score and the same audit id. METHODOLOGY.md publishes
 * every formula and constant below; keep the two in step.
 */
export const METHODOLOGY_VERSION = '1.7';

export const COMPONENTS = ['aum', 'redemption', 'volume', 'issuer', 'jurisdiction'] as const;
export type ComponentName = (typeof COMPONENTS)[number];
export type Weights = Record<ComponentName, number>;

/** Single words, so GraphQL (camelCase) and REST (snake_case) spell the cap fields alike. */
export const PENALTIES = ['concentration', 'deviation', 'queue', 'staleness', 'attestation'] as const;
export type PenaltyName = (typeof PENALTIES)[number];
export type PenaltyCaps = Record<PenaltyName, number>;

export type RegulatoryStatus = 'REGISTERED' | 'EXEMPT' | 'PENDING' | 'UNREGULATED';
export type Tier = 'L1' | 'L2' | 'L3' | 'ILLIQUID';
export type ConfidenceLevel = 'HIGH' | 'MEDIUM' | 'LOW';

export const DEFAULT_WEIGHTS: Weights = {
  aum: 0.3,
  redemption: 0.25,
  volume: 0.2,
  issuer: 0.15,
  jurisdiction: 0.1,
};
export const DEFAULT_CAPS: PenaltyCaps = {
  concentration: 15,
  deviation: 15,
  queue: 20,
  staleness: 20,
  attestation: 10,
};
/** A profile may set each cap between 0 and this. */
export const MAX_PENALTY_CAP = 50;

/** Lowest score of each tier; below the L3 line a protocol is ILLIQUID. */
export const TIER_THRESHOLDS: ReadonlyArray<[Tier, number]> = [
  ['L1', 75],
  ['L2', 55],
  ['L3', 35],
];

export const REGULATORY_POINTS: Record<RegulatoryStatus, number> = {
  REGISTERED: 100,
  EXEMPT: 80,
  PENDING: 50,
  UNREGULATED: 20,
};

/** The market metrics a protocol reports for one day. Dates are `YYYY-MM-DD` (UTC days). Null = not reported. */
export interface DailyMetrics {
  aumUsd: number;
  /** Secondary-market volume on the data date, USD. */
  volumeUsd: number | null;
  holders: number | null;
  /** Share of supply held by the largest holder, percent 0–100. */
  topHolderPct: number | null;
  redemptionQueueUsd: number | null;
  /** Deviation of the token price from NAV, basis points (signed). */
  navDeviationBps: number | null;
  lastAttestationDate: string | null;
}

/** Everything a score depends on: a day's metrics and the protocol's terms. */
export interface ScoreInputs extends DailyMetrics {
  /** The day the score is for. */
  asOf: string;
  /** The day of the newest metrics used (earlier than asOf when data is late). */
  dataDate: string;
  /** Days between redemption windows (1 daily, 7 weekly, 30 monthly, 90 quarterly). */
  redemptionFrequencyDays: number;
  noticePeriodDays: number;
  redemptionGates: boolean;
  audited: boolean;
  qualifiedCustodian: boolean;
  regulatoryStatus: RegulatoryStatus;
}

export interface Penalty {
  name: PenaltyName;
  points: number;
  cap: number;
}

export interface Confidence {
  level: ConfidenceLevel;
  score: number;
  freshness: number;
  completeness: number;
}

export interface ScoreResult {
  methodologyVersion: string;
  score: number;
  tier: Tier;
  components: Record<ComponentName, number>;
  penalties: Penalty[];
  weights: Weights;
  caps: PenaltyCaps;
  confidence: Confidence;
  auditId: string;
}

export const round2 = (x: number): number => Math.round(x * 100) / 100;
const clamp = (x: number, lo = 0, hi = 100): number => Math.min(hi, Math.max(lo, x));
const DAY_MS = 86_400_000;

const dayNumbers = new Lru<string, number>({ maxEntries: 100_000 });

/** Days since the epoch of a `YYYY-MM-DD` date, memoised: scoring a year of history parses the same few hundred dates. */
function dayNumber(date: string): number {
  let n = dayNumbers.get(date);
  if (n === undefined) {
    n = Math.round(Date.parse(`${date}T00:00:00Z`) / DAY_MS);
    dayNumbers.set(date, n);
  }
  return n;
}

/** Whole days from `from` to `to` (both `YYYY-MM-DD`), never negative. */
export function daysBetween(from: string, to: string): number {
  return Math.max(0, dayNumber(to) - dayNumber(from));
}

export function aumComponent(aumUsd: number): number {
  if (aumUsd <= 1_000_000) return 0;
  return round2(clamp(25 * Math.log10(aumUsd / 1_000_000)));
}

export function redemptionComponent(
  i: Pick<ScoreInputs, 'redemptionFrequencyDays' | 'noticePeriodDays' | 'redemptionGates'>,
): number {
  return round2(
    clamp(100 - 1.5 * (i.redemptionFrequencyDays + i.noticePeriodDays) - (i.redemptionGates ? 15 : 0)),
  );
}

export function volumeComponent(i: Pick<ScoreInputs, 'aumUsd' | 'volumeUsd' | 'holders'>): number {
  const turnover = i.volumeUsd !== null && i.aumUsd > 0 ? i.volumeUsd / i.aumUsd : 0;
  const breadth = i.holders !== null && i.holders > 1 ? Math.log10(i.holders) / 4 : 0;
  return round2(clamp(50 * Math.min(1, turnover / 0.005) + 50 * Math.min(1, breadth)));
}

export function issuerComponent(
  i: Pick<ScoreInputs, 'asOf' | 'lastAttestationDate' | 'audited' | 'qualifiedCustodian'>,
): number {
  const attestation =
    i.lastAttestationDate === null ? 0 : Math.max(0, 1 - daysBetween(i.lastAttestationDate, i.asOf) / 90);
  return round2(clamp(25 * Number(i.audited) + 25 * Number(i.qualifiedCustodian) + 50 * attestation));
}

export function jurisdictionComponent(status: RegulatoryStatus): number {
  return REGULATORY_POINTS[status];
}

export function components(i: ScoreInputs): Record<ComponentName, number> {
  return {
    aum: aumComponent(i.aumUsd),
    redemption: redemptionComponent(i),
    volume: volumeComponent(i),
    issuer: issuerComponent(i),
    jurisdiction: jurisdictionComponent(i.regulatoryStatus),
  };
}

/** Uncapped penalty points; `penalties` applies the caps. */
export function rawPenalties(i: ScoreInputs): Record<PenaltyName, number> {
  const attestationAge = i.lastAttestationDate === null ? null : daysBetween(i.lastAttestationDate, i.asOf);
  return {
    concentration: i.topHolderPct === null ? 0 : 0.5 * Math.max(0, i.topHolderPct - 20),
    deviation: i.navDeviationBps === null ? 0 : 0.1 * Math.abs(i.navDeviationBps),
    queue: i.redemptionQueueUsd === null || i.aumUsd <= 0 ? 0 : (100 * i.redemptionQueueUsd) / i.aumUsd,
    staleness: 2 * Math.max(0, daysBetween(i.dataDate, i.asOf) - 1),
    // No attestation at all is the worst case: the full cap.
    attestation: attestationAge === null ? Number.POSITIVE_INFINITY : 0.2 * Math.max(0, attestationAge - 90),
  };
}

export function penalties(i: ScoreInputs, caps: PenaltyCaps = DEFAULT_CAPS): Penalty[] {
  const raw = rawPenalties(i);
  return PENALTIES.map((name) => ({
    name,
    cap: caps[name],
    points: Math.min(caps[name], round2(raw[name])),
  }));
}

export function tierOf(score: number): Tier {
  for (const [tier, min] of TIER_THRESHOLDS) if (score >= min) return tier;
  return 'ILLIQUID';
}

const OPTIONAL_INPUTS = [
  'volumeUsd',
  'holders',
  'topHolderPct',
  'redemptionQueueUsd',
  'navDeviationBps',
  'lastAttestationDate',
] as const;

export function confidence(i: ScoreInputs): Confidence {
  const freshness = round2(Math.max(0, 1 - daysBetween(i.dataDate, i.asOf) / 14));
  let present = 0;
  for (const k of OPTIONAL_INPUTS) if (i[k] !== null) present++;
  const completeness = round2(present / OPTIONAL_INPUTS.length);
  const score = round2(100 * (0.6 * freshness + 0.4 * completeness));
  return { level: score >= 80 ? 'HIGH' : score >= 50 ? 'MEDIUM' : 'LOW', score, freshness, completeness };
}

const sortedKeyCache = new Lru<string, string[]>({ maxEntries: 1000 });

/** Sorted keys, memoised per key set: the engine hashes the same few shapes over and over. */
function sortedKeys(value: Record<string, unknown>): string[] {
  const keys = Object.keys(value);
  const signature = keys.join('\u0000');
  let sorted = sortedKeyCache.get(signature);
  if (!sorted) {
    sorted = [...keys].sort();
    sortedKeyCache.set(signature, sorted);
  }
  return sorted;
}

/** JSON with object keys sorted (by UTF-16 code units) at every level, no whitespace: one spelling per value, so one hash. */
export function canonicalJson(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  const record = value as Record<string, unknown>;
  let out = '';
  for (const key of sortedKeys(record)) {
    const v = record[key];
    if (v === undefined) continue;
    out += `${out ? ',' : ''}${JSON.stringify(key)}:${canonicalJson(v)}`;
  }
  return `{${out}}`;
}

const METHODOLOGY = JSON.stringify(METHODOLOGY_VERSION);

/** The JSON of a number, null or boolean (NaN and the infinities are null, as JSON.stringify writes them). */
function scalar(v: number | boolean | null): string {
  if (v === null) return 'null';
  if (typeof v === 'boolean') return v ? 'true' : 'false';
  return Number.isFinite(v) ? JSON.stringify(v) : 'null';
}

/**
 * The inputs as canonical JSON: a score's hot path. An object literal with the keys in code-unit
 * order, stringified in one call: V8 writes its numbers about twice as fast as `String()` does
 * (no number-to-string cache to churn; a score's doubles never repeat), and like the canonical
 * walk it leaves out a key whose value is undefined.
 */
function inputsJson(i: ScoreInputs): string {
  return JSON.stringify({
    asOf: i.asOf,
    audited: i.audited,
    aumUsd: i.aumUsd,
    dataDate: i.dataDate,
    holders: i.holders,
    lastAttestationDate: i.lastAttestationDate,
    navDeviationBps: i.navDeviationBps,
    noticePeriodDays: i.noticePeriodDays,
    qualifiedCustodian: i.qualifiedCustodian,
    redemptionFrequencyDays: i.redemptionFrequencyDays,
    redemptionGates: i.redemptionGates,
    redemptionQueueUsd: i.redemptionQueueUsd,
    regulatoryStatus: i.regulatoryStatus,
    topHolderPct: i.topHolderPct,
    volumeUsd: i.volumeUsd,
  });
}

/**
 * SHA-256 of canonicalJson({ methodology, inputs, weights, caps }), serialised field by field in
 * the known sorted order: the generic walk costs more than the rest of a score (the engine test
 * checks the two serialisations agree).
 */
export function auditIdOf(inputs: ScoreInputs, weights: Weights, caps: PenaltyCaps): string {
  const { head, tail } = framingOf(weights, caps);
  return hash('sha256', head + inputsJson(inputs) + tail, 'hex');
}

/**
 * The text around the inputs depends only on the weights and caps: it is written once per pair of
 * objects (a run scores thousands of days under the same two) and kept with the numbers it was
 * written from, so a pair changed in place is written again.
 */
interface Framing {
  head: string;
  tail: string;
  numbers: number[];
}
const framings = new WeakMap<Weights, WeakMap<PenaltyCaps, Framing>>();

function numbersOf(weights: Weights, caps: PenaltyCaps): number[] {
  return [
    caps.attestation,
    caps.concentration,
    caps.deviation,
    caps.queue,
    caps.staleness,
    weights.aum,
    weights.issuer,
    weights.jurisdiction,
    weights.redemption,
    weights.volume,
  ];
}

function framingOf(weights: Weights, caps: PenaltyCaps): Framing {
  let byCaps = framings.get(weights);
  if (!byCaps) framings.set(weights, (byCaps = new WeakMap()));
  const numbers = numbersOf(weights, caps);
  const known = byCaps.get(caps);
  if (known && known.numbers.every((n, k) => Object.is(n, numbers[k]))) return known;
  const framing: Framing = {
    head: `{"caps":{"attestation":${scalar(caps.attestation)},"concentration":${scalar(caps.concentration)},"deviation":${scalar(caps.deviation)},"queue":${scalar(caps.queue)},"staleness":${scalar(caps.staleness)}},"inputs":`,
    tail: `,"methodology":${METHODOLOGY},"weights":{"aum":${scalar(weights.aum)},"issuer":${scalar(weights.issuer)},"jurisdiction":${scalar(weights.jurisdiction)},"redemption":${scalar(weights.redemption)},"volume":${scalar(weights.volume)}}}`,
    numbers,
  };
  byCaps.set(caps, framing);
  return framing;
}

/** The score: Σ weight × component − Σ capped penalty, clamped to 0–100, two decimals. */
export function scoreProtocol(
  inputs: ScoreInputs,
  weights: Weights = DEFAULT_WEIGHTS,
  caps: PenaltyCaps = DEFAULT_CAPS,
): ScoreResult {
  const parts = components(inputs);
  const assessed = penalties(inputs, caps);
  const weighted = COMPONENTS.reduce((sum, c) => sum + weights[c] * parts[c], 0);
  const deducted = assessed.reduce((sum, p) => sum + p.points, 0);
  const score = round2(clamp(weighted - deducted));
  return {
    methodologyVersion: METHODOLOGY_VERSION,
    score,
    tier: tierOf(score),
    components: parts,
    penalties: assessed,
    weights,
    caps,
    confidence: confidence(inputs),
    auditId: auditIdOf(inputs, weights, caps),
  };
}
