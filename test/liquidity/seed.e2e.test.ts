import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '../../src/kernel/clock.js';
import { DEMO_NAMES, DEMO_PROTOCOLS, scenarioOf, slugOf, type Scenario } from '../../src/liquidity/seed.js';
import { rest, startTestServer, type Json, type TestServer } from '../helpers/server.js';

/** The demo data tells the stories it is meant to: every scenario reads as what it is. */
describe('liquidity demo data', () => {
  let server: TestServer;
  const histories = new Map<string, Json>();
  const protocols = new Map<string, Json>();
  const scores = new Map<string, Json>();
  const ofScenario = (scenario: Scenario) =>
    DEMO_NAMES.map((name, i) => ({ slug: slugOf(name), scenario: scenarioOf(i) }))
      .filter((p) => p.scenario === scenario)
      .map((p) => p.slug);

  beforeAll(async () => {
    server = await startTestServer({ clock: new ManualClock('2026-06-15T10:00:00Z') });
    const key = server.key('INSTITUTIONAL');
    for (const p of (await rest(server.url, '/v1/protocols?limit=100', { key })).body as Json[])
      protocols.set(p.slug, p);
    for (const s of (await rest(server.url, '/v1/scores?limit=100', { key })).body as Json[])
      scores.set(s.slug, s);
    for (const slug of protocols.keys())
      histories.set(slug, (await rest(server.url, `/v1/scores/${slug}/history`, { key })).body);
  });
  afterAll(() => server?.close());

  it('has about 40 protocols across the five categories, each in one scenario', () => {
    expect(protocols.size).toBe(DEMO_PROTOCOLS);
    expect(new Set([...protocols.values()].map((p) => p.category)).size).toBe(5);
    expect(ofScenario('steady')).toHaveLength(15);
    expect(ofScenario('drift')).toHaveLength(10);
    expect(ofScenario('stale')).toHaveLength(5);
    expect(ofScenario('recovering')).toHaveLength(5);
    expect(ofScenario('middle')).toHaveLength(5);
  });

  it('keeps steady protocols in L1 with a STABLE trajectory (no attestation sawtooth)', () => {
    for (const slug of ofScenario('steady')) {
      const h = histories.get(slug);
      expect(
        h.points.every((p: Json) => p.tier === 'L1'),
        slug,
      ).toBe(true);
      expect(h.trajectory, slug).toBe('STABLE');
      expect(Math.abs(h.trend), slug).toBeLessThan(1.5);
    }
  });

  it('shows drifting protocols ILLIQUID and still DECLINING, not flat at zero', () => {
    for (const slug of ofScenario('drift')) {
      const h = histories.get(slug);
      expect(h.points.at(-1).tier, slug).toBe('ILLIQUID');
      expect(h.trajectory, slug).toBe('DECLINING');
      expect(h.points.at(-1).score, slug).toBeGreaterThan(0);
    }
  });

  it('shows recovering protocols IMPROVING and in-between ones STABLE', () => {
    for (const slug of ofScenario('recovering'))
      expect(histories.get(slug).trajectory, slug).toBe('IMPROVING');
    for (const slug of ofScenario('middle')) expect(histories.get(slug).trajectory, slug).toBe('STABLE');
  });

  it('leaves stale protocols 20 days without data, carried forward with a staleness penalty', () => {
    for (const slug of ofScenario('stale')) {
      const p = protocols.get(slug);
      const age = (Date.parse(p.score_as_of) - Date.parse(p.last_data_at)) / 86_400_000;
      expect(age, slug).toBe(20);
      expect(scores.get(slug).penalties.find((x: Json) => x.kind === 'STALENESS').points, slug).toBe(20);
    }
    for (const slug of [...ofScenario('steady'), ...ofScenario('drift'), ...ofScenario('recovering')])
      expect(protocols.get(slug).last_data_at, slug).toBe(protocols.get(slug).score_as_of);
  });
});
