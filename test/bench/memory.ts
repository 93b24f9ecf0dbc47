/**
 * Memory of the gateway with the liquidity read model loaded: resident set size and V8 heap after
 * the liquidity dashboard reads (and a full GC), with the demo data (40 protocols × 420 days) and with
 * 1,000 protocols × 420 days (the demo's protocols cloned 25 times with their histories), and the
 * time the first liquidity read waits for the model to load. The server runs in this process (the
 * figures are the server's), on a temporary SQLite file; the large case is measured after the demo
 * case in the same process, so its RSS includes what the first left behind (the heap does not).
 * `node --expose-gc --import tsx test/bench/memory.ts`
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildApp } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { openAppDatabase } from '../../src/database.js';
import { seedDemo } from '../../src/seed.js';
import { systemClock } from '../../src/kernel/clock.js';

const CLONES = 25;
/** One master key for both starts: the second opens what the first sealed. */
const SECRETS_KEY = randomBytes(32).toString('hex');

function memory(): { rssMiB: number; heapUsedMiB: number } {
  (globalThis as { gc?: () => void }).gc?.();
  const m = process.memoryUsage();
  return { rssMiB: Math.round(m.rss / 2 ** 20), heapUsedMiB: Math.round(m.heapUsed / 2 ** 20) };
}

/** The reads of a liquidity dashboard, each once, after which the model is loaded and every market derived. */
async function readAll(url: string, key: string): Promise<{ firstReadMs: number }> {
  const get = async (path: string) => {
    const res = await fetch(url + path, { headers: { 'x-api-key': key } });
    if (!res.ok) throw new Error(`${path}: ${res.status} ${await res.text()}`);
    return res.json() as Promise<unknown>;
  };
  const t0 = performance.now();
  await get('/v1/market');
  const firstReadMs = Math.round(performance.now() - t0);
  const protocols = (await get('/v1/protocols?limit=100')) as Array<{ slug: string }>;
  await get('/v1/scores?limit=100');
  for (const p of protocols.slice(0, 20)) await get(`/v1/scores/${p.slug}/history`);
  await get('/v1/backtest?lookback=365');
  for (const category of ['treasury', 'private_credit', 'real_estate', 'commodity', 'infrastructure'])
    await get(`/v1/market?category=${category}`);
  return { firstReadMs };
}

/** Starts the server on `file` (seeding the demo when asked), reads, measures, stops. */
async function measure(file: string, dir: string, seed: boolean, key?: string) {
  const config = loadConfig({
    DATABASE_URL: file,
    DOCUMENTS_DIR: join(dir, 'documents'),
    PORT: '0',
    LOG_LEVEL: 'warn',
    DEMO_SEED: 'false',
    SECRETS_KEY,
  });
  const app = await buildApp(config, { logger: false });
  try {
    const demo = seed ? await seedDemo(app.services.db, { clock: systemClock, config }) : null;
    const apiKey = key ?? demo!.accounts.find((a) => a.plan === 'ANALYST')!.apiKey;
    const { firstReadMs } = await readAll(await app.listen(), apiKey);
    return { key: apiKey, figures: { ...memory(), firstLiquidityReadMs: firstReadMs } };
  } finally {
    await app.close();
  }
}

/** Every demo protocol cloned CLONES - 1 more times under a new id and slug, with all its days. */
async function cloneProtocols(file: string): Promise<{ protocols: number; days: number }> {
  const db = await openAppDatabase(file);
  try {
    const knex = db.em().getKnex();
    const columns = async (table: string) =>
      ((await knex.raw(`pragma table_info(${table})`)) as Array<{ name: string }>).map((c) => c.name);
    const protocolColumns = await columns('liquidity_protocols');
    const dayColumns = (await columns('liquidity_days')).filter((c) => c !== 'id' && c !== 'protocol_id');
    const originals = (await knex('liquidity_protocols').select('id')) as Array<{ id: string }>;
    await knex.transaction(async (trx) => {
      for (let k = 1; k < CLONES; k++) {
        for (const { id } of originals) {
          const clone = randomUUID();
          const select = protocolColumns.map((c) =>
            c === 'id' ? '?' : c === 'slug' || c === 'name' ? `${c} || '-${k}'` : c,
          );
          await trx.raw(
            `insert into liquidity_protocols (${protocolColumns.join(', ')}) select ${select.join(', ')} from liquidity_protocols where id = ?`,
            [clone, id],
          );
          await trx.raw(
            `insert into liquidity_days (protocol_id, ${dayColumns.join(', ')}) select ?, ${dayColumns.join(', ')} from liquidity_days where protocol_id = ?`,
            [clone, id],
          );
        }
      }
    });
    const count = async (table: string) =>
      Number(((await knex(table).count({ n: '*' }).first()) as { n: number }).n);
    return { protocols: await count('liquidity_protocols'), days: await count('liquidity_days') };
  } finally {
    await db.close();
  }
}

const dir = mkdtempSync(join(tmpdir(), 'tidegate-memory-'));
const file = join(dir, 'memory.sqlite');
try {
  const demo = await measure(file, dir, true);
  const size = await cloneProtocols(file);
  const large = await measure(file, dir, false, demo.key);
  console.log(
    JSON.stringify(
      { demo: { protocols: 40, days: 40 * 420, ...demo.figures }, generated: { ...size, ...large.figures } },
      null,
      2,
    ),
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}
