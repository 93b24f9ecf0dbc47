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
 * Ceilings: every heavy read is paired with a bare node:http server in another process answering
 * the same request with the same bytes, captured from the gateway at start and re-serialized per
 * request (ceiling.ts); its row reports the share of that ceiling. A plain Apollo Server 5 with
 * default settings (apollo-anchor.ts) serves the trivial query on the same schema, as the anchor of
 * the GraphQL pipeline.
 *
 * BENCH_DURATION (s per scenario, default 20), BENCH_ROUNDS (default 10), BENCH_CONNECTIONS (default
 * 20), BENCH_ONLY (substrings separated by `|`: only the scenarios whose name contains one of them;
 * the extra benchmarks then run only when BENCH_ONLY names `extra`).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import type { CapturedAnswer } from './ceiling.js';
import type { BenchKeys as Keys, BenchRequest, BenchScenario } from './scenario.js';

const DURATION = Number(process.env.BENCH_DURATION ?? 20);
const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 10));
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 20);
const ONLY = process.env.BENCH_ONLY;

const TRIVIAL = JSON.stringify({ query: '{ vessel(imo: "9074729") { imo name flag } }' });
const gqlHeaders = (k: Keys) => ({ 'content-type': 'application/json', 'x-api-key': k.INSTITUTIONAL });

