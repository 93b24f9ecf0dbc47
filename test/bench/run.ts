/**
 * `npm run bench`: starts the real server in a child process (the server's one thread and the load
 * generator share the machine's cores), then measures each scenario with autocannon on loopback —
 * requests/s, p50 and p99 — and prints ratios against each scenario's baseline. Bounded: fixed
 * duration per scenario.
 *
 * The time of each scenario is split into BENCH_ROUNDS rounds, and every round measures every
 * scenario in turn, so a scenario and its baseline are always measured seconds apart. A shared or
 * virtual machine drifts by tens of percent over a minute; a ratio taken within one round does not
 * see that drift. Reported: the median over rounds of req/s, p50 and p99, and of each round's
 * ratio to the baseline, with the lowest and highest ratio seen.
 *
 * BENCH_DURATION (s per scenario, default 20), BENCH_ROUNDS (default 10), BENCH_CONNECTIONS (default
 * 20), BENCH_ONLY (substrings separated by `|`: only the scenarios whose name contains one of them;
 * the extra benchmarks then run only when BENCH_ONLY names `extra`).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import type { BenchScenario } from './scenario.js';

type Keys = Record<'OBSERVER' | 'ANALYST' | 'PROFESSIONAL' | 'INSTITUTIONAL', string>;

const DURATION = Number(process.env.BENCH_DURATION ?? 20);
const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 10));
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 20);
const ONLY = process.env.BENCH_ONLY;

const foundation: BenchScenario[] = [
  { name: 'bare Fastify route', method: 'GET', path: '/bench/bare' },
  {
    name: 'GraphQL trivial query',
    method: 'POST',
    path: '/graphql',
    headers: (k) => ({ 'content-type': 'application/json', 'x-api-key': k.INSTITUTIONAL }),
    body: JSON.stringify({ query: '{ vessel(imo: "9074729") { imo name flag } }' }),
    baseline: 'bare Fastify route',
  },
  {
    name: 'REST /v1/vessels/lookup',
    method: 'GET',
    path: '/v1/vessels/lookup?imo=9074729',
    headers: (k) => ({ 'x-api-key': k.INSTITUTIONAL }),
    baseline: 'bare Fastify route',
  },
];

async function loadScenarios(): Promise<BenchScenario[]> {
  const all = [...foundation];
  for (const file of ['port-ops', 'liquidity']) {
    try {
      const mod = (await import(`./${file}.js`)) as { scenarios?: BenchScenario[] };
      all.push(...(mod.scenarios ?? []));
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ERR_MODULE_NOT_FOUND') throw e;
    }
  }
  const terms = ONLY?.split('|').filter(Boolean);
  return terms ? all.filter((s) => terms.some((t) => s.name.includes(t))) : all;
}

async function startServer(dir: string): Promise<{ child: ChildProcess; url: string; keys: Keys }> {
  const port = 4600 + Math.floor(Math.random() * 300);
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    env: {
      ...process.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      DATABASE_URL: join(dir, 'bench.sqlite'),
      DOCUMENTS_DIR: join(dir, 'documents'),
      LOG_LEVEL: 'warn',
      BENCH_ROUTES: 'true',
      // The bench measures throughput, not the plan limits.
      LIMIT_ANALYST_PER_MINUTE: '100000000',
      LIMIT_PROFESSIONAL_PER_MINUTE: '100000000',
      LIMIT_INSTITUTIONAL_PER_MINUTE: '100000000',
      LIMIT_ANALYST_PER_MONTH: 'unlimited',
      LIMIT_PROFESSIONAL_PER_MONTH: 'unlimited',
      PORT_OPS_PER_MINUTE: '100000000',
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 120_000;
  for (;;) {
    if (Date.now() > deadline) throw new Error(`server did not become ready:\n${out}`);
    try {
      if ((await fetch(`${url}/readyz`)).ok && /Institutional/.test(out)) break;
    } catch {
      /* not listening yet */
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  const keys = Object.fromEntries(
    ['Observer', 'Analyst', 'Professional', 'Institutional'].map((plan) => {
      const m = new RegExp(`${plan}\\s+account \\S+\\s+API key (\\S+)`).exec(out);
      if (!m) throw new Error(`no ${plan} key in server output`);
      return [plan.toUpperCase(), m[1]];
    }),
  ) as Keys;
  return { child, url, keys };
}

interface Sample {
  name: string;
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  non2xx: number;
  baseline?: string;
}

