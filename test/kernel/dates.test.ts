import { describe, expect, it } from 'vitest';
import { checkDate, dayInRange, parseDate } from '../../src/kernel/dates.js';
import { requireUuid } from '../../src/kernel/ids.js';

const message = (run: () => unknown) => {
  try {
    run();
  } catch (e) {
    return (e as Error).message;
  }
  throw new Error('not refused');
};

describe('dates at the edge of the domain', () => {
  it('accepts 1900-01-01 to 2199-12-31 and refuses what lies outside, naming the field', () => {
    expect(checkDate(new Date('1900-01-01T00:00:00Z'), 'eta').toISOString()).toBe('1900-01-01T00:00:00.000Z');
    expect(parseDate('2199-12-31T23:59:59.999Z', 'eta')?.toISOString()).toBe('2199-12-31T23:59:59.999Z');
    for (const raw of [
      '0000-01-01T00:00:00Z',
      '+275760-09-13T00:00:00Z',
      '-000001-01-01T00:00:00Z',
      '1899-12-31T23:59:59Z',
      '2200-01-01T00:00:00Z',
    ]) {
      expect(
        message(() => parseDate(raw, 'eta')),
        raw,
      ).toMatch(/^eta: must lie between 1900-01-01 and 2199-12-31 \(got /);
    }
  });

  it('refuses what is no date at all, and reads absent or empty as null', () => {
    expect(message(() => parseDate('2026-13-45', 'requestedFor'))).toMatch(
      /^requestedFor: is not an ISO-8601 date-time/,
    );
    expect(message(() => checkDate(new Date(NaN), 'at'))).toBe('at: is not a valid date-time');
    expect(parseDate(undefined, 'etb')).toBeNull();
    expect(parseDate('', 'etb')).toBeNull();
  });

  it('checks calendar days by the same range', () => {
    expect(dayInRange('1900-01-01')).toBe(true);
    expect(dayInRange('2199-12-31')).toBe(true);
    expect(dayInRange('0000-01-01')).toBe(false);
    expect(dayInRange('2200-01-01')).toBe(false);
  });
});

describe('ids at the edge of the domain', () => {
  it('checks a UUID before any query, naming the field', () => {
    expect(requireUuid('3D36E5CD-D1D1-4735-A980-676DAD54E226', 'attachedId')).toBe(
      '3D36E5CD-D1D1-4735-A980-676DAD54E226',
    );
    expect(message(() => requireUuid('x', 'attachedId'))).toBe("attachedId: must be a UUID (got 'x')");
  });
});