const foundation: BenchScenario[] = [
  // The floors: what the HTTP stack and the edge hooks cost before any work, each against its ceiling.
  // The GET sends no key (as in every earlier run); the POST sends the GraphQL scenarios' headers and body.
  { name: 'bare Fastify route in the gateway process', method: 'GET', path: '/bench/bare', ceiling: true },
  {
    name: 'bare Fastify POST route in the gateway process (a GraphQL body, parsed)',
    method: 'POST',
    path: '/bench/bare',
    headers: gqlHeaders,
    body: TRIVIAL,
    ceiling: true,
  },
  {
    name: 'GraphQL trivial query',
    method: 'POST',
    path: '/graphql',
    headers: gqlHeaders,
    body: TRIVIAL,
    ceiling: true,
    compareWith: 'plain Apollo Server 5: trivial query',
  },
  {
    name: 'plain Apollo Server 5: trivial query',
    method: 'POST',
    path: '/',
    headers: gqlHeaders,
    body: TRIVIAL,
    target: 'apollo',
    ceilingOf: 'GraphQL trivial query',
  },
  {
    name: 'REST /v1/vessels/lookup',
    method: 'GET',
    path: '/v1/vessels/lookup?imo=9074729',
    headers: (k) => ({ 'x-api-key': k.INSTITUTIONAL }),
    ceiling: true,
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
  return all;
}

function selected(all: BenchScenario[]): BenchScenario[] {
  const terms = ONLY?.split('|').filter(Boolean);
  return terms ? all.filter((s) => terms.some((t) => s.name.includes(t))) : all;
}

/**
 * The server as production runs it: the compiled JavaScript that `npm install` builds.
 * BENCH_SERVER_ENTRY names another build (e.g. a copy of dist/ made before a change, kept inside
 * the package so it finds package.json), to measure before and after on the same machine state.
 */
const SERVER_ENTRY = process.env.BENCH_SERVER_ENTRY ?? 'dist/src/main.js';

/**
 * The Node flags `npm start` runs the server with (package.json's start script, `node <flags>
 * dist/src/main.js`), so the bench tunes the server's heap exactly as production does.
 */
function startFlags(): string[] {
  const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as { scripts: { start: string } };
  const words = pkg.scripts.start.trim().split(/\s+/);
  if (words[0] !== 'node')
    throw new Error(`package.json's start script does not run node: ${pkg.scripts.start}`);
  return words.slice(1).filter((w) => w.startsWith('--'));
}
const SERVER_FLAGS = startFlags();

async function startServer(dir: string): Promise<{ child: ChildProcess; url: string; keys: Keys }> {
  if (!existsSync(SERVER_ENTRY)) throw new Error(`${SERVER_ENTRY} is missing: run npm run build first`);
  const port = 4600 + Math.floor(Math.random() * 300);
  const child = spawn(process.execPath, [...SERVER_FLAGS, SERVER_ENTRY], {
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
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  // The demo credentials banner goes to stderr (stdout stays JSON log lines): read both.
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (out += d.toString()));
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

/** A helper process of the bench (ceiling, Apollo anchor) that prints `ready` when it listens. */
async function startHelper(script: string, args: string[]): Promise<{ child: ChildProcess; url: string }> {
  const port = 4900 + Math.floor(Math.random() * 300);
  const child = spawn(process.execPath, ['--import', 'tsx', script, String(port), ...args], {
    env: { ...process.env, LOG_LEVEL: 'warn' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`${script} did not start`)), 60_000);
    child.stdout!.on('data', (d: Buffer) => {
      if (d.toString().includes('ready')) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('exit', (code) => reject(new Error(`${script} exited with ${code}`)));
  });
  return { child, url: `http://127.0.0.1:${port}` };
}

/** The gateway's answer to each ceiling scenario, to be served by the ceiling process. */
async function capture(url: string, keys: Keys, scenarios: BenchScenario[]): Promise<CapturedAnswer[]> {
  const answers: CapturedAnswer[] = [];
  for (const [i, s] of scenarios.entries()) {
    const res = await fetch(url + s.path, { method: s.method, headers: s.headers?.(keys), body: s.body });
    const body = await res.text();
    if (!res.ok || body.includes('"errors"'))
      throw new Error(`${s.name}: ${res.status} ${body.slice(0, 300)}`);
    answers.push({
      path: `/c/${i}`,
      contentType: res.headers.get('content-type') ?? 'application/json',
      body,
    });
    console.error(`  captured ${s.name}: ${Buffer.byteLength(body).toLocaleString('en')} bytes`);
  }
  return answers;
}

interface Target {
  url: string;
  /** The request this scenario sends: its own, or its ceiling's path with the same method, headers and body. */
  path: string;
  requests?: BenchRequest[];
}

interface Sample {
  name: string;
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  non2xx: number;
}

interface Row extends Sample {
  /** Median over rounds of this round's req/s ÷ its ceiling's req/s in the same round. */
  share?: number;
  shareMin?: number;
  shareMax?: number;
  /** The same for `compareWith`. */
  compared?: number;
  rounds: Sample[];
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

async function measure(keys: Keys, s: BenchScenario, t: Target, seconds: number): Promise<Sample> {
  const result = await autocannon({
    url: t.url + t.path,
    method: s.method,
    headers: s.headers?.(keys),
    body: s.body,
    requests: t.requests,
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
  };
}

const ceilingName = (name: string) => `${name} — ceiling`;

/** Every scenario, then the ceilings and the helper processes they need, in measuring order. */
interface Plan {
  /** Each scenario follows its ceiling, so the two are measured seconds apart in every round. */
  order: BenchScenario[];
  targets: Map<string, Target>;
}

async function plan(
  all: BenchScenario[],
  chosen: BenchScenario[],
  gateway: string,
  keys: Keys,
  dir: string,
  helpers: ChildProcess[],
): Promise<Plan> {
  const byName = new Map(all.map((s) => [s.name, s]));
  const ceilingOwner = (s: BenchScenario) =>
    s.ceiling ? s : s.ceilingOf ? byName.get(s.ceilingOf) : undefined;
  const owners = [...new Set(chosen.flatMap((s) => ceilingOwner(s) ?? []))];
  const targets = new Map<string, Target>();
  const order: BenchScenario[] = [];
  let ceilingUrl = '';
  if (owners.length > 0) {
    writeFileSync(join(dir, 'ceiling.json'), JSON.stringify(await capture(gateway, keys, owners)));
    const ceiling = await startHelper('test/bench/ceiling.ts', [join(dir, 'ceiling.json')]);
    helpers.push(ceiling.child);
    ceilingUrl = ceiling.url;
  }
  let apolloUrl = '';
  if (chosen.some((s) => s.target === 'apollo')) {
    const apollo = await startHelper('test/bench/apollo-anchor.ts', [join(dir, 'bench.sqlite')]);
    helpers.push(apollo.child);
    apolloUrl = apollo.url;
  }
  const placed = new Set<string>();
  for (const s of chosen) {
    const owner = ceilingOwner(s);
    if (owner && !placed.has(owner.name)) {
      const c: BenchScenario = {
        ...owner,
        name: ceilingName(owner.name),
        ceiling: false,
        compareWith: undefined,
      };
      order.push(c);
      targets.set(c.name, { url: ceilingUrl, path: `/c/${owners.indexOf(owner)}` });
      placed.add(owner.name);
    }
    order.push(s);
    const url = s.target === 'apollo' ? apolloUrl : gateway;
    targets.set(s.name, { url, path: s.path, requests: await s.mix?.({ url, keys }) });
  }
  return { order, targets };
}

function shareText(r: Row, s: BenchScenario): string {
  if (r.share === undefined) return '—';
  const met =
    s.targetShare === undefined
      ? ''
      : r.share >= s.targetShare && (s.targetP99 === undefined || r.p99 <= s.targetP99)
        ? ' ✓'
        : ` ✗ (target ≥ ${s.targetShare}${s.targetP99 !== undefined ? `, p99 ≤ ${s.targetP99} ms` : ''})`;
  return `**${r.share.toFixed(2)}** (${r.shareMin!.toFixed(2)}–${r.shareMax!.toFixed(2)})${met}`;
}

async function main(): Promise<void> {
  const all = await loadScenarios();
  const chosen = selected(all);
  const dir = mkdtempSync(join(tmpdir(), 'tidegate-bench-'));
  const helpers: ChildProcess[] = [];
  const { child, url, keys } = await startServer(dir);
  const extras: Record<string, unknown> = {};
  const seconds = Math.max(1, Math.round(DURATION / ROUNDS));
  let rows: Row[] = [];
  try {
    const { order, targets } = await plan(all, chosen, url, keys, dir, helpers);
    const ceilingOf = (s: BenchScenario) =>
      s.ceiling ? ceilingName(s.name) : s.ceilingOf ? ceilingName(s.ceilingOf) : undefined;
    const samples = new Map<string, Sample[]>(order.map((s) => [s.name, []]));
    const shares = new Map<string, number[]>(order.map((s) => [s.name, []]));
    const compared = new Map<string, number[]>(order.map((s) => [s.name, []]));
    for (const s of order) await measure(keys, s, targets.get(s.name)!, 2); // warm-up: JIT, caches, pools
    for (let round = 1; round <= ROUNDS; round++) {
      const thisRound = new Map<string, Sample>();
      for (const s of order) {
        const sample = await measure(keys, s, targets.get(s.name)!, seconds);
        thisRound.set(s.name, sample);
        samples.get(s.name)!.push(sample);
        const base = thisRound.get(ceilingOf(s) ?? '');
        if (base) shares.get(s.name)!.push(sample.rps / base.rps);
        console.error(
          `  round ${round}/${ROUNDS} ${s.name}: ${sample.rps.toFixed(0)} req/s, p50 ${sample.p50} ms, p99 ${sample.p99} ms${base ? `, ${(sample.rps / base.rps).toFixed(2)} of ceiling` : ''}${sample.non2xx ? `, ${sample.non2xx} non-2xx` : ''}`,
        );
      }
      // Compared after the round: the other scenario may be measured later in it.
      for (const s of order) {
        const other = s.compareWith && thisRound.get(s.compareWith);
        if (other) compared.get(s.name)!.push(thisRound.get(s.name)!.rps / other.rps);
      }
    }
    rows = order.map((s) => {
      const rounds = samples.get(s.name)!;
      const r = shares.get(s.name)!;
      const c = compared.get(s.name)!;
      return {
        name: s.name,
        rps: median(rounds.map((x) => x.rps)),
        p50: median(rounds.map((x) => x.p50)),
        p99: median(rounds.map((x) => x.p99)),
        errors: rounds.reduce((n, x) => n + x.errors, 0),
        non2xx: rounds.reduce((n, x) => n + x.non2xx, 0),
        ...(r.length > 0 ? { share: median(r), shareMin: Math.min(...r), shareMax: Math.max(...r) } : {}),
        ...(c.length > 0 ? { compared: median(c) } : {}),
        rounds,
      };
    });
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
    for (const h of helpers) h.kill('SIGTERM');
  }

  const byName = new Map(all.map((s) => [s.name, s]));
  const cpu = cpus()[0]?.model ?? 'unknown CPU';
  console.log(
    `\nMachine: ${cpus().length} × ${cpu}, Node ${process.version}; server: node ${[...SERVER_FLAGS, SERVER_ENTRY].join(' ')}; ${CONNECTIONS} connections, ${ROUNDS} rounds × ${seconds} s per scenario; medians over rounds\n`,
  );
  console.log(
    '| scenario | req/s | p50 ms | p99 ms | share of its ceiling (median of rounds; lowest–highest) |',
  );
  console.log('|---|---:|---:|---:|---:|');
  for (const r of rows) {
    const flag = r.errors || r.non2xx ? ` (errors ${r.errors}, non-2xx ${r.non2xx})` : '';
    const s = byName.get(r.name);
    console.log(
      `| ${r.name}${flag} | ${r.rps.toFixed(0)} | ${r.p50} | ${r.p99} | ${s ? shareText(r, s) : 'ceiling'} |`,
    );
  }
  const anchors = rows.filter((r) => r.compared !== undefined);
  if (anchors.length > 0) {
    console.log('');
    for (const r of anchors)
      console.log(
        `${r.name} ÷ ${byName.get(r.name)!.compareWith}: ${r.compared!.toFixed(2)} (median of rounds)`,
      );
  }
  mkdirSync('data/bench', { recursive: true });
  writeFileSync(
    'data/bench/results.json',
    JSON.stringify({ at: new Date().toISOString(), cpu, rounds: ROUNDS, seconds, rows, extras }, null, 2),
  );
  rmSync(dir, { recursive: true, force: true });
}

await main();
