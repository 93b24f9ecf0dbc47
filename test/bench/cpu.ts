/**
 * CPU time per request of the reads that execute (kept answers off, `ANSWER_CACHE_MB=0`) and of the
 * two writes of the mixed bench (a new service order, an order's confirmation, each run confirming an
 * order made beforehand), in this process through Fastify's `inject` (no sockets): what a change to
 * the execution path gains or costs, measured in CPU time rather than throughput, so a busy machine moves it far less than it
 * moves req/s. Not a substitute for `npm run bench` (no HTTP stack, one request at a time).
 * `node --import tsx test/bench/cpu.ts [ITERATIONS]`; `BENCH_DATABASE_URL` (postgres://…) runs it on
 * a fresh PostgreSQL database (created and dropped), SQLite otherwise, and when that server runs on this
 * machine also reports its CPU over the same requests; `BENCH_CPU_PROFILE=dir` writes a
 * CPU profile of each read's measured requests (not of the start) into `dir`; `BENCH_KEPT=true`
 * keeps answers (the default `ANSWER_CACHE_MB`), so the reads measure a warm request instead;
 * `SQLITE_SYNCHRONOUS` is passed on as the server reads it.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import pg from 'pg';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { systemClock } from '../../src/kernel/clock.js';
import { seedDemo } from '../../src/seed.js';
import { DASHBOARD_QUERY } from './port-ops.js';
import { CLOCK_TICKS, localPostmaster, serverTicks } from './proc.js';
import { benchFlag } from './scenario.js';

const ITERATIONS = Number(process.argv[2] ?? 300);
const POSTGRES = process.env.BENCH_DATABASE_URL;
const ONLY = process.env.BENCH_ONLY;
const KEPT = benchFlag('BENCH_KEPT');

interface Read {
  name: string;
  method: 'GET' | 'POST';
  url: string;
  body?: string;
  /** The status every run answers with; 200 unless given. */
  status?: number;
  /** Run `i` requests `urls(i)` instead of `url` (a write that needs a row of its own each time). */
  urls?: (i: number) => string;
}
const READS: Read[] = [
  {
    name: 'GraphQL dashboard',
    method: 'POST',
    url: '/graphql',
    body: JSON.stringify({ query: DASHBOARD_QUERY, operationName: 'Dashboard' }),
  },
  { name: 'REST dashboard', method: 'GET', url: '/v1/dashboard/port-calls?limit=50' },
  { name: 'REST /v1/protocols?limit=100', method: 'GET', url: '/v1/protocols?limit=100' },
  { name: 'REST /v1/scores', method: 'GET', url: '/v1/scores' },
  {
    name: 'REST /v1/port-calls?status=SCHEDULED&limit=10',
    method: 'GET',
    url: '/v1/port-calls?status=SCHEDULED&limit=10',
  },
  { name: 'REST /v1/market', method: 'GET', url: '/v1/market' },
  {
    name: 'GraphQL protocols(first: 20)',
    method: 'POST',
    url: '/graphql',
    body: JSON.stringify({
      query: '{ protocols(first: 20) { nodes { slug name category liquidityScore liquidityTier } } }',
    }),
  },
];

async function postgresDatabase(): Promise<{ url: string; drop: () => Promise<void> }> {
  const name = `tidegate_cpu_${randomBytes(4).toString('hex')}`;
  const admin = new URL(POSTGRES!);
  admin.pathname = '/postgres';
  const run = async (sql: string) => {
    const client = new pg.Client({ connectionString: admin.toString() });
    await client.connect();
    try {
      await client.query(sql);
    } finally {
      await client.end();
    }
  };
  await run(`create database ${name}`);
  const url = new URL(POSTGRES!);
  url.pathname = `/${name}`;
  return { url: url.toString(), drop: () => run(`drop database if exists ${name} with (force)`) };
}

/**
 * The write measured beside the reads: a new bunkering order on a scheduled call of the account, by
 * a vendor that serves the call's port (the mixed bench's most common write). Every run adds one.
 */
async function newServiceOrder(fastify: FastifyInstance, key: string): Promise<Read> {
  const list = async (url: string) =>
    (JSON.parse((await fastify.inject({ url, headers: { 'x-api-key': key } })).body) as { data: Json[] })
      .data;
  const calls = await list('/v1/port-calls?status=SCHEDULED&limit=100');
  const vendors = await list('/v1/vendors?serviceType=BUNKERING&limit=100');
  const serves = (v: Json, c: Json) => (v.ports as string[]).includes(c.portLocode as string);
  const call = calls.find((c) => vendors.some((v) => serves(v, c)));
  if (!call) throw new Error('the demo account has no scheduled call that a bunkering vendor serves');
  const vendor = vendors.find((v) => serves(v, call))!;
  return {
    name: 'REST new service order (a write)',
    method: 'POST',
    url: '/v1/service-orders',
    status: 201,
    body: JSON.stringify({
      portCallId: call.id,
      serviceType: 'BUNKERING',
      vendorId: vendor.id,
      details: { quantity: 500, unit: 'MT', fuelType: 'VLSFO' },
    }),
  };
}

const CONFIRMATION = 'REST order confirmation (a write)';

/**
 * The other write of the mixed bench: the confirmation of a REQUESTED order, each run its own order
 * (made beforehand by `order`, as many as the runs need, not measured).
 */
