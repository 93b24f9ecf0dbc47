import { describe, expect, it } from 'vitest';
import { isUuid, requireUuid, timeOrderedUuid } from '../../src/kernel/ids.js';

describe('timeOrderedUuid', () => {
  it('is a version-7 UUID whose first 48 bits are the time in milliseconds', () => {
    const at = Date.UTC(2026, 10, 29, 6, 0, 0, 123);
    const timeOf = (u: string) => parseInt(u.slice(0, 8) + u.slice(9, 13), 16);
    const id = timeOrderedUuid(at);
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(isUuid(id)).toBe(true);
    expect(timeOf(id)).toBe(at);
    // The time's text is kept for the last millisecond only: another time, then this one again.
    expect(timeOf(timeOrderedUuid(at + 1))).toBe(at + 1);
    expect(timeOf(timeOrderedUuid(at))).toBe(at);
  });

  it('sorts in the order of its times, as text too, and is random within one millisecond', () => {
    const times = [0, 1, 255, 256, Date.UTC(2026, 0, 1), Date.UTC(2026, 0, 1) + 1, 2 ** 48 - 1];
    const ids = times.map((t) => timeOrderedUuid(t));
    expect([...ids].sort()).toEqual(ids);
    const same = new Set(Array.from({ length: 1000 }, () => timeOrderedUuid(42)));
    expect(same.size).toBe(1000);
  });
});

describe('requireUuid', () => {
  it('passes a UUID of any version and names the field of anything else', () => {
    const v7 = timeOrderedUuid();
    expect(requireUuid(v7, 'id')).toBe(v7);
    expect(() => requireUuid('not-a-uuid', 'portCallId')).toThrow(/portCallId.*must be a UUID/);
  });
});
