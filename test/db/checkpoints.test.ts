import { statSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { buildApp } from '../../src/app.js';
import { startBackgroundCheckpoints, type BackgroundCheckpoints } from '../../src/db/checkpoints.js';
import { SQLITE_LOG_SIZE_LIMIT, type Database } from '../../src/db/orm.js';
import { openAppDatabase } from '../../src/database.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { TEST_SECRETS_KEY, describeWithPostgres } from '../helpers/env.js';

/*
 * SQLite checkpoints run on a worker thread with its own connection, never inside a commit of the
 * serving connection (src/db/checkpoints.ts): while the worker runs the serving connection's
 * wal_autocheckpoint is 0, the worker moves the log back into the database file, and when the
 * worker stops (or dies) the serving connection checkpoints for itself again.
 */

/** The serving connection's own setting, read through the ORM's pool. */
async function autocheckpoint(db: Database): Promise<number> {
  const rows = await db.root
    .getConnection()
    .execute<Array<{ wal_autocheckpoint: number }>>('pragma wal_autocheckpoint');
  return rows[0]!.wal_autocheckpoint;
}

/** Writes `count` audit-sized rows in one statement on the serving connection. */
async function writeRows(db: Database, count: number): Promise<void> {
  const connection = db.root.getConnection();
  await connection.execute('create table if not exists filler (id integer primary key, text text not null)');
  await connection.execute(
    `with recursive n(i) as (select 1 union all select i + 1 from n where i < ?)
     insert into filler (text) select printf('%0200d', i) from n`,
    [count],
    'run',
  );
}

async function until(condition: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 5_000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('background checkpoints on SQLite', () => {
  let database: TestDatabase | undefined;
  let checkpoints: BackgroundCheckpoints | undefined;
  afterEach(async () => {
    await checkpoints?.stop();
    checkpoints = undefined;
    await database?.drop();
    database = undefined;
  });

  it('takes checkpoints off the serving connection while the worker runs, and gives them back', async () => {
    database = await createTestDatabase('sqlite');
    const { db } = database;
    expect(await autocheckpoint(db)).toBe(1000);
    const errors: unknown[] = [];
    checkpoints = await startBackgroundCheckpoints(db, (e) => errors.push(e), 20);
    expect(checkpoints).toBeDefined();
    expect(await autocheckpoint(db)).toBe(0);

    // More pages than SQLite's threshold: the serving connection would have checkpointed inside
    // this commit; now the worker copies them into the database file.
    await writeRows(db, 30_000);
    const after = checkpoints!.runs;
    await until(
      () => checkpoints!.runs > after + 1 && (checkpoints!.last?.checkpointed ?? 0) > 1000,
      'the worker to checkpoint the log',
    );
    const last = checkpoints!.last!;
    expect(last.busy).toBe(0);
    expect(last.checkpointed).toBe(last.log);

    // Another connection (a CLI, say) reads every committed row.
    const other = await openAppDatabase(database.url);
    try {
      const [row] = await other.root
        .getConnection()
        .execute<Array<{ n: number }>>('select count(*) as n from filler');
      expect(row!.n).toBe(30_000);
    } finally {
      await other.close();
    }

    await checkpoints!.stop();
    expect(await autocheckpoint(db)).toBe(1000);
    expect(errors).toEqual([]);
  });

  it('starts the log over under a steady stream of writes', async () => {
    database = await createTestDatabase('sqlite');
    const { db } = database;
    const errors: unknown[] = [];
    const restartFrames = 200;
    checkpoints = await startBackgroundCheckpoints(db, (e) => errors.push(e), 20, restartFrames);
    // 400 transactions of about 25 pages each, one every 2 ms: every checkpoint the worker takes is
    // older than some write, so no write begins with the whole log copied on its own.
    const transactions = 400;
    for (let i = 0; i < transactions; i++) {
      await writeRows(db, 400);
      await sleep(2);
    }
    const [row] = await db.root
      .getConnection()
      .execute<Array<{ n: number }>>('select count(*) as n from filler');
    expect(row!.n).toBe(transactions * 400);
    // A frame is a page and a 24-byte header. The transactions wrote about 25 frames each, 10,000
    // in all, which a log that never started over would hold; the file now stays within the
    // threshold plus a few checkpoint intervals' writes (about 400 frames on a 2-core machine).
    const frames = (statSync(`${database.url}-wal`).size - 32) / (4096 + 24);
    expect(checkpoints!.restarts).toBeGreaterThan(0);
    expect(frames).toBeLessThan(restartFrames * 5);
    expect(errors).toEqual([]);
    // A file that did grow is cut back to this when its log starts over.
    const [limit] = await db.root
      .getConnection()
      .execute<Array<{ journal_size_limit: number }>>('pragma journal_size_limit');
    expect(limit!.journal_size_limit).toBe(SQLITE_LOG_SIZE_LIMIT);
  });

  it('gives checkpoints back to the serving connection when the worker dies', async () => {
    database = await createTestDatabase('sqlite');
    const errors: unknown[] = [];
    checkpoints = await startBackgroundCheckpoints(database.db, (e) => errors.push(e), 20);
    expect(await autocheckpoint(database.db)).toBe(0);
    await checkpoints!.worker.terminate();
    await until(() => errors.length > 0, 'the failure to be reported');
    expect(String(errors[0])).toMatch(/checkpoint worker stopped/);
    expect(await autocheckpoint(database.db)).toBe(1000);
  });

  it('has nothing to do for an in-memory database', async () => {
    const db = await openAppDatabase(':memory:');
    try {
      expect(await startBackgroundCheckpoints(db, () => undefined)).toBeUndefined();
    } finally {
      await db.close();
    }
  });

  it('runs for the server, and stops with it', async () => {
    database = await createTestDatabase('sqlite');
    const config = loadConfig({
      PORT: '0',
      HOST: '127.0.0.1',
      DATABASE_URL: database.url,
      LOG_LEVEL: 'warn',
      SECRETS_KEY: TEST_SECRETS_KEY,
      SHUTDOWN_DRAIN_MS: '0',
    });
    const app = await buildApp(config, { db: database.db, logger: false });
    try {
      expect(await autocheckpoint(database.db)).toBe(0);
    } finally {
      await app.close();
    }
    expect(await autocheckpoint(database.db)).toBe(1000);
  });
});

describeWithPostgres('background checkpoints on PostgreSQL', () => {
  it('are not started: the database checkpoints for itself', async () => {
    const database = await createTestDatabase('postgresql');
    try {
      expect(await startBackgroundCheckpoints(database.db, () => undefined)).toBeUndefined();
    } finally {
      await database.drop();
    }
  });
});
