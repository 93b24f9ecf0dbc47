import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rest, startTestServer, type Json, type TestServer } from '../helpers/server.js';

/**
 * Recomputes demo scores from METHODOLOGY.md alone — the formulas are re-typed here from the
 * document, not imported from the engine — and the inputs the API says it used.
 */
const r2 = (x: number) => Math.round(x * 100) / 100;
const clamp = (x: number) => Math.min(100, Math.max(0, x));
const days = (a: string, b: string) => Math.max(0, Math.round((Date.parse(b) - Date.parse(a)) / 86_400_000));

function camelKeys(record: Record<string, unknown>): Json {
  return Object.fromEntries(
    Object.entries(record).map(([k, v]) => [k.replace(/_([a-z])/g, (_m, c: string) => c.toUpperCase()), v]),
  );
}

function byTheBook(i: Json) {
  const A = i.aumUsd <= 1e6 ? 0 : r2(clamp(25 * Math.log10(i.aumUsd / 1e6)));
  const R = r2(
    clamp(100 - 1.5 * (i.redemptionFrequencyDays + i.noticePeriodDays) - (i.redemptionGates ? 15 : 0)),
  );
  const turnover = i.volumeUsd === null || i.aumUsd === 0 ? 0 : i.volumeUsd / i.aumUsd;
  const breadth = i.holders === null || i.holders <= 1 ? 0 : Math.log10(i.holders) / 4;
  const V = r2(clamp(50 * Math.min(1, turnover / 0.005) + 50 * Math.min(1, breadth)));
  const attestation =
    i.lastAttestationDate === null ? 0 : Math.max(0, 1 - days(i.lastAttestationDate, i.asOf) / 90);
  const I = r2(clamp(25 * (i.audited ? 1 : 0) + 25 * (i.qualifiedCustodian ? 1 : 0) + 50 * attestation));
  const J = ({ REGISTERED: 100, EXEMPT: 80, PENDING: 50, UNREGULATED: 20 } as Record<string, number>)[
    i.regulatoryStatus
  ]!;
  const cap = (raw: number, c: number) => Math.min(c, r2(raw));
  const penalties = {
    CONCENTRATION: cap(i.topHolderPct === null ? 0 : 0.5 * Math.max(0, i.topHolderPct - 20), 15),
    DEVIATION: cap(i.navDeviationBps === null ? 0 : 0.1 * Math.abs(i.navDeviationBps), 15),
    QUEUE: cap(
      i.redemptionQueueUsd === null || i.aumUsd === 0 ? 0 : (100 * i.redemptionQueueUsd) / i.aumUsd,
      20,
    ),
    STALENESS: cap(2 * Math.max(0, days(i.dataDate, i.asOf) - 1), 20),
    ATTESTATION:
      i.lastAttestationDate === null
        ? 10
        : cap(0.2 * Math.max(0, days(i.lastAttestationDate, i.asOf) - 90), 10),
  };
  const total = Object.values(penalties).reduce((s, p) => s + p, 0);
  const score = r2(clamp(0.3 * A + 0.25 * R + 0.2 * V + 0.15 * I + 0.1 * J - total));
  const tier = score >= 75 ? 'L1' : score >= 55 ? 'L2' : score >= 35 ? 'L3' : 'ILLIQUID';
  const optional = [
    'volumeUsd',
    'holders',
    'topHolderPct',
    'redemptionQueueUsd',
    'navDeviationBps',
    'lastAttestationDate',
  ];
  const freshness = r2(Math.max(0, 1 - days(i.dataDate, i.asOf) / 14));
  const completeness = r2(optional.filter((k) => i[k] !== null).length / 6);
  const cScore = r2(100 * (0.6 * freshness + 0.4 * completeness));
  const confidence = {
    level: cScore >= 80 ? 'HIGH' : cScore >= 50 ? 'MEDIUM' : 'LOW',
    score: cScore,
    freshness,
    completeness,
  };
  return {
    components: { aum: A, redemption: R, volume: V, issuer: I, jurisdiction: J },
    penalties,
    score,
    tier,
    confidence,
  };
}

function canonical(v: unknown): string {
  if (v === null || typeof v !== 'object') return JSON.stringify(v);
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  return `{${Object.keys(v)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${canonical((v as Record<string, unknown>)[k])}`)
    .join(',')}}`;
}

describe('METHODOLOGY.md recomputes the demo scores', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server?.close());

  it('gives the same components, penalties, score, tier, confidence and audit id as the API for every demo protocol', async () => {
    const key = server.key('INSTITUTIONAL');
    const scores = (await rest(server.url, '/v1/scores?limit=100', { key })).body as Json[];
    expect(scores).toHaveLength(40);
    for (const s of scores) {
      const audit = (await rest(server.url, `/v1/audits/${s.audit_id}`, { key })).body;
      // REST spells the inputs snake_case; the audit id hashes them as the engine names them.
      const inputs = camelKeys(audit.inputs);
      const expected = byTheBook(inputs);
      expect(s.components, s.slug).toEqual(expected.components);
      expect(Object.fromEntries(s.penalties.map((p: Json) => [p.kind, p.points])), s.slug).toEqual(
        expected.penalties,
      );
      expect(s.score, s.slug).toBe(expected.score);
      expect(s.tier, s.slug).toBe(expected.tier);
      expect(s.confidence, s.slug).toEqual(expected.confidence);
      const caps = { concentration: 15, deviation: 15, queue: 20, staleness: 20, attestation: 10 };
      const weights = { aum: 0.3, redemption: 0.25, volume: 0.2, issuer: 0.15, jurisdiction: 0.1 };
      expect(audit.weights).toEqual(weights);
      expect(audit.penalty_caps).toEqual(caps);
      const id = createHash('sha256')
        .update(canonical({ methodology: '1.7', inputs, weights, caps }))
        .digest('hex');
      expect(id, s.slug).toBe(s.audit_id);
    }
  });
});
