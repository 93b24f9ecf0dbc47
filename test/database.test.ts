import { afterEach, describe, expect, it } from 'vitest';
import { buildApp, type App } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { databaseOptionsOf, openAppDatabase } from '../src/database.js';
import type { Database } from '../src/db/orm.js';
import { createTestDatabase, type TestDatabase } from './helpers/db.js';
import { describeWithPostgres, TEST_SECRETS_KEY } from './helpers/env.js';

/** A SQLite pragma's value on the database's connection (`synchronous`: 1 is NORMAL, 2 is FULL). */
async function pragmaOf(db: Database, name: 'synchronous' | 'temp_store'): Promise<number> {
  const [row] = await db.root.getConnection().execute<Array<Record<string, number>>>(`pragma ${name}`);
  return row![name]!;
}

/** The server on a test database, with `env` beside the settings every test here gives. */
function serverOn(url: string, env: Record<string, string> = {}): Promise<App> {
  return buildApp(
    loadConfig({
      DATABASE_URL: url,
      LOG_LEVEL: 'warn',
      DEMO_SEED: 'false',
      SECRETS_KEY: TEST_SECRETS_KEY,
      ...env,
    }),
    { logger: false },
  );
}

describe("SQLite's synchronous setting (SQLITE_SYNCHRONOUS)", () => {
  const opened: Array<{ close(): Promise<unknown> }> = [];
  afterEach(async () => {
    for (const item of opened.splice(0).reverse()) await item.close();
  });
  const migrated = async (): Promise<TestDatabase> => {
    const database = await createTestDatabase('sqlite');
    opened.push({ close: () => database.drop() });
    return database;
  };

  it("is NORMAL on the server's connection by default, and FULL when set so", async () => {
    const database = await migrated();
    for (const [setting, expected] of [
      [undefined, 1],
      ['full', 2],
      ['NORMAL', 1],
    ] as const) {
      const app = await serverOn(database.url, setting ? { SQLITE_SYNCHRONOUS: setting } : {});
      try {
        expect(await pragmaOf(app.services.db, 'synchronous')).toBe(expected);
      } finally {
        await app.close();
      }
    }
  });

  it('is what databaseOptionsOf gives a connection opened from the configuration (the path of the CLI and the preparing worker)', async () => {
    const database = await migrated();
    const full = await openAppDatabase(
      database.url,
      databaseOptionsOf(loadConfig({ DATABASE_URL: database.url, SQLITE_SYNCHRONOUS: 'full' })),
    );
    opened.push(full);
    expect(await pragmaOf(full, 'synchronous')).toBe(2);
    const plain = await openAppDatabase(database.url);
    opened.push(plain);
    expect(await pragmaOf(plain, 'synchronous')).toBe(1);
  });

  it('refuses any other value, naming the setting and the choices', () => {
    expect(() => loadConfig({ SQLITE_SYNCHRONOUS: 'off' })).toThrow(
      "SQLITE_SYNCHRONOUS must be one of normal, full (got 'off')",
    );
  });
});

describe("SQLite's temporary files", () => {
  it('are kept in memory on the server connection and on one opened from the configuration (the CLI)', async () => {
    const database = await createTestDatabase('sqlite');
    const app = await serverOn(database.url);
    const cli = await openAppDatabase(database.url);
    try {
      // 2 is MEMORY; SQLite's default, 0, spills statement journals past 64 KiB to a file.
      expect(await pragmaOf(app.services.db, 'temp_store')).toBe(2);
      expect(await pragmaOf(cli, 'temp_store')).toBe(2);
    } finally {
      await cli.close();
      await app.close();
      await database.drop();
    }
  });
});

describe('The PostgreSQL pool size (DATABASE_POOL_MAX)', () => {
  it('is 10 unless set, and refuses a size that is no whole number from 1 to 1000, naming the setting', () => {
    expect(loadConfig({}).databasePoolMax).toBe(10);
    expect(loadConfig({ DATABASE_POOL_MAX: '4' }).databasePoolMax).toBe(4);
    for (const bad of ['0', '1001', 'ten', '2.5'])
      expect(() => loadConfig({ DATABASE_POOL_MAX: bad })).toThrow(
        `DATABASE_POOL_MAX must be an integer between 1 and 1000 (got '${bad}')`,
      );
  });
});

describeWithPostgres('The PostgreSQL pool (DATABASE_POOL_MAX)', () => {
  const opened: Array<{ close(): Promise<unknown> }> = [];
  afterEach(async () => {
    for (const item of opened.splice(0).reverse()) await item.close();
  });

  /** The backends that answered `statements` statements sent at once, each holding its connection 150 ms. */
  const backendsUnderLoad = async (db: Database, statements: number): Promise<number> => {
    const knex = db.em().getKnex();
    const pids = await Promise.all(
      Array.from({ length: statements }, () =>
        knex.raw<{ rows: Array<{ pid: number }> }>('select pg_backend_pid() as pid, pg_sleep(0.15)'),
      ),
    );
    return new Set(pids.map((r) => r.rows[0]!.pid)).size;
  };

  it('opens at most DATABASE_POOL_MAX connections, 10 when unset; statements beyond them wait for one', async () => {
    const database = await createTestDatabase('postgresql');
    opened.push({ close: () => database.drop() });
    const two = await openAppDatabase(
      database.url,
      databaseOptionsOf(loadConfig({ DATABASE_URL: database.url, DATABASE_POOL_MAX: '2' })),
    );
    opened.push(two);
    expect(await backendsUnderLoad(two, 6)).toBe(2);
    const unset = await openAppDatabase(
      database.url,
      databaseOptionsOf(loadConfig({ DATABASE_URL: database.url })),
    );
    opened.push(unset);
    expect(await backendsUnderLoad(unset, 14)).toBe(10);
  });
});