interface Row extends Sample {
  /** Median over rounds of this round's req/s ÷ the baseline's req/s in the same round. */
  ratio?: number;
  ratioMin?: number;
  ratioMax?: number;
  rounds: Sample[];
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

async function measure(url: string, keys: Keys, s: BenchScenario, seconds: number): Promise<Sample> {
  const result = await autocannon({
    url: url + s.path,
    method: s.method,
    headers: s.headers?.(keys),
    body: s.body,
    connections: CONNECTIONS,
    duration: seconds,
  });
  return {
    name: s.name,
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors,
    non2xx: result.non2xx,
    baseline: s.baseline,
  };
}

async function main(): Promise<void> {
  const scenarios = await loadScenarios();
  const dir = mkdtempSync(join(tmpdir(), 'tidegate-bench-'));
  const { child, url, keys } = await startServer(dir);
  const samples = new Map<string, Sample[]>(scenarios.map((s) => [s.name, []]));
  const ratios = new Map<string, number[]>(scenarios.map((s) => [s.name, []]));
  const extras: Record<string, unknown> = {};
  const seconds = Math.max(1, Math.round(DURATION / ROUNDS));
  try {
    for (const s of scenarios) await measure(url, keys, s, 2); // warm-up: JIT, caches, connection pools
    for (let round = 1; round <= ROUNDS; round++) {
      const thisRound = new Map<string, Sample>();
      for (const s of scenarios) {
        const sample = await measure(url, keys, s, seconds);
        thisRound.set(s.name, sample);
        samples.get(s.name)!.push(sample);
        const base = s.baseline ? thisRound.get(s.baseline) : undefined;
        if (base) ratios.get(s.name)!.push(sample.rps / base.rps);
        console.error(
          `  round ${round}/${ROUNDS} ${s.name}: ${sample.rps.toFixed(0)} req/s, p50 ${sample.p50} ms, p99 ${sample.p99} ms${base ? `, ${(sample.rps / base.rps).toFixed(2)} × baseline` : ''}${sample.non2xx ? `, ${sample.non2xx} non-2xx` : ''}`,
        );
      }
    }
    for (const file of ONLY && !ONLY.includes('extra') ? [] : ['liquidity', 'events']) {
      try {
        const mod = (await import(`./${file}.js`)) as {
          extraBenchmarks?: (ctx: { url: string; keys: Keys }) => Promise<Record<string, unknown>>;
        };
        if (mod.extraBenchmarks) {
          extras[file] = await mod.extraBenchmarks({ url, keys });
          console.log(JSON.stringify({ [file]: extras[file] }, null, 2));
        }
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'ERR_MODULE_NOT_FOUND') throw e;
      }
    }
  } finally {
    child.kill('SIGTERM');
  }

  const rows: Row[] = scenarios.map((s) => {
    const rounds = samples.get(s.name)!;
    const r = ratios.get(s.name)!;
    return {
      name: s.name,
      baseline: s.baseline,
      rps: median(rounds.map((x) => x.rps)),
      p50: median(rounds.map((x) => x.p50)),
      p99: median(rounds.map((x) => x.p99)),
      errors: rounds.reduce((n, x) => n + x.errors, 0),
      non2xx: rounds.reduce((n, x) => n + x.non2xx, 0),
      ...(r.length > 0 ? { ratio: median(r), ratioMin: Math.min(...r), ratioMax: Math.max(...r) } : {}),
      rounds,
    };
  });
  const cpu = cpus()[0]?.model ?? 'unknown CPU';
  console.log(
    `\nMachine: ${cpus().length} × ${cpu}, Node ${process.version}; ${CONNECTIONS} connections, ${ROUNDS} rounds × ${seconds} s per scenario; medians over rounds\n`,
  );
  console.log('| scenario | req/s | p50 ms | p99 ms | vs baseline (median of rounds; lowest–highest) |');
  console.log('|---|---:|---:|---:|---:|');
  for (const r of rows) {
    const ratio =
      r.ratio !== undefined
        ? `${r.ratio.toFixed(2)} × ${r.baseline} (${r.ratioMin!.toFixed(2)}–${r.ratioMax!.toFixed(2)})`
        : '—';
    const flag = r.errors || r.non2xx ? ` (errors ${r.errors}, non-2xx ${r.non2xx})` : '';
    console.log(`| ${r.name}${flag} | ${r.rps.toFixed(0)} | ${r.p50} | ${r.p99} | ${ratio} |`);
  }
  mkdirSync('data/bench', { recursive: true });
  writeFileSync(
    'data/bench/results.json',
    JSON.stringify({ at: new Date().toISOString(), cpu, rounds: ROUNDS, seconds, rows, extras }, null, 2),
  );
  rmSync(dir, { recursive: true, force: true });
}

await main();
