import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { openAppDatabase } from '../src/database.js';
import type * as Seed from '../src/seed.js';
import { emptyDatabase } from './helpers/db.js';
import { describeEachDialect } from './helpers/env.js';
import { ROOT } from './helpers/processes.js';

/*
 * The server's first start migrates and seeds in a worker thread (src/seed.ts,
 * prepareDatabaseApart). The compiled module is what `npm start` runs, and its worker loads the
 * build as well (the global setup builds dist/ when the sources changed).
 */
const { preparationPending, prepareDatabaseApart } = (await import(
  pathToFileURL(join(ROOT, 'dist', 'src', 'seed.js')).href
)) as typeof Seed;

const envFor = (url: string) => ({ DATABASE_URL: url, LOG_LEVEL: 'warn' });

describeEachDialect('the database prepared in a worker thread', (dialect) => {
  const drops: Array<() => Promise<void>> = [];
  afterEach(async () => {
    for (const drop of drops.splice(0)) await drop();
  });

  async function counts(url: string): Promise<{ accounts: number; migrations: number }> {
    const db = await openAppDatabase(url);
    try {
      const knex = db.root.getConnection().getKnex();
      const [accounts] = (await knex('accounts').count({ n: '*' })) as Array<{ n: number | string }>;
      return { accounts: Number(accounts!.n), migrations: (await db.pendingMigrations()).length };
    } finally {
      await db.close();
    }
  }

  it('migrates a new database, seeds the demo once and returns its credentials', async () => {
    const database = await emptyDatabase(dialect);
    drops.push(database.drop);
    const demo = await prepareDatabaseApart(envFor(database.url), true);
    expect(demo?.accounts.map((a) => a.plan)).toEqual([
      'OBSERVER',
      'ANALYST',
      'PROFESSIONAL',
      'INSTITUTIONAL',
    ]);
    expect(demo?.accounts.every((a) => a.apiKey.startsWith('tg_'))).toBe(true);
    expect(demo?.admin.email).toBe('admin@tidegate.local');
    expect(await counts(database.url)).toEqual({ accounts: 4, migrations: 0 });

    // A second start finds nothing to do: it starts no worker.
    expect(await preparationPending(database.url, true)).toBe(false);
    // Prepared all the same, nothing is seeded again, and no secret is shown.
    expect(await prepareDatabaseApart(envFor(database.url), true)).toBeNull();
    expect((await counts(database.url)).accounts).toBe(4);
  });

  it('without the demo seed (DEMO_SEED=false, a subgraph) it only migrates', async () => {
    const database = await emptyDatabase(dialect);
    drops.push(database.drop);
    expect(await preparationPending(database.url, false)).toBe(true);
    expect(await prepareDatabaseApart(envFor(database.url), false)).toBeNull();
    expect(await counts(database.url)).toEqual({ accounts: 0, migrations: 0 });
    // Migrated and empty: there is work only when the demo is wanted.
    expect(await preparationPending(database.url, false)).toBe(false);
    expect(await preparationPending(database.url, true)).toBe(true);
  });
});

describe('the database prepared in a worker thread, failing', () => {
  it("rejects with the worker's error, as the serving thread would have thrown it", async () => {
    await expect(
      prepareDatabaseApart(envFor('postgres://postgres@127.0.0.1:1/tidegate_nowhere'), true),
    ).rejects.toThrow(/Cannot reach PostgreSQL at 127\.0\.0\.1:1/);
  });
});
