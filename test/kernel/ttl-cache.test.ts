import { describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/kernel/clock.js';
import { TtlCache } from '../../src/kernel/ttl-cache.js';

describe('TtlCache', () => {
  it('serves values until they expire, then loads again', async () => {
    const clock = new ManualClock();
    const cache = new TtlCache<string, number | null>(1000, 10, clock);
    let loads = 0;
    const load = async () => ++loads;
    expect(await cache.getOrLoad('a', load)).toBe(1);
    expect(await cache.getOrLoad('a', load)).toBe(1);
    clock.advance(1001);
    expect(await cache.getOrLoad('a', load)).toBe(2);
  });

  it('caches null results and shares one load between concurrent misses', async () => {
    const cache = new TtlCache<string, string | null>(1000, 10, new ManualClock());
    let loads = 0;
    const load = async () => {
      loads++;
      return null;
    };
    expect(await Promise.all([cache.getOrLoad('x', load), cache.getOrLoad('x', load)])).toEqual([null, null]);
    expect(await cache.getOrLoad('x', load)).toBeNull();
    expect(loads).toBe(1);
  });

  it('evicts the oldest entry beyond its size, and forgets deleted keys', async () => {
    const cache = new TtlCache<number, number>(1000, 2, new ManualClock());
    cache.set(1, 1);
    cache.set(2, 2);
    cache.set(3, 3);
    expect(cache.get(1)).toBeUndefined();
    expect(cache.get(3)).toBe(3);
    cache.delete(3);
    expect(cache.get(3)).toBeUndefined();
  });

  it('does not cache failed loads', async () => {
    const cache = new TtlCache<string, number>(1000, 10, new ManualClock());
    await expect(cache.getOrLoad('k', async () => Promise.reject(new Error('db down')))).rejects.toThrow(
      'db down',
    );
    expect(await cache.getOrLoad('k', async () => 7)).toBe(7);
  });
});
