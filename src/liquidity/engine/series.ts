import { round2, type Tier } from './score.js';

/** Pure statistics over stored daily scores: trajectory, backtest measures, market indices. */

export type Trajectory = 'IMPROVING' | 'STABLE' | 'DECLINING';

/** A trend over the window of at least this many score points (either way) is not STABLE. */
export const TRAJECTORY_THRESHOLD = 3;

/**
 * Least-squares slope of score against day index, times (n − 1): the change the fitted line
 * makes over the window. ≥ +3 IMPROVING, ≤ −3 DECLINING, otherwise STABLE.
 */
export function trajectoryOf(scores: number[]): { trajectory: Trajectory; trend: number } {
  const n = scores.length;
  if (n < 2) return { trajectory: 'STABLE', trend: 0 };
  const meanX = (n - 1) / 2;
  const meanY = scores.reduce((a, b) => a + b, 0) / n;
  let sxy = 0;
  let sxx = 0;
  scores.forEach((y, x) => {
    sxy += (x - meanX) * (y - meanY);
    sxx += (x - meanX) ** 2;
  });
  const trend = round2((sxy / sxx) * (n - 1));
  const trajectory =
    trend >= TRAJECTORY_THRESHOLD ? 'IMPROVING' : trend <= -TRAJECTORY_THRESHOLD ? 'DECLINING' : 'STABLE';
  return { trajectory, trend };
}

/** Pearson correlation; null when fewer than 3 pairs or either side has no variance. */
export function pearson(xs: number[], ys: number[]): number | null {
  const n = xs.length;
  if (n < 3 || ys.length !== n) return null;
  const mx = xs.reduce((a, b) => a + b, 0) / n;
  const my = ys.reduce((a, b) => a + b, 0) / n;
  let sxy = 0;
  let sxx = 0;
  let syy = 0;
  for (let i = 0; i < n; i++) {
    const dx = xs[i]! - mx;
    const dy = ys[i]! - my;
    sxy += dx * dy;
    sxx += dx * dx;
    syy += dy * dy;
  }
  if (sxx === 0 || syy === 0) return null;
  return Math.round((sxy / Math.sqrt(sxx * syy)) * 10_000) / 10_000;
}

/** One protocol at the start and the end of a backtest window. */
export interface BacktestPair {
  start: { score: number; tier: Tier; aumUsd: number };
  end: { score: number; tier: Tier; aumUsd: number };
}

/** Below this starting score the methodology predicts the protocol is ILLIQUID at the window's end. */
export const ILLIQUID_PREDICTION_LINE = 45;

export interface BacktestMeasures {
  protocolsEvaluated: number;
  aumRetentionCorrelation: number | null;
  l1StabilityRate: number | null;
  illiquidPredictionAccuracy: number | null;
  l1AtStart: number;
  illiquidAtEnd: number;
}

export function backtestMeasures(pairs: BacktestPair[]): BacktestMeasures {
  const usable = pairs.filter((p) => p.start.aumUsd > 0);
  const correlation = pearson(
    usable.map((p) => p.start.score),
    usable.map((p) => p.end.aumUsd / p.start.aumUsd),
  );
  const l1 = pairs.filter((p) => p.start.tier === 'L1');
  const correct = pairs.filter(
    (p) => p.start.score < ILLIQUID_PREDICTION_LINE === (p.end.tier === 'ILLIQUID'),
  ).length;
  const rate = (num: number, den: number) => (den === 0 ? null : Math.round((num / den) * 10_000) / 10_000);
  return {
    protocolsEvaluated: pairs.length,
    aumRetentionCorrelation: correlation,
    l1StabilityRate: rate(l1.filter((p) => p.end.tier === 'L1').length, l1.length),
    illiquidPredictionAccuracy: rate(correct, pairs.length),
    l1AtStart: l1.length,
    illiquidAtEnd: pairs.filter((p) => p.end.tier === 'ILLIQUID').length,
  };
}

export interface IndexMember {
  category: string;
  aumUsd: number;
  score: number;
  tier: Tier;
  redemption: number;
}

export type IndexCode = 'ILT' | 'ILC' | 'ILRA' | 'ILRWA' | 'ILIG';

export const INDEX_NAMES: Record<IndexCode, string> = {
  ILT: 'Liquidity Total (AUM-weighted score, all protocols)',
  ILC: 'Liquidity Composite (equal-weighted score)',
  ILRA: 'Liquidity Redemption Access (AUM-weighted redemption component)',
  ILRWA: 'Liquidity RWA ex-Treasury (AUM-weighted score excluding treasury)',
  ILIG: 'Liquidity Investment Grade (AUM-weighted score of L1 and L2)',
};

function weighted(members: IndexMember[], value: (m: IndexMember) => number): number | null {
  const total = members.reduce((s, m) => s + m.aumUsd, 0);
  if (members.length === 0 || total <= 0) return null;
  return round2(members.reduce((s, m) => s + m.aumUsd * value(m), 0) / total);
}

export function indices(members: IndexMember[]): Record<IndexCode, number | null> {
  return {
    ILT: weighted(members, (m) => m.score),
    ILC: members.length === 0 ? null : round2(members.reduce((s, m) => s + m.score, 0) / members.length),
    ILRA: weighted(members, (m) => m.redemption),
    ILRWA: weighted(
      members.filter((m) => m.category !== 'TREASURY'),
      (m) => m.score,
    ),
    ILIG: weighted(
      members.filter((m) => m.tier === 'L1' || m.tier === 'L2'),
      (m) => m.score,
    ),
  };
}
