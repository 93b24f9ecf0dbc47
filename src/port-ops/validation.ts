import { badInput } from '../kernel/errors.js';

/**
 * IMO ship identification number: seven digits, the last a check digit. Multiply the first six
 * digits by 7, 6, 5, 4, 3, 2; the last digit of the sum is the check digit.
 * Accepts an optional `IMO` prefix (`IMO 9074729`). Returns the bare seven digits.
 */
export function parseImo(raw: string, field = 'imo'): string {
  const value = raw.trim().replace(/^IMO\s*/i, '');
  if (!/^\d{7}$/.test(value)) {
    throw badInput(field, `an IMO number is exactly 7 digits (got '${raw}')`, { rule: 'IMO_FORMAT' });
  }
  const digits = [...value].map(Number);
  const sum = digits.slice(0, 6).reduce((acc, d, i) => acc + d * (7 - i), 0);
  const expected = sum % 10;
  if (digits[6] !== expected) {
    throw badInput(
      field,
      `IMO ${value} fails the check digit: the weighted sum of the first six digits (×7…×2) is ${sum}, so the last digit must be ${expected}`,
      { rule: 'IMO_CHECK_DIGIT' },
    );
  }
  return value;
}

const regionNames = new Intl.DisplayNames(['en'], { type: 'region', fallback: 'none' });

/** ISO 3166-1 alpha-2 country code, upper-cased; rejects codes ICU does not know. */
export function parseCountryCode(raw: string, field = 'flag'): string {
  const value = raw.trim().toUpperCase();
  if (!/^[A-Z]{2}$/.test(value) || !regionNames.of(value)) {
    throw badInput(field, `must be an ISO 3166-1 alpha-2 country code (got '${raw}')`);
  }
  return value;
}

export function countryName(code: string): string | undefined {
  return regionNames.of(code);
}

/**
 * UN/LOCODE: two-letter ISO country code + three characters from A–Z and 2–9 (the code list
 * never uses 0 or 1, to avoid confusion with O and I). Accepts `SG SIN`. Returns `SGSIN`.
 */
export function parseLocode(raw: string, field = 'portLocode'): string {
  const value = raw.trim().toUpperCase().replace(/\s+/g, '');
  if (!/^[A-Z]{2}[A-Z2-9]{3}$/.test(value)) {
    throw badInput(
      field,
      `a UN/LOCODE is 2 letters of country + 3 letters or digits 2–9, e.g. SGSIN (got '${raw}')`,
      { rule: 'LOCODE_FORMAT' },
    );
  }
  parseCountryCode(value.slice(0, 2), field);
  return value;
}

export function parseTimeZone(raw: string, field = 'timeZone'): string {
  try {
    return new Intl.DateTimeFormat('en', { timeZone: raw.trim() }).resolvedOptions().timeZone;
  } catch {
    throw badInput(field, `must be an IANA time zone such as Asia/Singapore (got '${raw}')`);
  }
}

export function requireText(raw: string | null | undefined, field: string, max: number): string {
  const value = (raw ?? '').trim();
  if (!value) throw badInput(field, 'must not be empty');
  if (value.length > max) throw badInput(field, `must be at most ${max} characters`);
  return value;
}

export function optionalText(raw: string | null | undefined, field: string, max: number): string | null {
  if (raw === null || raw === undefined || raw.trim() === '') return null;
  return requireText(raw, field, max);
}

export function parseEnum<T extends Record<string, string>>(
  values: T,
  raw: unknown,
  field: string,
): T[keyof T] {
  if (typeof raw === 'string' && Object.values(values).includes(raw)) return raw as T[keyof T];
  throw badInput(field, `must be one of ${Object.values(values).join(', ')} (got ${JSON.stringify(raw)})`);
}

export function parseEmail(raw: string | null | undefined, field = 'contactEmail'): string | null {
  const value = optionalText(raw, field, 320);
  if (value !== null && !/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(value))
    throw badInput(field, `is not an email address (got '${raw}')`);
  return value;
}

export function parseDate(raw: Date | string | null | undefined, field: string): Date | null {
  if (raw === null || raw === undefined || raw === '') return null;
  const date = raw instanceof Date ? raw : new Date(raw);
  if (Number.isNaN(date.getTime()))
    throw badInput(field, `is not an ISO-8601 date-time (got '${String(raw)}')`);
  return date;
}
