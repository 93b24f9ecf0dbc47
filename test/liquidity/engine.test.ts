import { createHash } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  COMPONENTS,
  DEFAULT_CAPS,
  DEFAULT_WEIGHTS,
  PENALTIES,
  aumComponent,
  auditIdOf,
  canonicalJson,
  scoreProtocol,
  tierOf,
  type PenaltyCaps,
  type ScoreInputs,
  type Weights,
} from '../../src/liquidity/engine/score.js';
import { backtestMeasures, indices, pearson, trajectoryOf } from '../../src/liquidity/engine/series.js';
import { validateWeights } from '../../src/liquidity/profiles.js';

const day = fc
  .integer({ min: 0, max: 800 })
  .map((n) => new Date(Date.UTC(2025, 0, 1) + n * 86_400_000).toISOString().slice(0, 10));
const nullable = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: null });

const inputsArb: fc.Arbitrary<ScoreInputs> = fc
  .record({
    asOf: day,
    dataDate: day,
    aumUsd: fc.double({ min: 0, max: 1e12, noNaN: true }),
    volumeUsd: nullable(fc.double({ min: 0, max: 1e10, noNaN: true })),
    holders: nullable(fc.integer({ min: 0, max: 10_000_000 })),
    topHolderPct: nullable(fc.double({ min: 0, max: 100, noNaN: true })),
    redemptionQueueUsd: nullable(fc.double({ min: 0, max: 1e11, noNaN: true })),
    navDeviationBps: nullable(fc.double({ min: -10_000, max: 10_000, noNaN: true })),
    lastAttestationDate: nullable(day),
    redemptionFrequencyDays: fc.constantFrom(1, 7, 30, 90),
    noticePeriodDays: fc.integer({ min: 0, max: 90 }),
    redemptionGates: fc.boolean(),
    audited: fc.boolean(),
    qualifiedCustodian: fc.boolean(),
    regulatoryStatus: fc.constantFrom('REGISTERED', 'EXEMPT', 'PENDING', 'UNREGULATED' as const),
  })
  // Data is never newer than the day it scores.
  .map((i) => (i.dataDate > i.asOf ? { ...i, dataDate: i.asOf } : i));

/** Five non-negative weights that sum to 1 (the last absorbs rounding). */
const weightsArb: fc.Arbitrary<Weights> = fc
  .array(fc.integer({ min: 0, max: 1000 }), { minLength: 5, maxLength: 5 })
  .filter((a) => a.some((x) => x > 0))
  .map((raw) => {
    const total = raw.reduce((s, x) => s + x, 0);
    const w = raw.map((x) => x / total);
    return Object.fromEntries(COMPONENTS.map((c, i) => [c, w[i]!])) as Weights;
  });

const capsArb: fc.Arbitrary<PenaltyCaps> = fc.record(
  Object.fromEntries(PENALTIES.map((p) => [p, fc.double({ min: 0, max: 50, noNaN: true })])) as Record<
    keyof PenaltyCaps,
    fc.Arbitrary<number>
  >,
);

