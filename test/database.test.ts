import { afterEach, describe, expect, it } from 'vitest';
import { buildApp, type App } from '../src/app.js';
import { loadConfig } from '../src/config.js';
import { databaseOptionsOf, openAppDatabase } from '../src/database.js';
import type { Database } from '../src/db/orm.js';
import { createTestDatabase, type TestDatabase } from './helpers/db.js';
import { TEST_SECRETS_KEY } from './helpers/env.js';

/** SQLite's `pragma synchronous` on the database's connection: 1 is NORMAL, 2 is FULL. */
async function synchronousOf(db: Database): Promise<number> {
  const [row] = await db.root.getConnection().execute<Array<{ synchronous: number }>>('pragma synchronous');
  return row!.synchronous;
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
      const app: App = await buildApp(
        loadConfig({
          DATABASE_URL: database.url,
          LOG_LEVEL: 'warn',
          DEMO_SEED: 'false',
          SECRETS_KEY: TEST_SECRETS_KEY,
          ...(setting ? { SQLITE_SYNCHRONOUS: setting } : {}),
        }),
        { logger: false },
      );
      try {
        expect(await synchronousOf(app.services.db)).toBe(expected);
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
    expect(await synchronousOf(full)).toBe(2);
    const plain = await openAppDatabase(database.url);
    opened.push(plain);
    expect(await synchronousOf(plain)).toBe(1);
  });

  it('refuses any other value, naming the setting and the choices', () => {
    expect(() => loadConfig({ SQLITE_SYNCHRONOUS: 'off' })).toThrow(
      "SQLITE_SYNCHRONOUS must be one of normal, full (got 'off')",
    );
  });
});
