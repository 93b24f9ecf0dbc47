import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/kernel/clock.js';
import { Lru, type EvictionReason } from '../../src/kernel/lru.js';

const keysOf = <K, V>(lru: Lru<K, V>) => [...lru.keys()];

describe('Lru: the one bounded map behind every cache', () => {
  it('keeps at most maxEntries, dropping the least recently used and telling onEvict', () => {
    const evicted: Array<[string, number, EvictionReason]> = [];
    const lru = new Lru<string, number>({ maxEntries: 2, onEvict: (k, v, why) => evicted.push([k, v, why]) });
    lru.set('a', 1);
    lru.set('b', 2);
    expect(lru.get('a')).toBe(1); // a was the oldest: the hit makes it the newest
    lru.set('c', 3);
    expect(lru.get('b')).toBeUndefined();
    expect(lru.get('a')).toBe(1);
    expect(lru.get('c')).toBe(3);
    expect(lru.size).toBe(2);
    expect(evicted).toEqual([['b', 2, 'capacity']]);
    expect(lru.stats).toEqual({ hits: 3, misses: 1, evictions: 1, expirations: 0 });
  });

  it('keeps at most maxBytes, by the size given to set or measured by sizeOf', () => {
    const lru = new Lru<string, string>({ maxBytes: 10, sizeOf: (v) => v.length });
    lru.set('a', 'xxxx');
    lru.set('b', 'yyyy');
    expect(lru.bytes).toBe(8);
    lru.set('c', 'zzzz'); // 12 > 10: a goes
    expect(keysOf(lru)).toEqual(['b', 'c']);
    expect(lru.bytes).toBe(8);
    lru.set('d', 'w', 9); // an explicit size wins over sizeOf: b and c go
    expect(keysOf(lru)).toEqual(['d']);
    expect(lru.bytes).toBe(9);
    expect(lru.stats.evictions).toBe(3);
  });

  it('refuses an entry larger than the whole byte bound, and drops what the key held', () => {
    const lru = new Lru<string, string>({ maxBytes: 10 });
    expect(lru.set('a', 'small', 5)).toBe(true);
    expect(lru.set('b', 'other', 4)).toBe(true);
    expect(lru.set('a', 'huge', 11)).toBe(false);
    expect(lru.get('a')).toBeUndefined();
    expect(lru.get('b')).toBe('other'); // nothing evicted to make room for a refused entry
    expect(lru.bytes).toBe(4);
  });

  it('expires entries ttlMs after they were set, by the injected clock', () => {
    const clock = new ManualClock();
    const expired: string[] = [];
    const lru = new Lru<string, number>({
      maxEntries: 10,
      ttlMs: 1000,
      clock,
      onEvict: (k, _v, why) => expired.push(`${k}:${why}`),
    });
    lru.set('a', 1);
    clock.advance(500);
    lru.set('b', 2);
    clock.advance(499);
    expect(lru.get('a')).toBe(1);
    expect(lru.has('a')).toBe(true);
    clock.advance(1);
    expect(lru.get('a')).toBeUndefined();
    expect(lru.has('b')).toBe(true);
    clock.advance(500);
    expect(lru.has('b')).toBe(false);
    expect(expired).toEqual(['a:expired', 'b:expired']);
    expect(lru.size).toBe(0);
    expect(lru.stats.expirations).toBe(2);
    lru.set('a', 3); // set again: a new lifetime
    clock.advance(999);
    expect(lru.get('a')).toBe(3);
  });

  it("takes an entry's own time-to-live over the cache's", () => {
    const clock = new ManualClock();
    const lru = new Lru<string, number>({ maxEntries: 10, ttlMs: 1000, clock });
    lru.set('short', 1, 0, 100);
    lru.set('usual', 2);
    clock.advance(100);
    expect(lru.get('short')).toBeUndefined();
    expect(lru.get('usual')).toBe(2);
    const untimed = new Lru<string, number>({ maxEntries: 10 });
    expect(() => untimed.set('a', 1, 0, 100)).toThrow('a time-to-live needs a clock');
  });

  it('moves a hit key in the older half to the newest end, and leaves one in the newer half', () => {
    const lru = new Lru<string, number>({ maxEntries: 100 });
    for (const [i, k] of ['a', 'b', 'c', 'd'].entries()) lru.set(k, i);
    lru.get('a');
    lru.get('b');
    expect(keysOf(lru)).toEqual(['c', 'd', 'a', 'b']);
    lru.get('b'); // the newest: nothing to record
    lru.get('a'); // newer half: not moved
    lru.set('e', 4);
    lru.get('a'); // 2 placements since a, of 5: still the newer half
    lru.set('f', 5);
    lru.get('a'); // 3 of 6: the older half
    expect(keysOf(lru)).toEqual(['c', 'd', 'b', 'e', 'f', 'a']);
  });

  it('never drops a key hit on every other insertion', () => {
    const lru = new Lru<string, number>({ maxEntries: 4 });
    lru.set('hot', 0);
    for (let i = 0; i < 100; i++) {
      lru.set(`k${i}`, i);
      if (i % 2 === 0) expect(lru.get('hot')).toBe(0);
    }
  });

  it('a value set again is the newest and replaces its size', () => {
    const lru = new Lru<string, number>({ maxEntries: 2, maxBytes: 100 });
    lru.set('a', 1, 10);
    lru.set('b', 2, 10);
    lru.set('a', 3, 30);
    expect(lru.size).toBe(2);
    expect(lru.bytes).toBe(40);
    expect(keysOf(lru)).toEqual(['b', 'a']);
    expect(lru.get('a')).toBe(3);
  });

  it('deletes by key, by predicate and all at once, keeping the byte count', () => {
    const lru = new Lru<string, { account: string }>({ maxEntries: 10, maxBytes: 100 });
    lru.set('k1', { account: 'x' }, 5);
    lru.set('k2', { account: 'y' }, 6);
    lru.set('k3', { account: 'x' }, 7);
    expect(lru.delete('k2')).toBe(true);
    expect(lru.delete('k2')).toBe(false);
    expect(lru.bytes).toBe(12);
    expect(lru.deleteWhere((v) => v.account === 'x')).toBe(2);
    expect(lru.size).toBe(0);
    expect(lru.bytes).toBe(0);
    lru.set('k4', { account: 'z' }, 1);
    lru.clear();
    expect(lru.get('k4')).toBeUndefined();
    expect(lru.bytes).toBe(0);
  });

  it('getOrLoad: one load for concurrent misses, null results held, failed loads not', async () => {
    const clock = new ManualClock();
    const lru = new Lru<string, number | null>({ maxEntries: 10, ttlMs: 1000, clock });
    let loads = 0;
    const load = async () => {
      loads++;
      return null;
    };
    expect(await Promise.all([lru.getOrLoad('x', load), lru.getOrLoad('x', load)])).toEqual([null, null]);
    expect(await lru.getOrLoad('x', load)).toBeNull();
    expect(loads).toBe(1);
    clock.advance(1000);
    expect(await lru.getOrLoad('x', async () => 7)).toBe(7);
    await expect(lru.getOrLoad('y', async () => Promise.reject(new Error('db down')))).rejects.toThrow(
      'db down',
    );
    expect(lru.has('y')).toBe(false);
    expect(await lru.getOrLoad('y', async () => 8)).toBe(8);
  });

  it('refuses a cache without a bound, a bound of zero, and a TTL without a clock', () => {
    expect(() => new Lru({})).toThrow('give maxEntries, maxBytes or both');
    expect(() => new Lru({ maxEntries: 0 })).toThrow('maxEntries must be greater than 0');
    expect(() => new Lru({ maxEntries: 1, ttlMs: 10 })).toThrow('ttlMs needs a clock');
  });
});
