import { describe, expect, it } from 'vitest';
import { DAY, HOUR } from '../../src/kernel/clock.js';
import { PortCallStatus, VesselType } from '../../src/port-ops/entities.js';
import {
  MIN_SAMPLE,
  evaluateHoldout,
  forecastFrom,
  predictFromHistory,
  type Sample,
} from '../../src/port-ops/predictions.js';

const NOW = new Date('2026-06-15T12:00:00.000Z');
const at = (ms: number) => new Date(ms);

/** A departed call at `port`, with hours from ETA to arrival, arrival to berth, berth to departure. */
function call(
  port: string,
  { delay = 0, wait = 0, berth = 0, eta = NOW.getTime() - 200 * DAY, type = VesselType.TANKER } = {},
): Sample {
  const ata = eta + delay * HOUR;
  const atb = ata + wait * HOUR;
  return {
    portId: port,
    vesselType: type,
    eta: at(eta),
    ata: at(ata),
    atb: at(atb),
    atd: at(atb + berth * HOUR),
  };
}
const many = (n: number, make: (i: number) => Sample) => Array.from({ length: n }, (_, i) => make(i));

describe('port-call predictions (empirical-quantiles 2.0.0)', () => {
  it('a SCHEDULED call counts from its ETA with ETA-based history, so the ETA→ATA delay is in the answer', () => {
    const history = many(25, () => call('P', { delay: 10, wait: 5, berth: 20 }));
    const eta = NOW.getTime() + 48 * HOUR;
    const p = predictFromHistory(
      history,
      { status: PortCallStatus.SCHEDULED, portId: 'P', vesselType: VesselType.TANKER, eta: at(eta) },
      NOW,
    );
    expect(p).toMatchObject({ anchorKind: 'ETA', conditioning: 'NONE', elapsedHours: -48, sampleSize: 25 });
    expect(p.berthHours).toEqual({ p10: 15, p50: 15, p90: 15 });
    expect(p.departureHours).toEqual({ p10: 35, p50: 35, p90: 35 });
    expect(p.berthAt.p50).toEqual(at(eta + 15 * HOUR));
    expect(p.departureAt.p90).toEqual(at(eta + 35 * HOUR));
  });

  it('a BERTHED call is predicted only from calls that stayed berthed at least as long as it has', () => {
    const history = [
      ...many(15, () => call('P', { wait: 2, berth: 10 })),
      ...many(15, () => call('P', { wait: 2, berth: 50 })),
    ];
    const atb = NOW.getTime() - 20 * HOUR;
    const p = predictFromHistory(
      history,
      {
        status: PortCallStatus.BERTHED,
        portId: 'P',
        vesselType: VesselType.TANKER,
        eta: at(atb - 5 * HOUR),
        ata: at(atb - 2 * HOUR),
        atb: at(atb),
      },
      NOW,
    );
    // 15 calls outlasted 20 h at P: fewer than MIN_SAMPLE, but all calls together have no more.
    expect(MIN_SAMPLE).toBe(20);
    expect(p).toMatchObject({ anchorKind: 'ATB', elapsedHours: 20, conditioning: 'ELAPSED', sampleSize: 15 });
    expect(p.basis).toBe('GLOBAL');
    expect(p.departureHours).toEqual({ p10: 50, p50: 50, p90: 50 });
    expect(p.departureAt.p10).toEqual(at(atb + 50 * HOUR));
    expect(p.berthHours).toBeNull();
    expect(p.berthAt.p50).toEqual(at(atb));
  });

  it('conditioning runs through the group fall-back: the narrowest group with 20 calls that lasted as long', () => {
    const history = [
      ...many(30, (i) => call('P', { wait: 1, berth: i < 25 ? 8 : 40 })),
      ...many(30, (i) => call('P', { wait: 1, berth: 30 + i, type: VesselType.BULK_CARRIER })),
    ];
    const atb = NOW.getTime() - 12 * HOUR;
    const p = predictFromHistory(
      history,
      {
        status: PortCallStatus.BERTHED,
        portId: 'P',
        vesselType: VesselType.TANKER,
        eta: at(atb),
        ata: at(atb),
        atb: at(atb),
      },
      NOW,
    );
    // Tankers at P: only 5 outlasted 12 h; the port as a whole: 5 + 30 = 35.
    expect(p).toMatchObject({ basis: 'PORT', sampleSize: 35, conditioning: 'ELAPSED' });
    expect(p.departureHours.p10).toBeGreaterThan(12);
  });

  it('an ARRIVED call waiting for a berth is predicted from calls that waited at least as long', () => {
    const history = [
      ...many(20, () => call('P', { wait: 1, berth: 10 })),
      ...many(20, () => call('P', { wait: 30, berth: 10 })),
    ];
    const ata = NOW.getTime() - 10 * HOUR;
    // The history arrived in another season, so the first group with 20 calls is port × vessel type.
    const p = predictFromHistory(
      history,
      {
        status: PortCallStatus.ARRIVED,
        portId: 'P',
        vesselType: VesselType.TANKER,
        eta: at(ata),
        ata: at(ata),
      },
      NOW,
    );
    expect(p).toMatchObject({
      anchorKind: 'ATA',
      conditioning: 'ELAPSED',
      sampleSize: 20,
      basis: 'PORT_VESSEL_TYPE',
    });
    expect(p.berthHours).toEqual({ p10: 30, p50: 30, p90: 30 });
    expect(p.departureHours).toEqual({ p10: 40, p50: 40, p90: 40 });
  });

  it('past every recorded stay, the remaining time is the whole distribution counted from now (MEMORYLESS)', () => {
    const history = many(30, (i) => call('P', { wait: 1, berth: 10 + i }));
    const atb = NOW.getTime() - 100 * HOUR;
    const p = predictFromHistory(
      history,
      {
        status: PortCallStatus.BERTHED,
        portId: 'P',
        vesselType: VesselType.TANKER,
        eta: at(atb),
        ata: at(atb),
        atb: at(atb),
      },
      NOW,
    );
    // The history is from another season: the narrowest group with 20 calls is port × vessel type.
    expect(p).toMatchObject({ conditioning: 'MEMORYLESS', sampleSize: 30, basis: 'PORT_VESSEL_TYPE' });
    // berth times 10…39 h: p10 12.9, p50 24.5, p90 36.1 — from now, i.e. 100 h after ATB.
    expect(p.departureHours).toEqual({ p10: 112.9, p50: 124.5, p90: 136.1 });
    expect(p.departureAt.p10.getTime()).toBeGreaterThan(NOW.getTime());
    // No group has 20 calls: all calls, however few.
    const few = predictFromHistory(
      history.slice(0, 10),
      {
        status: PortCallStatus.BERTHED,
        portId: 'P',
        vesselType: VesselType.TANKER,
        eta: at(atb),
        ata: at(atb),
        atb: at(atb),
      },
      NOW,
    );
    expect(few).toMatchObject({ conditioning: 'MEMORYLESS', sampleSize: 10, basis: 'GLOBAL' });
  });

  it('never reports a time in the past for a call still to berth or depart: such a quantile is now', () => {
    const history = many(30, (i) => call('P', { delay: -5 + i * 0.5, wait: 0, berth: 12 }));
    const eta = NOW.getTime() + HOUR;
    const p = predictFromHistory(
      history,
      { status: PortCallStatus.SCHEDULED, portId: 'P', vesselType: VesselType.TANKER, eta: at(eta) },
      NOW,
    );
    expect(p.berthAt.p10).toEqual(NOW);
    expect(p.berthHours!.p10).toBe(-1);
    expect(p.berthAt.p50.getTime()).toBeGreaterThan(NOW.getTime());
  });

  it('evaluates the held-out error from the prediction’s own kind of anchor', () => {
    const old = NOW.getTime() - 300 * DAY;
    const recent = NOW.getTime() - 30 * DAY;
    const history = [
      ...many(25, () => call('P', { delay: 10, wait: 5, berth: 20, eta: old })),
      ...many(10, () => call('P', { delay: 14, wait: 5, berth: 20, eta: recent })),
    ];
    expect(evaluateHoldout(history, NOW, 'ETA')).toEqual({
      holdoutDays: 90,
      anchorKind: 'ETA',
      evaluatedCalls: 10,
      berthMaeHours: 4,
      departureMaeHours: 4,
      departureCoverage: 0,
    });
    expect(evaluateHoldout(history, NOW, 'ATA')).toMatchObject({
      berthMaeHours: 0,
      departureMaeHours: 0,
      departureCoverage: 1,
    });
    expect(evaluateHoldout(history, NOW, 'ATB')).toMatchObject({ berthMaeHours: null, departureMaeHours: 0 });
  });
});

