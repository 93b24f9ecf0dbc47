import { describe, expect, it } from 'vitest';
import { shapeBody, snakeCaseKey } from '../../../src/gateway/doors/rest-shape.js';

describe('REST body shaping', () => {
  const shape = { numbers: ['aum_usd'], lowerCase: ['category'], snakeCaseKeys: true };

  it('sends decimal strings as numbers, named values lower-case, camelCase keys snake_case at every level', () => {
    const body = [
      {
        aum_usd: '1223214081.29',
        category: 'PRIVATE_CREDIT',
        yield_attribution: [{ source: 'T-bills', sharePct: 100 }],
        inputs: { asOf: '2026-11-23', nested: { redemptionFrequencyDays: 7 } },
        tier_distribution: { L1: 3, ILLIQUID: 1 },
      },
    ];
    expect(shapeBody(body, shape)).toEqual([
      {
        aum_usd: 1223214081.29,
        category: 'private_credit',
        yield_attribution: [{ source: 'T-bills', share_pct: 100 }],
        inputs: { as_of: '2026-11-23', nested: { redemption_frequency_days: 7 } },
        tier_distribution: { L1: 3, ILLIQUID: 1 },
      },
    ]);
  });

  it('leaves a body without a shape, and values that are not decimals, as they are', () => {
    const body = { aumUsd: '12.50' };
    expect(shapeBody(body, undefined)).toBe(body);
    expect(shapeBody({ aum_usd: 'n/a', category: null }, shape)).toEqual({ aum_usd: 'n/a', category: null });
  });

  it('snake-cases camelCase keys only', () => {
    expect(['sharePct', 'filedOn', 'aum_usd', 'L1', 'ILLIQUID', 'id'].map(snakeCaseKey)).toEqual([
      'share_pct',
      'filed_on',
      'aum_usd',
      'L1',
      'ILLIQUID',
      'id',
    ]);
  });

  it('shapes a kept (frozen) result once for all the requests it serves, a fresh one every time', () => {
    const kept = Object.freeze([Object.freeze({ aum_usd: '1.50', category: 'TREASURY' })]);
    const first = shapeBody(kept, shape);
    expect(first).toEqual([{ aum_usd: 1.5, category: 'treasury' }]);
    expect(shapeBody(kept, shape)).toBe(first);
    const fresh = [{ aum_usd: '1.50', category: 'TREASURY' }];
    expect(shapeBody(fresh, shape)).not.toBe(shapeBody(fresh, shape));
  });

  it('shapes every key the same way however many distinct keys its bodies hold (data inside JSON values)', () => {
    const own = { numbers: ['aum_usd'], lowerCase: ['category'], snakeCaseKeys: true };
    const many = Object.fromEntries(Array.from({ length: 3_000 }, (_, i) => [`key${i}Name`, i]));
    const shaped = shapeBody({ inputs: many, aum_usd: '2.50', category: 'TREASURY' }, own) as {
      inputs: Record<string, number>;
    };
    expect(Object.keys(shaped.inputs)).toHaveLength(3_000);
    expect(shaped.inputs.key0_name).toBe(0);
    expect(shaped.inputs.key2999_name).toBe(2999);
    // Past the keys it remembers, known ones keep their plan.
    expect(shapeBody({ aum_usd: '2.50', category: 'TREASURY', shareOfTotal: '1.0' }, own)).toEqual({
      aum_usd: 2.5,
      category: 'treasury',
      share_of_total: '1.0',
    });
  });
});
