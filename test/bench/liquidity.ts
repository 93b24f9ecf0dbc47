import { pathToFileURL } from 'node:url';
import { scoreProtocol, type ScoreInputs } from '../../src/liquidity/engine/score.js';
import { mulberry32 } from '../../src/kernel/random.js';
import type { BenchKeys, BenchScenario } from './scenario.js';

/** Liquidity scenarios for `npm run bench`, each against its ceiling (Institutional key). */
const PROTOCOLS_QUERY = `query BenchProtocols { protocols(first: 20) { nodes { slug name category liquidityScore liquidityTier } } }`;
const MARKET_QUERY = `query BenchMarket { market { protocolCount totalAumUsd averageScore averageYieldPct tierDistribution { L1 L2 L3 ILLIQUID } indices { code score } } }`;
const inst = (k: BenchKeys) => ({ 'x-api-key': k.INSTITUTIONAL });
const gqlHeaders = (k: BenchKeys) => ({ ...inst(k), 'content-type': 'application/json' });
const READ = { ceiling: true, targetShare: 0.5 } as const;

export const scenarios: BenchScenario[] = [
  {
    name: 'GraphQL protocols(first: 20), 5 fields',
    method: 'POST',
    path: '/graphql',
    headers: gqlHeaders,
    body: JSON.stringify({ query: PROTOCOLS_QUERY }),
    ...READ,
  },
  {
    name: 'REST /v1/protocols?limit=100',
    method: 'GET',
    path: '/v1/protocols?limit=100',
    headers: inst,
    ...READ,
    coldTarget: { share: { sqlite: 0.3, postgresql: 0.2 } },
  },
  { name: 'REST /v1/market', method: 'GET', path: '/v1/market', headers: inst, ...READ },
  {
    name: 'GraphQL market',
    method: 'POST',
    path: '/graphql',
    headers: gqlHeaders,
    body: JSON.stringify({ query: MARKET_QUERY }),
    ...READ,
  },
  { name: 'REST /v1/scores', method: 'GET', path: '/v1/scores', headers: inst, ...READ },
  {
    name: 'REST /v1/scores/:slug/history',
    method: 'GET',
    path: '/v1/scores/harbor-treasury/history',
    headers: inst,
    ...READ,
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
