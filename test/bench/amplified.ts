/**
 * `node --import tsx test/bench/amplified.ts`: does one expensive operation in flight stall the
 * gateway for everyone else? Starts the real server in a child process on a fresh demo database,
 * then probes GET /healthz one request after another (every 10 ms) in three phases of
 * AMPLIFIED_SECONDS each (default 10):
 *   1. idle: nothing else running;
 *   2. amplified: one operation at the default cost limit (aliases of the costliest computing fields,
 *      as many as GRAPHQL_MAX_COST admits) kept in flight back to back;
 *   3. refused: a 1,000-alias portCallPrediction query sent back to back, which demand control must
 *      refuse before execution.
 * Prints /healthz p50, p99 and max per phase, and what the heavy requests got. Target:
 * p99 ≤ 50 ms in phase 2.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { getOperationAST, parse } from 'graphql';
import { loadConfig } from '../../src/config.js';
import { estimateCost } from '../../src/gateway/pipeline/demand.js';
import { gatewaySchema } from '../../src/modules.js';
import { startGatewayProcess } from '../events/process.js';

const SECONDS = Number(process.env.AMPLIFIED_SECONDS ?? 10);

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? NaN;
}

async function probeHealth(url: string, until: number): Promise<number[]> {
  const times: number[] = [];
  while (Date.now() < until) {
    const start = performance.now();
    await (await fetch(`${url}/healthz`)).arrayBuffer();
    times.push(performance.now() - start);
    await new Promise((r) => setTimeout(r, 10));
  }
  return times.sort((a, b) => a - b);
}

/** Sends `body` back to back until `until`; returns each answer's status, error code and duration. */
async function hammer(url: string, key: string, body: string, until: number) {
  const results: Array<{ status: number; code: string; ms: number }> = [];
  while (Date.now() < until) {
    const start = performance.now();
    const res = await fetch(`${url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': key },
      body,
    });
    const json = (await res.json()) as { errors?: Array<{ extensions?: { code?: string } }> };
    results.push({
      status: res.status,
      code: json.errors?.[0]?.extensions?.code ?? 'OK',
      ms: performance.now() - start,
    });
  }
  return results;
}

function line(name: string, times: number[], extra = ''): string {
  const f = (n: number) => n.toFixed(1).padStart(7);
  return `${name.padEnd(11)} healthz n=${String(times.length).padStart(4)} p50 ${f(percentile(times, 0.5))} ms  p99 ${f(percentile(times, 0.99))} ms  max ${f(times.at(-1) ?? NaN)} ms  ${extra}`;
}

function summary(results: Array<{ status: number; code: string; ms: number }>): string {
  const codes = new Map<string, number>();
  for (const r of results) codes.set(`${r.status} ${r.code}`, (codes.get(`${r.status} ${r.code}`) ?? 0) + 1);
  const mean = results.reduce((s, r) => s + r.ms, 0) / Math.max(1, results.length);
  return `| heavy: ${results.length} sent, mean ${mean.toFixed(0)} ms, ${[...codes].map(([c, n]) => `${n}× ${c}`).join(', ')}`;
}

const dir = mkdtempSync(join(tmpdir(), 'tidegate-amplified-'));
const gateway = await startGatewayProcess(
  {
    DATABASE_URL: join(dir, 'bench.sqlite'),
    DOCUMENTS_DIR: join(dir, 'documents'),
    DEMO_SEED: 'true',
    // The bench measures the event loop, not the plan limits.
    PORT_OPS_PER_MINUTE: '100000000',
  },
  180_000,
);
try {
  const key = /Institutional\s+account \S+\s+API key (\S+)/.exec(gateway.output())![1]!;
  const calls = await fetch(`${gateway.url}/graphql`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-api-key': key },
    body: JSON.stringify({ query: '{ portCalls(first: 1, status: SCHEDULED) { nodes { id } } }' }),
  });
  const callId = ((await calls.json()) as { data: { portCalls: { nodes: Array<{ id: string }> } } }).data
    .portCalls.nodes[0]!.id;

  // As many of the costliest fields as the default limit admits, costliest first.
  const schema = gatewaySchema();
  const maxCost = loadConfig({}).graphqlMaxCost;
  const pool = [
    `portCallPrediction(portCallId: "${callId}") { basis departureAt { p50 } }`,
    'vendorPerformance { rows { orders onTimeRate } }',
    'bunkerVolumes { rows { quantity } }',
    'portCallTurnaround(byVesselType: true, period: MONTH) { rows { calls } }',
    'bunkerDemandForecast(portLocode: "SGSIN") { months { p50 } }',
    'vendorSpend { rows { total } }',
  ];
  const costOf = (query: string) => {
    const document = parse(query);
    return estimateCost(schema, document, getOperationAST(document)!, {});
  };
  const fields: string[] = [];
  for (const field of pool.flatMap((f) => Array.from({ length: 10 }, () => f))) {
    const next = [...fields, field];
    const query = `{ ${next.map((f, i) => `a${i}: ${f}`).join(' ')} }`;
    if (costOf(query) <= maxCost) fields.push(field);
  }
  const amplified = `{ ${fields.map((f, i) => `a${i}: ${f}`).join(' ')} }`;
  const refused = `{ ${Array.from({ length: 1000 }, (_, i) => `p${i}: ${pool[0]}`).join(' ')} }`;
  console.log(
    `amplified operation: ${fields.length} computing fields, estimated cost ${costOf(amplified)} (limit ${maxCost}); refused operation: cost ${costOf(refused)}`,
  );

  const idle = await probeHealth(gateway.url, Date.now() + SECONDS * 1000);
  console.log(line('idle', idle));
  for (const [name, query] of [
    ['amplified', amplified],
    ['refused', refused],
  ] as const) {
    const until = Date.now() + SECONDS * 1000;
    const [times, heavy] = await Promise.all([
      probeHealth(gateway.url, until),
      hammer(gateway.url, key, JSON.stringify({ query }), until),
    ]);
    console.log(line(name, times, summary(heavy)));
  }
} finally {
  await gateway.stop();
  rmSync(dir, { recursive: true, force: true });
}