describe('bunker demand forecastFrom (seasonal-naive-mean)', () => {
  const months = (from: string, values: number[]) => {
    const series = new Map<string, number>();
    const start = new Date(`${from}-01T00:00:00Z`);
    values.forEach((v, i) => {
      const d = new Date(Date.UTC(start.getUTCFullYear(), start.getUTCMonth() + i, 1));
      series.set(d.toISOString().slice(0, 7), v);
    });
    return series;
  };

  it('a flat history forecasts the level with a zero-width band', () => {
    const series = months('2023-07', Array(24).fill(100));
    expect(forecastFrom(series, new Date('2025-07-01T00:00:00Z'), 2)).toEqual([
      { month: '2025-07', p10: 100, p50: 100, p90: 100 },
      { month: '2025-08', p10: 100, p50: 100, p90: 100 },
    ]);
  });

  it('one busy July a year ago lifts this July by its seasonal index and widens the band', () => {
    const values = Array(24).fill(100);
    values[12] = 200; // 2024-07
    const series = months('2023-07', values);
    // Level 100 (Jan–Jun 2025); July index 200 / mean(Feb 2024 – Jan 2025 = 108.33) = 1.846 → 184.6;
    // band 1.2816 × stdev(Jul 2024 – Jun 2025 = 28.87) = 37.0; August index 100 / 108.33 → 92.3.
    expect(forecastFrom(series, new Date('2025-07-01T00:00:00Z'), 2)).toEqual([
      { month: '2025-07', p10: 148, p50: 185, p90: 222 },
      { month: '2025-08', p10: 55, p50: 92, p90: 129 },
    ]);
  });

  it('months without deliveries count as zero, and the band never goes below zero', () => {
    const series = months('2025-01', [0, 0, 0, 0, 0, 600]);
    const [july] = forecastFrom(series, new Date('2025-07-01T00:00:00Z'), 1);
    expect(july).toEqual({ month: '2025-07', p10: 0, p50: 100, p90: 322 });
  });
});
