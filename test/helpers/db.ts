import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from 'pg';
import { type Database, type DatabaseOptions } from '../../src/db/orm.js';
import { openAppDatabase } from '../../src/database.js';
import { TEST_POSTGRES_URL } from './env.js';

export interface TestDatabase {
  url: string;
  db: Database;
  /** Closes the connection and deletes the database (file or PostgreSQL database). */
  drop(): Promise<void>;
}

/** A fresh, migrated database: a temp SQLite file, or a randomly named PostgreSQL database. */
export async function createTestDatabase(
  dialect: 'sqlite' | 'postgresql' = 'sqlite',
  options: Omit<DatabaseOptions, 'entities'> = {},
): Promise<TestDatabase> {
  const database = await openEmptyDatabase(dialect, options);
  await database.db.migrate();
  return database;
}

/** An empty database, opened but not migrated (for tests that run migrations step by step). */
export async function openEmptyDatabase(
  dialect: 'sqlite' | 'postgresql',
  options: Omit<DatabaseOptions, 'entities'> = {},
): Promise<TestDatabase> {
  const empty = await emptyDatabase(dialect);
  const db = await openAppDatabase(empty.url, options);
  return {
    url: empty.url,
    db,
    async drop() {
      await db.close();
      await empty.drop();
    },
  };
}

/**
 * An empty database that nothing has opened yet (no tables): a path in a temp directory, or a
 * freshly created PostgreSQL database. For tests of what the CLI or a new process does to it.
 */
export async function emptyDatabase(
  dialect: 'sqlite' | 'postgresql',
): Promise<{ url: string; drop(): Promise<void> }> {
  if (dialect === 'sqlite') {
    const dir = mkdtempSync(join(tmpdir(), 'tidegate-empty-'));
    return {
      url: join(dir, 'empty.sqlite'),
      drop: async () => rmSync(dir, { recursive: true, force: true }),
    };
  }
  if (!TEST_POSTGRES_URL) throw new Error('TEST_POSTGRES_URL is not set');
  const name = `tidegate_test_${randomBytes(6).toString('hex')}`;
  const admin = new Client({ connectionString: TEST_POSTGRES_URL });
  await admin.connect();
  await admin.query(`create database ${name}`);
  await admin.end();
  const url = new URL(TEST_POSTGRES_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    async drop() {
      const c = new Client({ connectionString: TEST_POSTGRES_URL });
      await c.connect();
      await c.query(`drop database if exists ${name} with (force)`);
      await c.end();
    },
  };
}
