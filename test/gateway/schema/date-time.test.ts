import fc from 'fast-check';
import { DateTimeISOResolver } from 'graphql-scalars';
import { printType } from 'graphql';
import { describe, expect, it } from 'vitest';
import { DateTimeISO, isoDateTime, WRITTEN_MAX } from '../../../src/gateway/schema/date-time.js';

/** What graphql-scalars' DateTimeISO gives for `value`: its text, or its error's message. */
function library(value: unknown): string {
  try {
    return String(DateTimeISOResolver.serialize(value));
  } catch (error) {
    return `error: ${(error as Error).message}`;
  }
}
function ours(value: unknown): string {
  try {
    return String(DateTimeISO.serialize(value));
  } catch (error) {
    return `error: ${(error as Error).message}`;
  }
}

const EDGES = [
  '1000-01-01T00:00:00.000Z',
  '1582-10-15T00:00:00.000Z',
  '1899-12-31T23:59:59.999Z',
  '1900-02-28T12:00:00.000Z',
  '1900-03-01T00:00:00.000Z',
  '1969-12-31T23:59:59.999Z',
  '1970-01-01T00:00:00.000Z',
  '1970-01-01T00:00:00.001Z',
  '2000-02-29T23:59:59.990Z',
  '2024-02-29T00:00:00.100Z',
  '2026-11-28T23:37:12.345Z',
  '2100-03-01T00:00:00.000Z',
  '9999-12-31T23:59:59.999Z',
];

describe('DateTimeISO', () => {
  it('writes the text toISOString writes, at the edges of days, months, leap years and its range', () => {
    for (const text of EDGES) {
      const time = Date.parse(text);
      expect(isoDateTime(time)).toBe(text);
      expect(ours(new Date(time))).toBe(text);
    }
  });

  it('writes the text toISOString writes for any time from year 1000 to 9999', () => {
    fc.assert(
      fc.property(fc.integer({ min: Date.UTC(1000, 0, 1), max: Date.UTC(10_000, 0, 1) - 1 }), (time) => {
        expect(isoDateTime(time)).toBe(new Date(time).toISOString());
      }),
      { seed: 20261128, numRuns: 20_000 },
    );
  });

  it('answers a time written before with the same text, and stays right past the texts it keeps', () => {
    const date = new Date('2026-11-28T23:37:12.345Z');
    const first = ours(date);
    expect(ours(new Date(date.getTime()))).toBe(first);
    // The same Date moved: its new time is written, not the text kept for the old one.
    date.setTime(date.getTime() + 1);
    expect(ours(date)).toBe('2026-11-28T23:37:12.346Z');
    // More distinct times than are kept: the map starts afresh and every text is still toISOString's.
    const start = Date.UTC(2026, 0, 1);
    for (let i = 0; i <= WRITTEN_MAX + 10; i++) {
      const time = start + i * 61_001;
      expect(ours(new Date(time))).toBe(new Date(time).toISOString());
    }
    expect(ours(new Date(start))).toBe(new Date(start).toISOString());
    expect(ours(new Date(Number.NaN))).toBe(library(new Date(Number.NaN)));
  });

  it('serializes everything else as graphql-scalars does: other years, invalid dates, strings, numbers', () => {
    const values = [
      new Date(Date.UTC(999, 11, 31, 23, 59, 59, 999)),
      new Date(Date.UTC(10_000, 0, 1)),
      new Date(-1e15),
      new Date(Number.NaN),
      '2026-11-28T10:00:00Z',
      '2026-11-28T10:00:00+02:00',
      'not a date',
      1_700_000_000_000,
      null,
      {},
    ];
    for (const value of values) expect(ours(value), String(value)).toBe(library(value));
  });

  it('is graphql-scalars’ scalar in the schema: name, description, specifiedBy, parsing', () => {
    expect(printType(DateTimeISO)).toBe(printType(DateTimeISOResolver));
    expect(DateTimeISO.specifiedByURL).toBe(DateTimeISOResolver.specifiedByURL);
    expect(DateTimeISO.parseValue('2026-11-28T10:00:00Z')).toEqual(
      DateTimeISOResolver.parseValue('2026-11-28T10:00:00Z'),
    );
  });
});
