/** Small, exact-enough statistics over in-memory samples (hours, tonnes). */

/** Empirical quantile with linear interpolation between order statistics (type 7, as R and NumPy). */
export function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return NaN;
  const pos = (sorted.length - 1) * q;
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return sorted[lo]! + (sorted[hi]! - sorted[lo]!) * (pos - lo);
}

export const sortNumbers = (values: readonly number[]): number[] => [...values].sort((a, b) => a - b);

export const mean = (values: readonly number[]): number =>
  values.length ? values.reduce((a, b) => a + b, 0) / values.length : NaN;

export function stdev(values: readonly number[]): number {
  if (values.length < 2) return 0;
  const m = mean(values);
  return Math.sqrt(values.reduce((acc, v) => acc + (v - m) ** 2, 0) / (values.length - 1));
}

/** Rounds for presentation (hours to 0.1, tonnes to 1); computations keep full precision. */
export const round = (value: number, places = 1): number => Math.round(value * 10 ** places) / 10 ** places;

export const HOURS = (ms: number) => ms / 3_600_000;
