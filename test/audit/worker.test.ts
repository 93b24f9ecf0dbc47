import { afterEach, describe, expect, it } from 'vitest';
import { AuditRecord } from '../../src/audit/entities.js';
import { AuditWriter, type AuditEntry } from '../../src/audit/writer.js';
import type { Database } from '../../src/db/orm.js';
import { openAppDatabase } from '../../src/database.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { TEST_POSTGRES_URL, describeWithPostgres } from '../helpers/env.js';

/*
 * On a SQLite file the audit rows are inserted by a worker thread with its own connection
 * (src/audit/worker.ts); a batch it does not store is written on the serving connection, from
 * the first row it did not commit.
 */

const entries = (prefix: string, count: number): AuditEntry[] =>
  Array.from({ length: count }, (_, i) => ({
    at: new Date(Date.UTC(2026, 0, 1, 0, 0, 0, i)),
    requestId: `${prefix}-${i}`,
    credentialKind: 'api_key',
    credentialId: 'key-1',
    ip: '127.0.0.1',
    userAgent: 'worker-test',
    operation: 'GET /v1/market',
    status: 200,
    durationMs: 1.5,
    door: 'rest',
  }));

async function requestIds(db: Database, prefix: string): Promise<string[]> {
  const rows = await db.em().find(AuditRecord, { requestId: { $like: `${prefix}-%` } });
  return rows.map((r) => r.requestId).sort((a, b) => Number(a.split('-')[1]) - Number(b.split('-')[1]));
}

const expected = (prefix: string, count: number) => entries(prefix, count).map((e) => e.requestId);

describe('the audit worker on SQLite', () => {
  let database: TestDatabase | undefined;
  let writer: AuditWriter | undefined;
  const errors: unknown[] = [];
  afterEach(async () => {
    await writer?.close();
    writer = undefined;
    await database?.drop();
    database = undefined;
    errors.length = 0;
  });

  async function started(): Promise<AuditWriter> {
    database = await createTestDatabase('sqlite');
    writer = new AuditWriter(database.db, (e) => errors.push(e));
    await writer.start();
    return writer;
  }

  it('stores every row through the thread, none on the serving connection, with the same values', async () => {
    const audit = await started();
    expect(audit.worker).toBeDefined();
    // More than one transaction's worth (100 rows) and a partial chunk of the 50-row statement.
    for (const e of entries('thread', 273)) audit.record(e);
    await audit.flush();
    expect(await requestIds(database!.db, 'thread')).toEqual(expected('thread', 273));
    expect(audit.stored).toEqual({ thread: 273, connection: 0 });
    const [first] = await database!.db.em().find(AuditRecord, { requestId: 'thread-0' });
    expect(first).toMatchObject({
      credentialKind: 'api_key',
      ip: '127.0.0.1',
      userAgent: 'worker-test',
      operation: 'GET /v1/market',
      status: 200,
      durationMs: 2,
      door: 'rest',
    });
    expect(first!.at.toISOString()).toBe('2026-01-01T00:00:00.000Z');
    expect(errors).toEqual([]);
  });

  it('writes on the serving connection what a dead thread did not store, and says so once per batch', async () => {
    const audit = await started();
    await audit.worker!.terminate();
    for (const e of entries('dead', 120)) audit.record(e);
    await audit.flush();
    expect(await requestIds(database!.db, 'dead')).toEqual(expected('dead', 120));
    expect(audit.stored).toEqual({ thread: 0, connection: 120 });
    expect(errors).toHaveLength(1);
    expect(String(errors[0])).toMatch(/audit worker stored 0 of 120 rows: audit worker exited/);
  });

  it('writes a batch in flight when the thread dies, once', async () => {
    const audit = await started();
    for (const e of entries('flight', 400)) audit.record(e);
    const flushed = audit.flush();
    await audit.worker!.terminate();
    await flushed;
    // Whatever the thread committed before it stopped, and the serving connection the rest.
    expect(await requestIds(database!.db, 'flight')).toEqual(expected('flight', 400));
    expect(audit.stored.thread + audit.stored.connection).toBe(400);
  });

  it('stores what was recorded before close, then stops the thread', async () => {
    const audit = await started();
    const exited = new Promise((resolve) => audit.worker!.once('exit', resolve));
    for (const e of entries('close', 30)) audit.record(e);
    await audit.close();
    await exited;
    writer = undefined;
    expect(await requestIds(database!.db, 'close')).toEqual(expected('close', 30));
    expect(audit.worker).toBeUndefined();
  });

  it('starts no thread for an in-memory database, and writes on the serving connection', async () => {
    const db = await openAppDatabase(':memory:');
    try {
      await db.migrate();
      const audit = new AuditWriter(db, (e) => errors.push(e));
      await audit.start();
      expect(audit.worker).toBeUndefined();
      for (const e of entries('memory', 3)) audit.record(e);
      await audit.close();
      expect(await requestIds(db, 'memory')).toEqual(expected('memory', 3));
      expect(audit.stored).toEqual({ thread: 0, connection: 3 });
    } finally {
      await db.close();
    }
  });
});

describeWithPostgres('the audit writer on PostgreSQL', () => {
  it('starts no thread: the server inserts the rows', async () => {
    expect(TEST_POSTGRES_URL).toBeDefined();
    const database = await createTestDatabase('postgresql');
    try {
      const audit = new AuditWriter(database.db, () => undefined);
      await audit.start();
      expect(audit.worker).toBeUndefined();
      for (const e of entries('pg', 3)) audit.record(e);
      await audit.close();
      expect(await requestIds(database.db, 'pg')).toEqual(expected('pg', 3));
      expect(audit.stored).toEqual({ thread: 0, connection: 3 });
    } finally {
      await database.drop();
    }
  });
});
