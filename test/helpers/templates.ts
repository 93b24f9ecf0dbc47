import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { loadConfig } from '../../src/config.js';
import { openAppDatabase } from '../../src/database.js';
import { systemClock } from '../../src/kernel/clock.js';
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

/** Builds the SQLite templates in a temp directory; `drop` deletes it. */
export async function buildSqliteTemplates(): Promise<{ templates: DialectTemplates; drop(): void }> {
  const dir = mkdtempSync(join(tmpdir(), 'tidegate-templates-'));
  const migrated = join(dir, 'migrated.sqlite');
  const seeded = join(dir, 'seeded.sqlite');
  const work = join(dir, 'work.sqlite');
  // Built in WAL mode (openDatabase sets it); `vacuum into` writes each template as one
  // self-contained file, with nothing left in a -wal beside it.
  const snapshot = async (from: string, to: string) => {
    const db = await openAppDatabase(from);
    try {
      await db.em().getConnection().execute(`vacuum into '${to}'`);
    } finally {
      await db.close();
    }
  };
  const seed = await migrateAndSeed(work, work, () => snapshot(work, migrated));
  await snapshot(work, seeded);
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
  const drop = () =>
    onPostgres(adminUrl, async (c) => {
      for (const name of [seeded, migrated]) await c.query(`drop database if exists ${name} with (force)`);
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
