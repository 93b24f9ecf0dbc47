import { badInput } from '../kernel/errors.js';

/**
 * Exact decimal arithmetic for money: amounts are BigInt counts of a fixed scale (hundredths for
 * money, thousandths for quantities), so no binary float ever touches a total.
 */
export function parseDecimal(
  raw: string | number,
  field: string,
  maxPlaces: number,
): { units: bigint; scale: number } {
  const text = typeof raw === 'number' ? String(raw) : raw.trim();
  const match = /^(-?)(\d+)(?:\.(\d+))?$/.exec(text);
  if (!match || (match[3]?.length ?? 0) > maxPlaces) {
    throw badInput(field, `must be a decimal with at most ${maxPlaces} decimal places (got '${raw}')`);
  }
  const fraction = (match[3] ?? '').padEnd(maxPlaces, '0');
  const units = BigInt(match[2]! + fraction) * (match[1] ? -1n : 1n);
  return { units, scale: maxPlaces };
}

/** Divides and rounds half away from zero. */
export function divRound(value: bigint, divisor: bigint): bigint {
  const q = value / divisor;
  const r = value % divisor;
  if (r === 0n) return q;
  const twice = (r < 0n ? -r : r) * 2n;
  if (twice >= divisor) return value < 0n ? q - 1n : q + 1n;
  return q;
}

export function formatUnits(units: bigint, scale: number): string {
  const negative = units < 0n;
  const digits = (negative ? -units : units).toString().padStart(scale + 1, '0');
  const whole = digits.slice(0, digits.length - scale);
  const fraction = digits.slice(digits.length - scale);
  return `${negative ? '-' : ''}${whole}${scale > 0 ? `.${fraction}` : ''}`;
}

/** Cents of a 2-dp money string. */
export function cents(raw: string, field = 'amount'): bigint {
  return parseDecimal(raw, field, 2).units;
}

export const formatCents = (value: bigint): string => formatUnits(value, 2);

const CURRENCIES = new Set(Intl.supportedValuesOf('currency'));

/** ISO 4217 codes whose minor unit is 2 decimals (the only kind this API bills in). */
export function parseCurrency(raw: string, field = 'currency'): string {
  const value = raw.trim().toUpperCase();
  const digits = CURRENCIES.has(value)
    ? new Intl.NumberFormat('en', { style: 'currency', currency: value }).resolvedOptions()
        .maximumFractionDigits
    : undefined;
  if (digits !== 2)
    throw badInput(field, `must be an ISO 4217 currency with 2 minor digits, e.g. USD (got '${raw}')`);
  return value;
}
