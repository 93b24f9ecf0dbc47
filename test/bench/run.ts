/**
 * `npm run bench`: starts the real server in a child process (the server's one thread and the load
 * generator share the machine's cores), then measures each scenario with autocannon on loopback —
 * requests/s, p50 and p99 — and prints ratios against each scenario's ceiling. Bounded: fixed
 * duration per scenario.
 *
 * The time of each scenario is split into BENCH_ROUNDS rounds, and every round measures every
 * scenario in turn, so a scenario and its ceiling are always measured seconds apart. A shared or
 * virtual machine drifts by tens of percent over a minute; a ratio taken within one round does not
 * see that drift. Reported: the median over rounds of req/s, p50 and p99, and of each round's
 * ratio to the ceiling, with the lowest and highest ratio seen.
 *
 * Ceilings: every heavy read is paired with a bare node:http server in another process answering
 * the same request with the bytes captured from the gateway at start (ceiling.ts), two ways: from a
 * ready Buffer (the wire ceiling, against which the gateway as shipped is judged) and re-serialized
 * per request (the json ceiling, against which the same read is judged cold: on a second gateway on
 * the same database with kept answers off, `ANSWER_CACHE_MB=0`). A plain Apollo Server 5 with
 * default settings (apollo-anchor.ts) serves the trivial query on the same schema, as the anchor of
 * the GraphQL pipeline. The mixed scenario (mixed.ts) writes its fixture, then replays one shared
 * sequence of requests; its ceiling replays the same sequence of answers' bytes.
 *
 * BENCH_DURATION (s per scenario, default 20), BENCH_ROUNDS (default 10), BENCH_CONNECTIONS (default
 * 20), BENCH_ONLY (substrings separated by `|`: only the scenarios whose name contains one of them;
 * the extra benchmarks then run only when BENCH_ONLY names `extra`), BENCH_DATABASE_URL (a
 * postgres:// URL: the servers run on PostgreSQL, on a fresh database named after the URL's with a
 * random suffix, created on that server and dropped at the end; SQLite otherwise), BENCH_CPU_PROFILE
 * (a directory: each gateway writes its CPU profile there when it exits).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import pg from 'pg';
import type { CapturedAnswer } from './ceiling.js';
import { CLOCK_TICKS, cpuTicks, localPostmaster, mainThreadTicks, serverTicks } from './proc.js';
import type {
  BenchKeys as Keys,
  BenchRequest,
  BenchScenario,
  BenchSequence,
  Dialect,
  PerDialect,
} from './scenario.js';

const DURATION = Number(process.env.BENCH_DURATION ?? 20);
const ROUNDS = Math.max(1, Number(process.env.BENCH_ROUNDS ?? 10));
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 20);
const ONLY = process.env.BENCH_ONLY;
const POSTGRES = process.env.BENCH_DATABASE_URL;
const DIALECT: Dialect = POSTGRES ? 'postgresql' : 'sqlite';

const TRIVIAL = JSON.stringify({ query: '{ vessel(imo: "9074729") { imo name flag } }' });
const gqlHeaders = (k: Keys) => ({ 'content-type': 'application/json', 'x-api-key': k.INSTITUTIONAL });

const foundation: BenchScenario[] = [
  // The floors: what the HTTP stack and the edge hooks cost before any work, each against its ceiling.
  // The GET sends no key (as in every earlier run); the POST sends the GraphQL scenarios' headers and body.
  {
    name: 'bare Fastify route in the gateway process',
    method: 'GET',
    path: '/bench/bare',
    ceiling: true,
    cold: false,
  },
  {
    name: 'bare Fastify POST route in the gateway process (a GraphQL body, parsed)',
    method: 'POST',
    path: '/bench/bare',
    headers: gqlHeaders,
    body: TRIVIAL,
    ceiling: true,
    cold: false,
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
  for (const file of ['port-ops', 'liquidity', 'mixed']) {
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
/** BENCH_CPU_PROFILE=dir: the gateways write V8 CPU profiles (`--cpu-prof`) there when they exit. */
const PROFILE_FLAGS = process.env.BENCH_CPU_PROFILE
  ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROFILE}`]
  : [];

/** A port nobody listens on now (the OS picks it). */
async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

/** The bench's database: a SQLite file in the run's directory, or a fresh PostgreSQL database. */
interface BenchDatabase {
  url: string;
  drop: () => Promise<void>;
  /** PostgreSQL on this machine: its postmaster's pid, so the server's CPU per request can be read. */
  postmaster?: number;
}

async function openBenchDatabase(dir: string): Promise<BenchDatabase> {
  if (!POSTGRES) return { url: join(dir, 'bench.sqlite'), drop: () => Promise.resolve() };
  const given = new URL(POSTGRES);
  const name = `${given.pathname.slice(1) || 'tidegate_bench'}_${randomBytes(4).toString('hex')}`;
  if (!/^[a-z_][a-z0-9_]*$/.test(name))
    throw new Error(`BENCH_DATABASE_URL: '${name}' is not a plain lower-case database name`);
  const admin = new URL(POSTGRES);
  admin.pathname = '/postgres';
  const onAdmin = async (sql: string) => {
    const client = new pg.Client({ connectionString: admin.toString() });
    await client.connect();
    try {
      await client.query(sql);
    } finally {
      await client.end();
    }
  };
  await onAdmin(`create database ${name}`);
  const url = new URL(POSTGRES);
  url.pathname = `/${name}`;
  console.error(`  PostgreSQL database ${name} created`);
  const postmaster = await localPostmaster(url.toString());
  return {
    url: url.toString(),
    ...(postmaster !== undefined ? { postmaster } : {}),
    drop: async () => {
      await onAdmin(`drop database if exists ${name} with (force)`);
      console.error(`  PostgreSQL database ${name} dropped`);
    },
  };
}

interface Server {
  child: ChildProcess;
  url: string;
  keys: Keys;
}

/**
 * Starts a gateway on `databaseUrl`. The first one seeds the demo and prints its keys; a second one
 * (`keys` given) finds the database seeded and uses the same keys.
 */
async function startServer(
  dir: string,
  databaseUrl: string,
  options: { keys?: Keys; env?: Record<string, string> } = {},
): Promise<Server> {
  if (!existsSync(SERVER_ENTRY)) throw new Error(`${SERVER_ENTRY} is missing: run npm run build first`);
  const port = await freePort();
  const child = spawn(process.execPath, [...SERVER_FLAGS, ...PROFILE_FLAGS, SERVER_ENTRY], {
    env: {
      ...process.env,
      PORT: String(port),
      HOST: '127.0.0.1',
      DATABASE_URL: databaseUrl,
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
      ...options.env,
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
    if (Date.now() > deadline || child.exitCode !== null)
      throw new Error(`server did not become ready:\n${out}`);
    try {
      if ((await fetch(`${url}/readyz`)).ok && (options.keys || /Institutional/.test(out))) break;
    } catch {
      /* not listening yet */
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  if (options.keys) return { child, url, keys: options.keys };
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
  const port = await freePort();
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
      path: `/s/${i}`,
      contentType: res.headers.get('content-type') ?? 'application/json',
      body,
    });
    console.error(`  captured ${s.name}: ${Buffer.byteLength(body).toLocaleString('en')} bytes`);
  }
  return answers;
}

/** What one row of the table measures: a scenario's request shape sent to one process. */
interface Probe {
  name: string;
  scenario: BenchScenario;
  kind: 'warm' | 'cold' | 'wire ceiling' | 'json ceiling';
  url: string;
  /** The request this probe sends: its own, or its ceiling's path with the same method, headers and body. */
  path: string;
  requests?: BenchRequest[];
  /** A shared sequence: each request of any connection is the next of it. */
  next?: () => BenchRequest;
  /** The probe this one is judged against, in the same round. */
  ceiling?: string;
  /** The gateway whose kept-answer counters this probe reads (a sequence on the warm gateway). */
  counters?: string;
  /** The process that answers (its CPU time per request is reported). */
  pid?: number;
}

interface Sample {
  name: string;
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  non2xx: number;
  /** CPU time (user + system, every thread) of the answering process per request, in µs. */
  cpuUs?: number;
  /** The same of its main thread alone (the event loop), in µs. */
  loopCpuUs?: number;
  /** CPU time of the whole local PostgreSQL server (every backend and helper process) per request, in µs. */
  databaseCpuUs?: number;
}

interface Row extends Sample {
  kind: Probe['kind'];
  ceiling?: string;
  /** Median over rounds of this round's req/s ÷ its ceiling's req/s in the same round. */
  share?: number;
  shareMin?: number;
  shareMax?: number;
  /** The same for `compareWith`. */
  compared?: number;
  /** Kept answers while this probe ran: hits ÷ queries whose results may be kept (and carried, spliced, joined ÷ them). */
  hitRate?: number;
  carriedRate?: number;
  splicedRate?: number;
  joinedRate?: number;
  /** V8's pauses in the gateway while this probe ran, over all rounds (from its counters). */
  pauses?: Pauses;
  rounds: Sample[];
}

/** Pauses of one generation: how many, their mean, and how many took longer than 10 ms. */
interface PauseCount {
  count: number;
  meanMs: number;
  over10ms: number;
}

/** Garbage-collection pauses: the young generation's (V8's scavenges) and the old's (its other kinds). */
interface Pauses {
  young: PauseCount;
  old: PauseCount;
}

function pausesText({ young, old }: Pauses): string {
  const one = (p: PauseCount) => `${p.count} (mean ${p.meanMs.toFixed(1)} ms, ${p.over10ms} over 10 ms)`;
  return `GC pauses: young generation ${one(young)}, old ${one(old)}`;
}

function pausesOf(counters: Record<string, number>): Pauses {
  const of = (kinds: string[]): PauseCount => {
    const sum = (what: string) => kinds.reduce((k, kind) => k + (counters[`gc:${kind}:${what}`] ?? 0), 0);
    const count = sum('count');
    return { count, meanMs: count > 0 ? (sum('seconds') * 1000) / count : 0, over10ms: sum('over10ms') };
  };
  return { young: of(['minor']), old: of(['major', 'incremental', 'weakcb']) };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

async function measure(keys: Keys, p: Probe, seconds: number, postmaster?: number): Promise<Sample> {
  const s = p.scenario;
  const next = p.next;
  const cpuBefore = cpuTicks(p.pid);
  const loopBefore = mainThreadTicks(p.pid);
  const databaseBefore = serverTicks(postmaster);
  const result = await autocannon({
    url: p.url + p.path,
    method: s.method,
    headers: s.headers?.(keys),
    body: s.body,
    requests: next
      ? [
          {
            setupRequest: (req) => {
              const r = next();
              return { ...req, method: r.method, path: r.path, headers: r.headers ?? {}, body: r.body ?? '' };
            },
          },
        ]
      : p.requests,
    connections: CONNECTIONS,
    duration: seconds,
  });
  const cpuAfter = cpuTicks(p.pid);
  const loopAfter = mainThreadTicks(p.pid);
  const databaseAfter = serverTicks(postmaster);
  const perRequest = (before: number | undefined, after: number | undefined) =>
    before !== undefined && after !== undefined && result.requests.total > 0
      ? ((after - before) * 1e6) / CLOCK_TICKS / result.requests.total
      : undefined;
  const cpuUs = perRequest(cpuBefore, cpuAfter);
  const loopCpuUs = perRequest(loopBefore, loopAfter);
  const databaseCpuUs = perRequest(databaseBefore, databaseAfter);
  return {
    name: p.name,
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors,
    non2xx: result.non2xx,
    ...(cpuUs !== undefined ? { cpuUs } : {}),
    ...(loopCpuUs !== undefined ? { loopCpuUs } : {}),
    ...(databaseCpuUs !== undefined ? { databaseCpuUs } : {}),
  };
}

/**
 * A gateway's counters from `/metrics`: the kept answers (`tidegate_answer_cache_total` by outcome, all
 * sources, as `answer:<outcome>`) and V8's pauses (`nodejs_gc_duration_seconds` by kind, as
 * `gc:<kind>:count`, `gc:<kind>:seconds` and `gc:<kind>:over10ms`, the pauses longer than 10 ms).
 */
async function gatewayCounters(url: string): Promise<Record<string, number>> {
  const text = await (await fetch(`${url}/metrics`)).text();
  const totals: Record<string, number> = {};
  const add = (key: string, value: string) => (totals[key] = (totals[key] ?? 0) + Number(value));
  for (const m of text.matchAll(/^tidegate_answer_cache_total\{[^}]*outcome="(\w+)"[^}]*\} (\S+)$/gm))
    add(`answer:${m[1]!}`, m[2]!);
  for (const m of text.matchAll(/^nodejs_gc_duration_seconds_(count|sum)\{kind="(\w+)"\} (\S+)$/gm))
    add(`gc:${m[2]!}:${m[1] === 'sum' ? 'seconds' : 'count'}`, m[3]!);
  // The 10 ms bucket counts the pauses up to 10 ms: the rest of the count is longer. Its labels are
  // read by name, in whatever order the exposition gives them.
  for (const m of text.matchAll(/^nodejs_gc_duration_seconds_bucket\{([^}]*)\} (\S+)$/gm)) {
    const labels = Object.fromEntries([...m[1]!.matchAll(/(\w+)="([^"]*)"/g)].map((l) => [l[1], l[2]]));
    if (labels.le === '0.01' && labels.kind)
      totals[`gc:${labels.kind}:over10ms`] = (totals[`gc:${labels.kind}:count`] ?? 0) - Number(m[2]);
  }
  return totals;
}

/** Resident set size of a process in MiB (Linux /proc; undefined elsewhere). */
function rssMiB(pid: number | undefined): number | undefined {
  try {
    const m = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Math.round(Number(m[1]) / 1024) : undefined;
  } catch {
    return undefined;
  }
}

const ceilingName = (name: string, kind: 'wire' | 'json') => `${name} — ${kind} ceiling`;
const coldName = (name: string) => `${name} — cold`;
const measuredCold = (s: BenchScenario) => s.ceiling === true && s.cold !== false && !s.sequence;

/** Every probe in measuring order (each ceiling just before what it judges). */
async function plan(
  all: BenchScenario[],
  chosen: BenchScenario[],
  warm: Server,
  databaseUrl: string,
  dir: string,
  helpers: ChildProcess[],
  startCold: () => Promise<Server>,
): Promise<Probe[]> {
  const byName = new Map(all.map((s) => [s.name, s]));
  const ceilingOwner = (s: BenchScenario) =>
    s.ceiling ? s : s.ceilingOf ? byName.get(s.ceilingOf) : undefined;
  const owners = [...new Set(chosen.flatMap((s) => ceilingOwner(s) ?? []))];
  const answers: CapturedAnswer[] = owners.length > 0 ? await capture(warm.url, warm.keys, owners) : [];
  const sequences = new Map<string, BenchSequence>();
  for (const [k, s] of chosen.entries()) {
    if (!s.sequence) continue;
    const sequence = await s.sequence({ url: warm.url, keys: warm.keys, databaseUrl });
    // Each sequence's answers under a prefix of its own.
    const prefixed = sequence.answers.map((a) => ({ ...a, path: `/q${k}${a.path}` }));
    sequences.set(s.name, { ...sequence, answers: prefixed });
    answers.push(...prefixed);
  }
  let ceilingUrl = '';
  let ceilingPid: number | undefined;
  if (answers.length > 0) {
    writeFileSync(join(dir, 'ceiling.json'), JSON.stringify(answers));
    const ceiling = await startHelper('test/bench/ceiling.ts', [join(dir, 'ceiling.json')]);
    helpers.push(ceiling.child);
    ceilingUrl = ceiling.url;
    ceilingPid = ceiling.child.pid;
  }
  let apolloUrl = '';
  let apolloPid: number | undefined;
  if (chosen.some((s) => s.target === 'apollo')) {
    const apollo = await startHelper('test/bench/apollo-anchor.ts', [databaseUrl]);
    helpers.push(apollo.child);
    apolloUrl = apollo.url;
    apolloPid = apollo.child.pid;
  }
  // Started after every fixture is written: the cold gateway reads the same database.
  const cold = chosen.some(measuredCold) ? await startCold() : undefined;
  const probes: Probe[] = [];
  const placed = new Set<string>();
  for (const s of chosen) {
    const sequence = sequences.get(s.name);
    if (sequence) {
      const wire = ceilingName(s.name, 'wire');
      const pathOf = (i: number) => `/wire${sequence.answers[i]!.path}`;
      probes.push({
        name: wire,
        scenario: s,
        kind: 'wire ceiling',
        pid: ceilingPid,
        url: ceilingUrl,
        path: '/',
        next: sequence.ceiling(pathOf),
      });
      probes.push({
        name: s.name,
        scenario: s,
        kind: 'warm',
        url: warm.url,
        path: '/',
        next: sequence.gateway,
        ceiling: wire,
        counters: warm.url,
        pid: warm.child.pid,
      });
      continue;
    }
    const owner = ceilingOwner(s);
    if (owner && !placed.has(owner.name)) {
      const i = owners.indexOf(owner);
      const c: BenchScenario = { ...owner, compareWith: undefined };
      probes.push({
        name: ceilingName(owner.name, 'wire'),
        scenario: c,
        kind: 'wire ceiling',
        pid: ceilingPid,
        url: ceilingUrl,
        path: `/wire/s/${i}`,
      });
      if (cold && measuredCold(owner))
        probes.push({
          name: ceilingName(owner.name, 'json'),
          scenario: c,
          kind: 'json ceiling',
          pid: ceilingPid,
          url: ceilingUrl,
          path: `/json/s/${i}`,
        });
      placed.add(owner.name);
    }
    const url = s.target === 'apollo' ? apolloUrl : warm.url;
    probes.push({
      name: s.name,
      scenario: s,
      kind: 'warm',
      url,
      path: s.path,
      requests: await s.mix?.({ url, keys: warm.keys }),
      ceiling: owner ? ceilingName(owner.name, 'wire') : undefined,
      pid: s.target === 'apollo' ? apolloPid : warm.child.pid,
    });
    if (cold && measuredCold(s))
      probes.push({
        name: coldName(s.name),
        scenario: s,
        kind: 'cold',
        url: cold.url,
        path: s.path,
        ceiling: ceilingName(s.name, 'json'),
        pid: cold.child.pid,
      });
  }
  return probes;
}

const forDialect = (v: PerDialect | undefined) => (typeof v === 'object' ? v[DIALECT] : v);

function shareText(r: Row, p: Probe): string {
  if (r.share === undefined) return '—';
  const s = p.scenario;
  const [share, p99] =
    p.kind === 'cold'
      ? [forDialect(s.coldTarget?.share), forDialect(s.coldTarget?.p99)]
      : [forDialect(s.targetShare), forDialect(s.targetP99)];
  const met =
    share === undefined
      ? ''
      : r.share >= share && (p99 === undefined || r.p99 <= p99)
        ? ' ✓'
        : ` ✗ (target ≥ ${share}${p99 !== undefined ? `, p99 ≤ ${p99} ms` : ''})`;
  const of = p.ceiling?.endsWith('json ceiling') ? 'json' : 'wire';
  return `**${r.share.toFixed(2)}** of ${of} (${r.shareMin!.toFixed(2)}–${r.shareMax!.toFixed(2)})${met}`;
}

async function main(): Promise<void> {
  const all = await loadScenarios();
  const chosen = selected(all);
  const dir = mkdtempSync(join(tmpdir(), 'tidegate-bench-'));
  const database = await openBenchDatabase(dir);
  const helpers: ChildProcess[] = [];
  const servers: ChildProcess[] = [];
  const extras: Record<string, unknown> = {};
  const seconds = Math.max(1, Math.round(DURATION / ROUNDS));
  let rows: Row[] = [];
  let probes: Probe[] = [];
  const rss: Record<string, number | undefined> = {};
  try {
    const warm = await startServer(dir, database.url);
    servers.push(warm.child);
    const { keys, url } = warm;
    let coldServer: Server | undefined;
    probes = await plan(all, chosen, warm, database.url, dir, helpers, async () => {
      coldServer = await startServer(dir, database.url, {
        keys,
        env: { ANSWER_CACHE_MB: '0', DEMO_SEED: 'false' },
      });
      servers.push(coldServer.child);
      return coldServer;
    });
    const samples = new Map<string, Sample[]>(probes.map((p) => [p.name, []]));
    const shares = new Map<string, number[]>(probes.map((p) => [p.name, []]));
    const compared = new Map<string, number[]>(probes.map((p) => [p.name, []]));
    const counted = new Map<string, Record<string, number>>();
    for (const p of probes) await measure(keys, p, 2, database.postmaster); // warm-up: JIT, caches, pools
    for (let round = 1; round <= ROUNDS; round++) {
      const thisRound = new Map<string, Sample>();
      for (const p of probes) {
        const before = p.counters ? await gatewayCounters(p.counters) : undefined;
        const sample = await measure(keys, p, seconds, database.postmaster);
        if (p.counters && before) {
          const after = await gatewayCounters(p.counters);
          const sum = counted.get(p.name) ?? {};
          for (const [k, v] of Object.entries(after)) sum[k] = (sum[k] ?? 0) + v - (before[k] ?? 0);
          counted.set(p.name, sum);
        }
        thisRound.set(p.name, sample);
        samples.get(p.name)!.push(sample);
        const base = p.ceiling ? thisRound.get(p.ceiling) : undefined;
        if (base) shares.get(p.name)!.push(sample.rps / base.rps);
        console.error(
          `  round ${round}/${ROUNDS} ${p.name}: ${sample.rps.toFixed(0)} req/s, p50 ${sample.p50} ms, p99 ${sample.p99} ms${base ? `, ${(sample.rps / base.rps).toFixed(2)} of ${p.ceiling!.endsWith('json ceiling') ? 'json' : 'wire'}` : ''}${sample.non2xx ? `, ${sample.non2xx} non-2xx` : ''}`,
        );
      }
      // Compared after the round: the other scenario may be measured later in it.
      for (const p of probes) {
        const other = p.kind === 'warm' && p.scenario.compareWith && thisRound.get(p.scenario.compareWith);
        if (other) compared.get(p.name)!.push(thisRound.get(p.name)!.rps / other.rps);
      }
    }
    rss.warm = rssMiB(warm.child.pid);
    if (coldServer) rss.cold = rssMiB(coldServer.child.pid);
    rows = probes.map((p) => {
      const rounds = samples.get(p.name)!;
      const r = shares.get(p.name)!;
      const c = compared.get(p.name)!;
      const n = counted.get(p.name);
      const outcome = (name: string) => n?.[`answer:${name}`] ?? 0;
      const total = ['hit', 'carried', 'spliced', 'joined', 'miss'].reduce((k, o) => k + outcome(o), 0);
      return {
        name: p.name,
        kind: p.kind,
        ceiling: p.ceiling,
        rps: median(rounds.map((x) => x.rps)),
        p50: median(rounds.map((x) => x.p50)),
        p99: median(rounds.map((x) => x.p99)),
        ...(rounds.every((x) => x.cpuUs !== undefined) ? { cpuUs: median(rounds.map((x) => x.cpuUs!)) } : {}),
        ...(rounds.every((x) => x.loopCpuUs !== undefined)
          ? { loopCpuUs: median(rounds.map((x) => x.loopCpuUs!)) }
          : {}),
        ...(rounds.every((x) => x.databaseCpuUs !== undefined)
          ? { databaseCpuUs: median(rounds.map((x) => x.databaseCpuUs!)) }
          : {}),
        errors: rounds.reduce((k, x) => k + x.errors, 0),
        non2xx: rounds.reduce((k, x) => k + x.non2xx, 0),
        ...(r.length > 0 ? { share: median(r), shareMin: Math.min(...r), shareMax: Math.max(...r) } : {}),
        ...(c.length > 0 ? { compared: median(c) } : {}),
        ...(n && total > 0
          ? {
              hitRate: outcome('hit') / total,
              carriedRate: outcome('carried') / total,
              splicedRate: outcome('spliced') / total,
              joinedRate: outcome('joined') / total,
            }
          : {}),
        ...(n ? { pauses: pausesOf(n) } : {}),
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
    for (const s of servers) s.kill('SIGTERM');
    for (const h of helpers) h.kill('SIGTERM');
    await Promise.all(
      servers.map((s) => (s.exitCode === null ? new Promise((r) => s.once('exit', r)) : Promise.resolve())),
    );
    await database.drop();
  }

  const byName = new Map(probes.map((p) => [p.name, p]));
  const cpu = cpus()[0]?.model ?? 'unknown CPU';
  console.log(
    `\nMachine: ${cpus().length} × ${cpu}, Node ${process.version}; database: ${DIALECT}; server: node ${[...SERVER_FLAGS, SERVER_ENTRY].join(' ')}; ${CONNECTIONS} connections, ${ROUNDS} rounds × ${seconds} s per scenario; medians over rounds\n`,
  );
  // PostgreSQL on this machine: its CPU per request beside the gateway's (on SQLite it is the gateway's).
  const withDatabase = rows.some((r) => r.databaseCpuUs !== undefined);
  console.log(
    `| scenario | req/s | p50 ms | p99 ms | server CPU µs/req (event loop) |${withDatabase ? ' PostgreSQL CPU µs/req |' : ''} share of its ceiling (median of rounds; lowest–highest) |`,
  );
  console.log(`|---|---:|---:|---:|---:|${withDatabase ? '---:|' : ''}---:|`);
  for (const r of rows) {
    const flag = r.errors || r.non2xx ? ` (errors ${r.errors}, non-2xx ${r.non2xx})` : '';
    const p = byName.get(r.name)!;
    const share = p.kind.endsWith('ceiling') ? p.kind : shareText(r, p);
    const kept =
      r.hitRate !== undefined
        ? `; kept answers: ${(r.hitRate * 100).toFixed(0)} % hits, ${(r.carriedRate! * 100).toFixed(0)} % carried, ${(r.splicedRate! * 100).toFixed(0)} % spliced, ${(r.joinedRate! * 100).toFixed(0)} % joined; RSS at the end ${rss.warm ?? '?'} MiB${r.pauses ? `; ${pausesText(r.pauses)}` : ''}`
        : '';
    const cpuText =
      r.cpuUs === undefined
        ? '—'
        : `${r.cpuUs.toFixed(0)}${r.loopCpuUs !== undefined ? ` (${r.loopCpuUs.toFixed(0)})` : ''}`;
    const databaseText = !withDatabase
      ? ''
      : ` ${p.kind.endsWith('ceiling') || r.databaseCpuUs === undefined ? '—' : r.databaseCpuUs.toFixed(0)} |`;
    console.log(
      `| ${r.name}${flag} | ${r.rps.toFixed(0)} | ${r.p50} | ${r.p99} | ${cpuText} |${databaseText} ${share}${kept} |`,
    );
  }
  const anchors = rows.filter((r) => r.compared !== undefined);
  if (anchors.length > 0) {
    console.log('');
    for (const r of anchors)
      console.log(
        `${r.name} ÷ ${byName.get(r.name)!.scenario.compareWith}: ${r.compared!.toFixed(2)} (median of rounds)`,
      );
  }
  console.log(
    `\nRSS of the gateways at the end: warm ${rss.warm ?? '?'} MiB${rss.cold !== undefined ? `, cold (ANSWER_CACHE_MB=0) ${rss.cold} MiB` : ''}`,
  );
  mkdirSync('data/bench', { recursive: true });
  writeFileSync(
    'data/bench/results.json',
    JSON.stringify(
      {
        at: new Date().toISOString(),
        cpu,
        dialect: DIALECT,
        rounds: ROUNDS,
        seconds,
        rssMiB: rss,
        rows,
        extras,
      },
      null,
      2,
    ),
  );
  rmSync(dir, { recursive: true, force: true });
}

await main();
