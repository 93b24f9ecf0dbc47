import { describe, expect, it } from 'vitest';
import { RecencyMap } from '../../src/kernel/recency.js';

const keys = (m: RecencyMap<number>) => {
  const out: string[] = [];
  for (let e = m.shift(); e; e = m.shift()) out.push(e[0]);
  return out;
};

describe('RecencyMap', () => {
  it('gives values back and drops the oldest first', () => {
    const m = new RecencyMap<number>();
    m.set('a', 1);
    m.set('b', 2);
    m.set('c', 3);
    expect(m.get('b')).toBe(2);
    expect(m.get('x')).toBeUndefined();
    expect(m.size).toBe(3);
    expect(m.shift()).toEqual(['a', 1]);
    expect(m.delete('c')).toBe(3);
    expect(m.delete('c')).toBeUndefined();
    expect(keys(m)).toEqual(['b']);
    expect(m.shift()).toBeUndefined();
  });

  it('moves a hit key in the older half to the newest end', () => {
    const m = new RecencyMap<number>();
    for (const [i, k] of ['a', 'b', 'c', 'd'].entries()) m.set(k, i);
    m.get('a');
    m.get('b');
    expect(keys(m)).toEqual(['c', 'd', 'a', 'b']);
  });

  it('leaves a hit key in the newer half where it is, and moves it once it has aged', () => {
    const m = new RecencyMap<number>();
    for (const [i, k] of ['a', 'b', 'c', 'd'].entries()) m.set(k, i);
    m.get('d'); // the newest: nothing to record
    m.get('c'); // newer half: not moved
    m.set('e', 4);
    m.get('c'); // 2 places since c, of 5: still the newer half
    m.set('f', 5);
    m.get('c'); // 3 of 6: the older half
    expect(keys(m)).toEqual(['a', 'b', 'd', 'e', 'f', 'c']);
  });

  it('never drops a key hit on every other insertion', () => {
    const m = new RecencyMap<number>();
    m.set('hot', 0);
    for (let i = 0; i < 100; i++) {
      m.set(`k${i}`, i);
      if (m.size > 4) m.shift();
      if (i % 2 === 0) expect(m.get('hot')).toBe(0);
    }
  });

  it('a value set again is the newest', () => {
    const m = new RecencyMap<number>();
    m.set('a', 1);
    m.set('b', 2);
    m.set('a', 3);
    expect(m.size).toBe(2);
    expect(m.shift()).toEqual(['b', 2]);
    expect(m.get('a')).toBe(3);
  });
});
