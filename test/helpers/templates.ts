import { createHash, randomBytes } from 'node:crypto';
import {
  copyFileSync,
  existsSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { Client } from 'pg';
import { loadConfig } from '../../src/config.js';
import { openAppDatabase } from '../../src/database.js';
import { systemClock, type Clock } from '../../src/kernel/clock.js';
import { seedDemo, type DemoCredentials } from '../../src/seed.js';

/*
 * Migrating a database and seeding the demo take most of a test server's start. A test run does
 * both once per dialect, into template databases, and every test database is a copy: a file copy
 * on SQLite, `CREATE DATABASE … TEMPLATE` on PostgreSQL. The templates are built by the global
 * setup (test/global-setup.ts) in the main vitest process and reach the test files through
 * vitest's provided context.
 */

/** Where a dialect's templates are: SQLite file paths, or PostgreSQL database names. */
export interface DialectTemplates {
  /** Migrated, no rows: what createTestDatabase hands out. */
  migrated: string;
  /** Migrated and seeded with the demo on the system clock at `seededAt`. */
  seeded: string;
  /**
   * The seed's secrets (API keys, the admin password) exist only here: the database holds their
   * hashes, so every copy answers to these same credentials.
   */
  demo: DemoCredentials;
  /** ISO time the demo was seeded: the demo's history is relative to it. */
  seededAt: string;
}

export interface TestTemplates {
  sqlite?: DialectTemplates;
  postgresql?: DialectTemplates;
}

declare module 'vitest' {
  export interface ProvidedContext {
    testTemplates: TestTemplates;
  }
}

/**
 * The demo's history is relative to the clock (port calls planned from "now", liquidity days up
 * to yesterday): a server seeded by copy sees the demo as of `seededAt`. A copy is used while
 * that is the same UTC day and within this age, which a run stays inside; past it, a server
 * seeds afresh.
 */
const MAX_TEMPLATE_AGE_MS = 30 * 60_000;

export function seededTemplateIsFresh(template: DialectTemplates, now: Date): boolean {
  const seededAt = new Date(template.seededAt);
  return (
    now.getTime() - seededAt.getTime() < MAX_TEMPLATE_AGE_MS &&
    now.toISOString().slice(0, 10) === template.seededAt.slice(0, 10)
  );
}

/** The configuration the seed reads (the API key policy), as startTestServer's defaults give it. */
function seedConfig(databaseUrl: string) {
  return loadConfig({ DATABASE_URL: databaseUrl, LOG_LEVEL: 'warn' });
}

async function migrateAndSeed(
  migratedUrl: string,
  seededUrl: string,
  copy: () => Promise<void>,
): Promise<Pick<DialectTemplates, 'demo' | 'seededAt'>> {
  const migrated = await openAppDatabase(migratedUrl);
  try {
    await migrated.migrate();
  } finally {
    await migrated.close();
  }
  await copy();
  const seeded = await openAppDatabase(seededUrl);
  try {
    const seededAt = systemClock.now().toISOString();
    const demo = await seedDemo(seeded, { clock: systemClock, config: seedConfig(seededUrl) });
    return { demo, seededAt };
  } finally {
    await seeded.close();
  }
}

/** Writes SQLite database `from` as one self-contained file `to` (no -wal beside it). */
async function snapshotSqlite(from: string, to: string): Promise<void> {
  const db = await openAppDatabase(from);
  try {
    await db.em().getConnection().execute(`vacuum into '${to}'`);
  } finally {
    await db.close();
  }
}

/** Builds the SQLite templates in a temp directory; `drop` deletes it. */
export async function buildSqliteTemplates(): Promise<{ templates: DialectTemplates; drop(): void }> {
  const dir = mkdtempSync(join(tmpdir(), 'tidegate-templates-'));
  const migrated = join(dir, 'migrated.sqlite');
  const seeded = join(dir, 'seeded.sqlite');
  const work = join(dir, 'work.sqlite');
  // Built in WAL mode (openDatabase sets it); `vacuum into` writes each template as one
  // self-contained file, with nothing left in a -wal beside it.
  const seed = await migrateAndSeed(work, work, () => snapshotSqlite(work, migrated));
  await snapshotSqlite(work, seeded);
  rmSync(work, { force: true });
  rmSync(`${work}-wal`, { force: true });
  rmSync(`${work}-shm`, { force: true });
  return {
    templates: { migrated, seeded, ...seed },
    drop: () => rmSync(dir, { recursive: true, force: true }),
  };
}

/** `adminUrl` with its database replaced by `name`. */
export function postgresDatabaseUrl(adminUrl: string, name: string): string {
  const url = new URL(adminUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

/** Runs `work` on a connection of its own to `adminUrl`'s database. */
export async function onPostgres<T>(adminUrl: string, work: (client: Client) => Promise<T>): Promise<T> {
  const client = new Client({ connectionString: adminUrl });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/**
 * Builds the PostgreSQL templates next to `adminUrl`'s database; `drop` drops them. A template
 * refuses connections once built: `CREATE DATABASE … TEMPLATE` fails while anything is connected.
 */
export async function buildPostgresTemplates(
  adminUrl: string,
): Promise<{ templates: DialectTemplates; drop(): Promise<void> }> {
  const run = randomBytes(4).toString('hex');
  const migrated = `tidegate_tpl_${run}_migrated`;
  const seeded = `tidegate_tpl_${run}_seeded`;
  // Also the templates seeded at a test clock's instant (seededTemplateAt), named after these.
  const drop = () =>
    onPostgres(adminUrl, async (c) => {
      const { rows } = await c.query<{ datname: string }>(
        `select datname from pg_database where datname like $1`,
        [`tidegate_tpl_${run}_%`],
      );
      for (const { datname } of rows) await c.query(`drop database if exists ${datname} with (force)`);
    });
  try {
    await onPostgres(adminUrl, (c) => c.query(`create database ${migrated}`));
    const seed = await migrateAndSeed(
      postgresDatabaseUrl(adminUrl, migrated),
      postgresDatabaseUrl(adminUrl, seeded),
      () =>
        onPostgres(adminUrl, async (c) => {
          await c.query(`alter database ${migrated} allow_connections false`);
          await c.query(`create database ${seeded} template ${migrated}`);
        }),
    );
    await onPostgres(adminUrl, (c) => c.query(`alter database ${seeded} allow_connections false`));
    return { templates: { migrated, seeded, ...seed }, drop };
  } catch (e) {
    await drop();
    throw e;
  }
}

/**
 * The demo seeded on a clock of a test's own, at that clock's instant: built by the first test
 * file that starts a server at that instant (seeding a copy of the migrated template, as a server
 * otherwise would) and copied by every later one in the run. Test files run in separate
 * processes, so the build is published atomically (a directory rename on SQLite, a database
 * rename on PostgreSQL) and a file that loses the race uses the winner's copy. The credentials
 * travel with the template: a JSON file beside it, or the PostgreSQL database's comment.
 */
export async function seededTemplateAt(
  dialect: 'sqlite' | 'postgresql',
  templates: DialectTemplates,
  clock: Clock,
): Promise<{ seeded: string; demo: DemoCredentials }> {
  const at = clock.now().toISOString();
  const tag = createHash('sha256').update(at).digest('hex').slice(0, 16);
  const seed = (url: string) => seedInto(url, clock);
  return dialect === 'sqlite'
    ? sqliteSeededAt(templates.migrated, tag, seed)
    : postgresSeededAt(templates.migrated, tag, seed);
}

async function seedInto(url: string, clock: Clock): Promise<DemoCredentials> {
  const db = await openAppDatabase(url);
  try {
    return await seedDemo(db, { clock, config: seedConfig(url) });
  } finally {
    await db.close();
  }
}

async function sqliteSeededAt(
  migrated: string,
  tag: string,
  seed: (url: string) => Promise<DemoCredentials>,
): Promise<{ seeded: string; demo: DemoCredentials }> {
  const published = join(dirname(migrated), `at-${tag}`);
  const found = () => ({
    seeded: join(published, 'seeded.sqlite'),
    demo: JSON.parse(readFileSync(join(published, 'demo.json'), 'utf8')) as DemoCredentials,
  });
  if (existsSync(published)) return found();
  const work = mkdtempSync(join(dirname(migrated), 'work-'));
  try {
    const workDb = join(work, 'work.sqlite');
    copyFileSync(migrated, workDb);
    const demo = await seed(workDb);
    await snapshotSqlite(workDb, join(work, 'seeded.sqlite'));
    for (const suffix of ['', '-wal', '-shm']) rmSync(`${workDb}${suffix}`, { force: true });
    writeFileSync(join(work, 'demo.json'), JSON.stringify(demo));
    try {
      renameSync(work, published);
    } catch (e) {
      // Another test file published the same instant first: its copy is as good as this one.
      if (!existsSync(published)) throw e;
    }
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
  return found();
}

async function postgresSeededAt(
  migrated: string,
  tag: string,
  seed: (url: string) => Promise<DemoCredentials>,
): Promise<{ seeded: string; demo: DemoCredentials }> {
  const adminUrl = process.env.TEST_POSTGRES_URL;
  if (!adminUrl) throw new Error('TEST_POSTGRES_URL is not set');
  const prefix = migrated.replace(/_migrated$/, '');
  const published = `${prefix}_at_${tag}`;
  const found = () =>
    onPostgres(adminUrl, async (c) => {
      const { rows } = await c.query<{ demo: string }>(
        `select shobj_description(oid, 'pg_database') as demo from pg_database where datname = $1`,
        [published],
      );
      return rows[0] ? { seeded: published, demo: JSON.parse(rows[0].demo) as DemoCredentials } : undefined;
    });
  const existing = await found();
  if (existing) return existing;
  const work = `${prefix}_work_${randomBytes(6).toString('hex')}`;
  await onPostgres(adminUrl, (c) => c.query(`create database ${work} template ${migrated}`));
  try {
    const demo = await seed(postgresDatabaseUrl(adminUrl, work));
    await onPostgres(adminUrl, async (c) => {
      await c.query(`comment on database ${work} is ${c.escapeLiteral(JSON.stringify(demo))}`);
      await c.query(`alter database ${work} allow_connections false`);
      try {
        await c.query(`alter database ${work} rename to ${published}`);
      } catch (e) {
        // 42P04 duplicate_database: another test file published the same instant first.
        if ((e as { code?: string }).code !== '42P04') throw e;
      }
    });
  } finally {
    await onPostgres(adminUrl, (c) => c.query(`drop database if exists ${work} with (force)`));
  }
  const built = await found();
  if (!built) throw new Error(`seeded template ${published} is missing after it was built`);
  return built;
}
