import { pathToFileURL } from 'node:url';
import { scoreProtocol, type ScoreInputs } from '../../src/liquidity/engine/score.js';
import { mulberry32 } from '../../src/kernel/random.js';
import type { BenchScenario } from './scenario.js';

/** Liquidity scenarios for `npm run bench`: the same data through REST and GraphQL (Institutional key). */
const PROTOCOLS_QUERY = `query BenchProtocols { protocols(first: 100) { nodes { id slug name category aumUsd liquidityScore liquidityTier regulatoryStatus custodian auditor governanceModel } } }`;
const MARKET_QUERY = `query BenchMarket { market { protocolCount totalAumUsd averageScore averageYieldPct tierDistribution { L1 L2 L3 ILLIQUID } indices { code score } } }`;
const inst = (k: Record<string, string>) => ({ 'x-api-key': k.INSTITUTIONAL! });
const gqlHeaders = (k: Record<string, string>) => ({ ...inst(k), 'content-type': 'application/json' });

export const scenarios: BenchScenario[] = [
  {
    name: 'REST /v1/protocols?limit=100',
    method: 'GET',
    path: '/v1/protocols?limit=100',
    headers: inst,
    baseline: 'bare Fastify route',
  },
  {
    name: 'GraphQL protocols(first: 100)',
    method: 'POST',
    path: '/graphql',
    headers: gqlHeaders,
    body: JSON.stringify({ query: PROTOCOLS_QUERY }),
    baseline: 'REST /v1/protocols?limit=100',
  },
  {
    name: 'REST /v1/market',
    method: 'GET',
    path: '/v1/market',
    headers: inst,
    baseline: 'bare Fastify route',
  },
  {
    name: 'GraphQL market',
    method: 'POST',
    path: '/graphql',
    headers: gqlHeaders,
    body: JSON.stringify({ query: MARKET_QUERY }),
    baseline: 'REST /v1/market',
  },
];

/**
 * Scores 1,000 synthetic protocols × 365 days with the pure engine (components, penalties,
 * confidence and the SHA-256 audit id for each of the 365,000 scores). Inputs are generated
 * before the clock starts.
 */
export function benchScoring(
  protocols = 1000,
  days = 365,
): { protocols: number; days: number; ms: number; scoresPerSecond: number } {
  const rand = mulberry32(42);
  const start = Date.UTC(2025, 0, 1);
  const dates = Array.from({ length: days }, (_, d) =>
    new Date(start + d * 86_400_000).toISOString().slice(0, 10),
  );
  const inputs: ScoreInputs[] = [];
  for (let p = 0; p < protocols; p++) {
    const aum = 1e6 * 10 ** (rand() * 4);
    for (const asOf of dates) {
      inputs.push({
        asOf,
        dataDate: asOf,
        aumUsd: aum * (0.9 + rand() * 0.2),
        volumeUsd: aum * rand() * 0.01,
        holders: Math.floor(rand() * 50_000),
        topHolderPct: rand() * 60,
        redemptionQueueUsd: aum * rand() * 0.05,
        navDeviationBps: (rand() - 0.5) * 100,
        lastAttestationDate: dates[Math.max(0, dates.indexOf(asOf) - 30)]!,
        redemptionFrequencyDays: 7,
        noticePeriodDays: 2,
        redemptionGates: p % 2 === 0,
        audited: true,
        qualifiedCustodian: p % 3 !== 0,
        regulatoryStatus: 'EXEMPT',
      });
    }
  }
  const t0 = performance.now();
  let checksum = 0;
  for (const i of inputs) checksum += scoreProtocol(i).score;
  const ms = Math.round(performance.now() - t0);
  if (!Number.isFinite(checksum)) throw new Error('scoring produced a non-finite score');
  return { protocols, days, ms, scoresPerSecond: Math.round((protocols * days) / (ms / 1000)) };
}

// `node --import tsx test/bench/liquidity.ts` prints the engine measurement on its own.
if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  console.log(JSON.stringify(benchScoring()));
}

/** Called by `npm run bench` after the HTTP scenarios. */
export async function extraBenchmarks(): Promise<Record<string, unknown>> {
  return Promise.resolve({ scoring: benchScoring() });
}