async function confirmation(fastify: FastifyInstance, key: string, order: Read, runs: number): Promise<Read> {
  const ids: string[] = [];
  for (let i = 0; i < runs; i++) {
    const created = await fastify.inject({
      method: 'POST',
      url: order.url,
      headers: { 'x-api-key': key, 'content-type': 'application/json' },
      payload: order.body,
    });
    if (created.statusCode !== 201)
      throw new Error(`an order to confirm: ${created.statusCode} ${created.body}`);
    ids.push((JSON.parse(created.body) as Json).id as string);
  }
  return {
    name: CONFIRMATION,
    method: 'POST',
    url: `/v1/service-orders/${ids[0]}/status`,
    urls: (i) => `/v1/service-orders/${ids[i]}/status`,
    body: JSON.stringify({ status: 'CONFIRMED' }),
  };
}

type Json = Record<string, unknown>;

const dir = mkdtempSync(join(tmpdir(), 'tidegate-cpu-'));
const database = POSTGRES
  ? await postgresDatabase()
  : { url: join(dir, 'cpu.sqlite'), drop: () => Promise.resolve() };
try {
  const config = loadConfig({
    DATABASE_URL: database.url,
    DOCUMENTS_DIR: join(dir, 'documents'),
    PORT: '0',
    LOG_LEVEL: 'warn',
    DEMO_SEED: 'false',
    ...(KEPT ? {} : { ANSWER_CACHE_MB: '0' }),
    ...(process.env.SQLITE_SYNCHRONOUS ? { SQLITE_SYNCHRONOUS: process.env.SQLITE_SYNCHRONOUS } : {}),
    LIMIT_INSTITUTIONAL_PER_MINUTE: '100000000',
    PORT_OPS_PER_MINUTE: '100000000',
  });
  const app = await buildApp(config, { logger: false });
  try {
    const demo = await seedDemo(app.services.db, {
      clock: systemClock,
      config,
      versions: app.services.versions,
    });
    const key = demo.accounts.find((a) => a.plan === 'INSTITUTIONAL')!.apiKey;
    const results: Array<{
      request: string;
      cpuUsPerRequest: number;
      /** A local PostgreSQL server's CPU over the same requests, per request. */
      databaseCpuUsPerRequest?: number;
      wallUsPerRequest: number;
      bytes: number;
    }> = [];
    const postmaster = POSTGRES ? await localPostmaster(database.url) : undefined;
    const order = await newServiceOrder(app.fastify, key);
    const only = (name: string) => !ONLY || ONLY.split('|').some((t) => name.includes(t));
    const warmUps = Math.min(100, ITERATIONS);
    // The confirmation's orders: the first run, the warm-up and the measured runs each confirm one.
    const confirming = only(CONFIRMATION)
      ? [await confirmation(app.fastify, key, order, 1 + warmUps + ITERATIONS)]
      : [];
    const measured = [...READS, order, ...confirming];
    for (const r of measured.filter((x) => only(x.name))) {
      let run = 0;
      const send = () =>
        app.fastify.inject({
          method: r.method,
          url: r.urls ? r.urls(run++) : r.url,
          headers: { 'x-api-key': key, ...(r.body ? { 'content-type': 'application/json' } : {}) },
          payload: r.body,
        });
      const first = await send();
      if (first.statusCode !== (r.status ?? 200) || first.body.includes('"errors"'))
        throw new Error(`${r.name}: ${first.statusCode} ${first.body.slice(0, 300)}`);
      for (let i = 0; i < warmUps; i++) await send(); // warm-up: JIT, pools
      const profiling = process.env.BENCH_CPU_PROFILE;
      const session = profiling ? new Session() : undefined;
      if (session) {
        session.connect();
        await session.post('Profiler.enable');
        // 100 µs samples instead of V8's 1 ms: a request here takes 0.1-2 ms.
        await session.post('Profiler.setSamplingInterval', { interval: 100 });
        await session.post('Profiler.start');
      }
      const database0 = serverTicks(postmaster);
      const cpu0 = process.cpuUsage();
      const t0 = performance.now();
      for (let i = 0; i < ITERATIONS; i++) await send();
      const cpu = process.cpuUsage(cpu0);
      const database1 = serverTicks(postmaster);
      if (session) {
        const { profile } = await session.post('Profiler.stop');
        const file = join(profiling!, `${r.name.replace(/[^a-z0-9]+/gi, '-')}.cpuprofile`);
        writeFileSync(file, JSON.stringify(profile));
        session.disconnect();
      }
      results.push({
        request: r.name,
        cpuUsPerRequest: Math.round((cpu.user + cpu.system) / ITERATIONS),
        ...(database0 !== undefined && database1 !== undefined
          ? {
              databaseCpuUsPerRequest: Math.round(((database1 - database0) * 1e6) / CLOCK_TICKS / ITERATIONS),
            }
          : {}),
        wallUsPerRequest: Math.round(((performance.now() - t0) * 1000) / ITERATIONS),
        bytes: first.rawPayload.length,
      });
    }
    console.log(
      `dialect ${POSTGRES ? 'postgresql' : 'sqlite'}, ${ITERATIONS} requests each, kept answers ${KEPT ? 'on' : 'off'}`,
    );
    console.table(results);
  } finally {
    await app.close();
  }
} finally {
  await database.drop();
  rmSync(dir, { recursive: true, force: true });
}