describe('methodology 1.7 engine', () => {
  it('default weights sum to 1', () => {
    expect(COMPONENTS.reduce((s, c) => s + DEFAULT_WEIGHTS[c], 0)).toBeCloseTo(1, 12);
    expect(validateWeights(DEFAULT_WEIGHTS)).toEqual(DEFAULT_WEIGHTS);
  });

  it('accepts a weight set exactly when every weight is non-negative and they sum to 1 within 1e-6', () => {
    const anyWeight = fc.oneof(
      fc.double({ min: -1, max: 2 }),
      fc.constantFrom(0, 1, -0, Number.NaN, Number.POSITIVE_INFINITY),
    );
    const arbitrary = fc.record(
      Object.fromEntries(COMPONENTS.map((c) => [c, anyWeight])) as Record<
        keyof Weights,
        fc.Arbitrary<number>
      >,
    );
    // Valid sets nudged across the tolerance on one component, so both sides of the boundary are drawn.
    const nudged = fc
      .tuple(weightsArb, fc.constantFrom(...COMPONENTS), fc.double({ min: -3e-6, max: 3e-6, noNaN: true }))
      .map(([w, c, d]) => ({ ...w, [c]: w[c] + d }));
    const sumOf = (w: Weights) => COMPONENTS.reduce((s, c) => s + w[c], 0);
    let accepted = 0;
    let rejected = 0;
    fc.assert(
      fc.property(fc.oneof(arbitrary, weightsArb, nudged), (w) => {
        const valid =
          COMPONENTS.every((c) => Number.isFinite(w[c]) && w[c] >= 0) && Math.abs(sumOf(w) - 1) <= 1e-6;
        let ok = true;
        try {
          validateWeights(w);
        } catch (e) {
          ok = false;
          expect((e as Error).message).toMatch(/^weights(\.\w+)?: /);
        }
        if (ok) accepted++;
        else rejected++;
        expect(ok).toBe(valid);
      }),
      { numRuns: 2000 },
    );
    // Both outcomes were exercised.
    expect(accepted).toBeGreaterThan(100);
    expect(rejected).toBeGreaterThan(100);
  });

  it('keeps every component, every penalty and the score in range', () => {
    fc.assert(
      fc.property(inputsArb, weightsArb, capsArb, (inputs, weights, caps) => {
        const r = scoreProtocol(inputs, weights, caps);
        for (const c of COMPONENTS) {
          expect(r.components[c]).toBeGreaterThanOrEqual(0);
          expect(r.components[c]).toBeLessThanOrEqual(100);
        }
        for (const p of r.penalties) {
          expect(p.points).toBeGreaterThanOrEqual(0);
          expect(p.points).toBeLessThanOrEqual(p.cap);
        }
        expect(r.score).toBeGreaterThanOrEqual(0);
        expect(r.score).toBeLessThanOrEqual(100);
        expect(r.tier).toBe(tierOf(r.score));
        expect(r.confidence.score).toBeGreaterThanOrEqual(0);
        expect(r.confidence.score).toBeLessThanOrEqual(100);
      }),
      { numRuns: 500 },
    );
  });

  it('more AUM never lowers the AUM component', () => {
    fc.assert(
      fc.property(
        fc.double({ min: 0, max: 1e13, noNaN: true }),
        fc.double({ min: 0, max: 1e13, noNaN: true }),
        (a, b) => {
          const [lo, hi] = a <= b ? [a, b] : [b, a];
          expect(aumComponent(hi)).toBeGreaterThanOrEqual(aumComponent(lo));
        },
      ),
      { numRuns: 1000 },
    );
  });

  it('a larger penalty never raises the score, under any valid weights and caps', () => {
    const worse = fc.constantFrom(
      'topHolderPct',
      'navDeviationBps',
      'redemptionQueueUsd',
      'staleness',
      'attestation' as const,
    );
    const shiftDay = (d: string, n: number) =>
      new Date(Date.parse(`${d}T00:00:00Z`) + n * 86_400_000).toISOString().slice(0, 10);
    fc.assert(
      fc.property(
        inputsArb,
        weightsArb,
        capsArb,
        worse,
        fc.double({ min: 0, max: 1e9, noNaN: true }),
        fc.integer({ min: 0, max: 2000 }),
        (inputs, weights, caps, which, amount, days) => {
          // The attestation case starts at least 90 days old, where the issuer component no longer
          // depends on it, so only the penalty moves.
          const base: ScoreInputs = {
            ...inputs,
            topHolderPct: inputs.topHolderPct ?? 0,
            navDeviationBps: inputs.navDeviationBps ?? 0,
            redemptionQueueUsd: inputs.redemptionQueueUsd ?? 0,
            lastAttestationDate: shiftDay(inputs.asOf, -90 - (days % 400)),
          };
          let bigger: ScoreInputs;
          if (which === 'topHolderPct')
            bigger = { ...base, topHolderPct: Math.min(100, base.topHolderPct! + (amount % 100)) };
          else if (which === 'navDeviationBps')
            bigger = {
              ...base,
              navDeviationBps:
                Math.sign(base.navDeviationBps || 1) *
                Math.min(10_000, Math.abs(base.navDeviationBps!) + (amount % 10_000)),
            };
          else if (which === 'redemptionQueueUsd')
            bigger = { ...base, redemptionQueueUsd: base.redemptionQueueUsd! + amount };
          else if (which === 'staleness') bigger = { ...base, dataDate: shiftDay(base.dataDate, -days) };
          else bigger = { ...base, lastAttestationDate: shiftDay(base.lastAttestationDate!, -days) };
          const before = scoreProtocol(base, weights, caps);
          const after = scoreProtocol(bigger, weights, caps);
          // Isolation: the change moved no component, only penalties.
          expect(after.components).toEqual(before.components);
          const total = (r: typeof before) => r.penalties.reduce((s, p) => s + p.points, 0);
          expect(total(after)).toBeGreaterThanOrEqual(total(before));
          expect(after.score).toBeLessThanOrEqual(before.score);
        },
      ),
      { numRuns: 1000 },
    );
  });

  it('lower caps never lower the score (a cap only limits a penalty)', () => {
    fc.assert(
      fc.property(inputsArb, capsArb, capsArb, (inputs, a, b) => {
        const low = Object.fromEntries(PENALTIES.map((p) => [p, Math.min(a[p], b[p])])) as PenaltyCaps;
        const high = Object.fromEntries(PENALTIES.map((p) => [p, Math.max(a[p], b[p])])) as PenaltyCaps;
        expect(scoreProtocol(inputs, DEFAULT_WEIGHTS, low).score).toBeGreaterThanOrEqual(
          scoreProtocol(inputs, DEFAULT_WEIGHTS, high).score,
        );
      }),
    );
  });

  it('gives the same audit id for the same inputs, weights and caps, whatever the key order, and a new one when anything changes', () => {
    fc.assert(
      fc.property(inputsArb, (inputs) => {
        const reversed = Object.fromEntries(Object.entries(inputs).reverse()) as unknown as ScoreInputs;
        expect(auditIdOf(reversed, DEFAULT_WEIGHTS, DEFAULT_CAPS)).toBe(scoreProtocol(inputs).auditId);
        expect(auditIdOf({ ...inputs, aumUsd: inputs.aumUsd + 1 }, DEFAULT_WEIGHTS, DEFAULT_CAPS)).not.toBe(
          scoreProtocol(inputs).auditId,
        );
        expect(
          auditIdOf(inputs, DEFAULT_WEIGHTS, { ...DEFAULT_CAPS, queue: DEFAULT_CAPS.queue + 1 }),
        ).not.toBe(scoreProtocol(inputs).auditId);
      }),
      { numRuns: 200 },
    );
    expect(canonicalJson({ b: 1, a: [{ d: null, c: 'x' }] })).toBe('{"a":[{"c":"x","d":null}],"b":1}');
    // The fast serializer behind auditIdOf is exactly the canonical JSON.
    fc.assert(
      fc.property(inputsArb, weightsArb, capsArb, (inputs, weights, caps) => {
        const expected = createHash('sha256')
          .update(canonicalJson({ methodology: '1.7', inputs, weights, caps }))
          .digest('hex');
        expect(auditIdOf(inputs, weights, caps)).toBe(expected);
      }),
      { numRuns: 300 },
    );
    // The text around the inputs is kept per weights and caps objects: one changed in place is written again.
    fc.assert(
      fc.property(inputsArb, weightsArb, capsArb, capsArb, (inputs, weights, caps, other) => {
        const mutable = { ...caps };
        auditIdOf(inputs, weights, mutable);
        Object.assign(mutable, other);
        const expected = createHash('sha256')
          .update(canonicalJson({ methodology: '1.7', inputs, weights, caps: other }))
          .digest('hex');
        expect(auditIdOf(inputs, weights, mutable)).toBe(expected);
      }),
      { numRuns: 100 },
    );
  });

  it('scores a hand-worked example exactly as METHODOLOGY.md shows', () => {
    const r = scoreProtocol({
      asOf: '2026-03-31',
      dataDate: '2026-03-29',
      aumUsd: 250_000_000,
      volumeUsd: 750_000,
      holders: 3_000,
      topHolderPct: 32,
      redemptionQueueUsd: 5_000_000,
      navDeviationBps: -45,
      lastAttestationDate: '2026-02-14',
      redemptionFrequencyDays: 7,
      noticePeriodDays: 3,
      redemptionGates: true,
      audited: true,
      qualifiedCustodian: false,
      regulatoryStatus: 'EXEMPT',
    });
    expect(r.components).toEqual({ aum: 59.95, redemption: 70, volume: 73.46, issuer: 50, jurisdiction: 80 });
    expect(Object.fromEntries(r.penalties.map((p) => [p.name, p.points]))).toEqual({
      concentration: 6,
      deviation: 4.5,
      queue: 2,
      staleness: 2,
      attestation: 0,
    });
    expect(r.score).toBe(51.18);
    expect(r.tier).toBe('L3');
    expect(r.confidence).toEqual({ level: 'HIGH', score: 91.6, freshness: 0.86, completeness: 1 });
  });

  it('classifies trajectories by the fitted 30-day change', () => {
    expect(trajectoryOf(Array.from({ length: 30 }, (_, i) => 50 + i * 0.2)).trajectory).toBe('IMPROVING');
    expect(trajectoryOf(Array.from({ length: 30 }, (_, i) => 50 - i * 0.2)).trajectory).toBe('DECLINING');
    expect(trajectoryOf(Array.from({ length: 30 }, (_, i) => 50 + (i % 2)))).toEqual({
      trajectory: 'STABLE',
      trend: expect.any(Number),
    });
    expect(trajectoryOf([70]).trajectory).toBe('STABLE');
  });

  it('computes backtest measures and indices from their definitions', () => {
    const pairs = [
      {
        start: { score: 80, tier: 'L1' as const, aumUsd: 100 },
        end: { score: 82, tier: 'L1' as const, aumUsd: 110 },
      },
      {
        start: { score: 76, tier: 'L1' as const, aumUsd: 100 },
        end: { score: 60, tier: 'L2' as const, aumUsd: 90 },
      },
      {
        start: { score: 40, tier: 'L3' as const, aumUsd: 100 },
        end: { score: 20, tier: 'ILLIQUID' as const, aumUsd: 30 },
      },
      {
        start: { score: 50, tier: 'L3' as const, aumUsd: 100 },
        end: { score: 30, tier: 'ILLIQUID' as const, aumUsd: 60 },
      },
    ];
    const m = backtestMeasures(pairs);
    expect(m.l1StabilityRate).toBe(0.5);
    expect(m.illiquidPredictionAccuracy).toBe(0.75);
    expect(m.aumRetentionCorrelation).toBe(pearson([80, 76, 40, 50], [1.1, 0.9, 0.3, 0.6]));
    const idx = indices([
      { category: 'TREASURY', aumUsd: 300, score: 90, tier: 'L1', redemption: 98.5 },
      { category: 'REAL_ESTATE', aumUsd: 100, score: 30, tier: 'ILLIQUID', redemption: 40 },
    ]);
    expect(idx).toEqual({ ILT: 75, ILC: 60, ILRA: 83.88, ILRWA: 30, ILIG: 90 });
  });
});
