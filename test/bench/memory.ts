/**
 * Memory of a gateway process with the liquidity read model loaded: resident set size (VmRSS) and
 * its peak (VmHWM) after the dashboard reads, with the demo data (40 protocols × 420 days) and with
 * 1,000 protocols × 420 days (the demo's protocols cloned 25 times with their histories). Also the
 * time the first liquidity read waits for the model to load. Bounded: two short-lived processes.
 * `node --import tsx test/bench/memory.ts`
 */
import { randomUUID } from 'node:crypto';
import { readFileSync, rmSync } from 'node:fs';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDatabase } from '../../src/db/orm.js';
import { demoKeys, startGatewayProcess, type GatewayProcess } from '../events/process.js';

const CLONES = 25;

function memoryOf(pid: number): { rssMiB: number; peakMiB: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
  return { rssMiB: Math.round(kib('VmRSS') / 1024), peakMiB: Math.round(kib('VmHWM') / 1024) };
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

async function measure(gateway: GatewayProcess, key: string) {
  const { firstReadMs } = await readAll(gateway.url, key);
  return { ...memoryOf(gateway.child.pid!), firstLiquidityReadMs: firstReadMs };
}

/** Every demo protocol cloned CLONES - 1 more times under a new id and slug, with all its days. */
async function cloneProtocols(file: string): Promise<{ protocols: number; days: number }> {
  const db = await openDatabase(file);
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
const env = { DATABASE_URL: file, DOCUMENTS_DIR: join(dir, 'documents'), LOG_LEVEL: 'warn' };
try {
  const demo = await startGatewayProcess({ ...env, DEMO_SEED: 'true', LOG_LEVEL: 'info' }, 120_000);
  const key = demoKeys(demo.output()).ANALYST!.key;
  const withDemo = await measure(demo, key);
  await demo.stop();
  const size = await cloneProtocols(file);
  const large = await startGatewayProcess(env, 120_000);
  const withLarge = await measure(large, key);
  await large.stop();
  console.log(
    JSON.stringify(
      { demo: { protocols: 40, days: 40 * 420, ...withDemo }, generated: { ...size, ...withLarge } },
      null,
      2,
    ),
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}
