import { randomBytes } from 'node:crypto';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { inject } from 'vitest';
import { type Database, type DatabaseOptions } from '../../src/db/orm.js';
import { openAppDatabase } from '../../src/database.js';
import { loadConfig } from '../../src/config.js';
import { systemClock } from '../../src/kernel/clock.js';
import { seedDemo, type DemoCredentials } from '../../src/seed.js';
import { TEST_POSTGRES_URL } from './env.js';
import {
  onPostgres,
  postgresDatabaseUrl,
  seededTemplateIsFresh,
  type DialectTemplates,
} from './templates.js';

export interface TestDatabase {
  url: string;
  db: Database;
  /** Closes the connection and deletes the database (file or PostgreSQL database). */
  drop(): Promise<void>;
}

type DatabaseOpenOptions = Omit<DatabaseOptions, 'entities'>;

/**
 * The templates the global setup built for `dialect` (test/helpers/templates.ts); undefined
 * outside a vitest run (the bench imports these helpers too).
 */
export function templatesOf(dialect: 'sqlite' | 'postgresql'): DialectTemplates | undefined {
  return process.env.VITEST ? inject('testTemplates')?.[dialect] : undefined;
}

/**
 * A fresh, migrated database: a temp SQLite file, or a randomly named PostgreSQL database. It is
 * a copy of the run's migrated template when there is one, else migrated here.
 */
export async function createTestDatabase(
  dialect: 'sqlite' | 'postgresql' = 'sqlite',
  options: DatabaseOpenOptions = {},
): Promise<TestDatabase> {
  const template = templatesOf(dialect)?.migrated;
  if (template) return openDatabaseAt(await newDatabase(dialect, template), options);
  const database = await openEmptyDatabase(dialect, options);
  await database.db.migrate();
  return database;
}

/**
 * A fresh database with the demo on the system clock, and the demo's credentials, for tests that
 * build their own app (or none) on it: a copy of the run's seeded template while that is fresh
 * (as startTestServer's), else migrated and seeded here.
 */
export async function createSeededTestDatabase(
  dialect: 'sqlite' | 'postgresql' = 'sqlite',
  options: DatabaseOpenOptions = {},
): Promise<{ database: TestDatabase; demo: DemoCredentials }> {
  const template = templatesOf(dialect);
  if (template && seededTemplateIsFresh(template, systemClock.now())) {
    return { database: await copyOfTemplate(dialect, template.seeded, options), demo: template.demo };
  }
  const database = await createTestDatabase(dialect, options);
  const config = loadConfig({ DATABASE_URL: database.url, LOG_LEVEL: 'warn' });
  return { database, demo: await seedDemo(database.db, { clock: systemClock, config }) };
}

/** A fresh database with the content of `template` (a path or a database name of `dialect`). */
export async function copyOfTemplate(
  dialect: 'sqlite' | 'postgresql',
  template: string,
  options: DatabaseOpenOptions = {},
): Promise<TestDatabase> {
  return openDatabaseAt(await newDatabase(dialect, template), options);
}

/** An empty database, opened but not migrated (for tests that run migrations step by step). */
export async function openEmptyDatabase(
  dialect: 'sqlite' | 'postgresql',
  options: DatabaseOpenOptions = {},
): Promise<TestDatabase> {
  return openDatabaseAt(await emptyDatabase(dialect), options);
}

/**
 * An empty database that nothing has opened yet (no tables): a path in a temp directory, or a
 * freshly created PostgreSQL database. For tests of what the CLI or a new process does to it.
 */
export function emptyDatabase(
  dialect: 'sqlite' | 'postgresql',
): Promise<{ url: string; drop(): Promise<void> }> {
  return newDatabase(dialect);
}

async function newDatabase(
  dialect: 'sqlite' | 'postgresql',
  template?: string,
): Promise<{ url: string; drop(): Promise<void> }> {
  if (dialect === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'tidegate-test-'));
    const url = join(dir, 'test.sqlite');
    if (template) copyFileSync(template, url);
    return { url, drop: async () => rmSync(dir, { recursive: true, force: true }) };
  }
  const admin = TEST_POSTGRES_URL;
  if (!admin) throw new Error('TEST_POSTGRES_URL is not set');
  const name = `tidegate_test_${randomBytes(6).toString('hex')}`;
  await onPostgres(admin, (c) =>
    c.query(`create database ${name}${template ? ` template ${template}` : ''}`),
  );
  return {
    url: postgresDatabaseUrl(admin, name),
    drop: async () => {
      await onPostgres(admin, (c) => c.query(`drop database if exists ${name} with (force)`));
    },
  };
}

async function openDatabaseAt(
  database: { url: string; drop(): Promise<void> },
  options: DatabaseOpenOptions,
): Promise<TestDatabase> {
  const db = await openAppDatabase(database.url, options);
  return {
    url: database.url,
    db,
    async drop() {
      await db.close();
      await database.drop();
    },
  };
}

/**
 * Another writer of the SQLite file `file`: a connection in a worker thread, whose wait and commit do
 * not depend on the test's event loop (which a gateway in the test's process shares). It takes the
 * write lock (`begin immediate`), runs `statement` with `params`, holds the lock for `holdMs` and
 * commits. Resolves once it holds the lock; `done` resolves with the time of its commit by the
 * worker's clock, or rejects if it failed.
 */
export async function holdSqliteWriteLock(
  file: string,
  statement: string,
  params: unknown[],
  holdMs: number,
): Promise<{ done: Promise<number> }> {
  const worker = new Worker(
    `
    const { workerData, parentPort } = require('node:worker_threads');
    const Database = require('better-sqlite3');
    const db = new Database(workerData.file, { timeout: 5000 });
    db.exec('begin immediate');
    db.prepare(workerData.statement).run(...workerData.params);
    parentPort.postMessage('locked');
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, workerData.holdMs);
    db.exec('commit');
    const committedAt = Date.now();
    db.close();
    parentPort.postMessage('committed ' + committedAt);
    `,
    { eval: true, workerData: { file, statement, params, holdMs } },
  );
  const messages: string[] = [];
  const done = new Promise<number>((resolve, reject) => {
    worker.on('message', (m: string) => messages.push(m));
    worker.on('error', reject);
    worker.on('exit', (code) => {
      const committed = messages.find((m) => m.startsWith('committed '));
      if (code === 0 && committed) resolve(Number(committed.slice('committed '.length)));
      else reject(new Error(`the other writer exited ${code}`));
    });
  });
  await new Promise<void>((resolve, reject) => {
    worker.once('message', () => resolve());
    worker.once('error', reject);
  });
  return { done };
}
