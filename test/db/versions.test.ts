import { randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/knex';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openAppDatabase } from '../../src/database.js';
import { knexIn } from '../../src/db/knex.js';
import { LISTENER_APPLICATION_NAME, ReadModelVersions } from '../../src/db/versions.js';
import { ServiceType, Vendor } from '../../src/port-ops/entities.js';
import { describeEachDialect, describeWithPostgres } from '../helpers/env.js';
import { servedWithin } from '../helpers/served.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/*
 * The version reads behind every kept port-operations answer (src/db/versions.ts). From the
 * database: on SQLite at once on the pool's idle connection (no acquire), never while a transaction
 * holds that connection (it would read the transaction's uncommitted rows). On PostgreSQL from
 * memory, kept by the database's notices, and from the database again while the listening
 * connection is lost.
 */

const NAMES = ['port-ops', 'port-ops:versions-test'] as const;
const major = (v: string) => Number(v.split('.')[0]);
const bump = (em: EntityManager) =>
  knexIn(em)('read_model_versions').where({ name: 'port-ops' }).increment('version', 1);

describeEachDialect('version reads from the database', (dialect) => {
  let server: TestServer;
  /** Never started: every read goes to the database, as on SQLite or with the listener lost. */
  let fromDatabase: ReadModelVersions;
  beforeAll(async () => {
    server = await startTestServer({ dialect });
    fromDatabase = new ReadModelVersions(server.database.db);
  });
  afterAll(() => server?.close());

  it('read at once on an idle SQLite connection, through the pool on PostgreSQL', async () => {
    await fromDatabase.read(NAMES); // the pool has handed out its connection once
    const read = fromDatabase.read(NAMES);
    if (dialect === 'sqlite') expect(typeof read).toBe('string');
    else expect(read).toBeInstanceOf(Promise);
    expect(await read).toMatch(/^\d+\.0$/);
  });

  it("never see a transaction's uncommitted write, and see its commit (on SQLite the read waits for the connection)", async () => {
    const before = await fromDatabase.read(NAMES);
    let inside!: () => void;
    const written = new Promise<void>((r) => (inside = r));
    let commit!: () => void;
    const gate = new Promise<void>((r) => (commit = r));
    const transaction = server.database.db.em().transactional(async (tx) => {
      await bump(tx as EntityManager);
      inside();
      await gate;
    });
    await written;
    const during = fromDatabase.read(NAMES);
    try {
      // SQLite's one connection is the transaction's: the read waits for it instead of running on it.
      expect(during).toBeInstanceOf(Promise);
      let settled: string | undefined;
      void Promise.resolve(during).then((v) => (settled = v));
      if (dialect === 'sqlite') {
        await new Promise((r) => setTimeout(r, 50));
        expect(settled).toBeUndefined();
      } else {
        expect(
          await servedWithin(
            () => settled,
            (v) => v !== undefined,
            2_000,
          ),
        ).toBe(before);
      }
    } finally {
      commit();
      await transaction;
    }
    if (dialect === 'sqlite') expect(major(await during)).toBe(major(before) + 1);
    expect(major(await fromDatabase.read(NAMES))).toBe(major(before) + 1);
  });

  it('the gateway reads from memory only on PostgreSQL', () => {
    expect(server.app.services.versions.inMemory).toBe(dialect === 'postgresql');
  });
});

/*
 * SQLite keeps the versions it read in memory and asks one number per read: the last stamp of the
 * sequence every move of a version row takes (Migration20261201000200VersionSequence). Nothing
 * else written moves it; a move by any connection does, and then only the rows stamped since are read.
 */
describe('version reads on SQLite: the stamp sequence', () => {
  let server: TestServer;
  const statements: string[] = [];
  beforeAll(async () => {
    server = await startTestServer({ dialect: 'sqlite', onQuery: (sql) => statements.push(sql) });
  });
  afterAll(() => server?.close());

  /** The value read, and the version statements that read it. */
  async function reading(versions: ReadModelVersions): Promise<{ value: string; ran: string[] }> {
    statements.length = 0;
    const value = await versions.read(NAMES);
    return { value, ran: statements.filter((s) => /read_model_versions/.test(s)) };
  }

  it('reads one number while nothing moved, whatever else was written, and only the moved rows when one did', async () => {
    const versions = new ReadModelVersions(server.database.db);
    const first = await reading(versions);
    expect(first.ran).toEqual([
      expect.stringMatching(/select max\(seq\)/),
      expect.stringMatching(/where seq > \?/),
    ]);
    expect(await reading(versions)).toEqual({
      value: first.value,
      ran: [expect.stringMatching(/select max\(seq\)/)],
    });
    // A write that moves no version (an account's name) leaves the sequence where it was.
    const account = server.demo.accounts[0]!.accountId;
    const sql = (text: string, values: unknown[] = []) =>
      server.database.db.em().getConnection().execute(text, values);
    await sql('update accounts set name = name where id = ?', [account]);
    expect((await reading(versions)).ran).toHaveLength(1);
    // Another connection moves one version: both statements, the second reading that row alone.
    const other = await openAppDatabase(server.database.url);
    try {
      await other
        .em()
        .getConnection()
        .execute(`update read_model_versions set version = version + 1 where name = 'port-ops'`);
    } finally {
      await other.close();
    }
    const moved = await reading(versions);
    expect(major(moved.value)).toBe(major(first.value) + 1);
    expect(moved.ran).toEqual([
      expect.stringMatching(/select max\(seq\)/),
      expect.stringMatching(/where seq > \? .*\b1 results?\]/),
    ]);
    // A version these names do not read: read, and the value stays.
    await sql(`update read_model_versions set version = version + 1 where name = 'liquidity'`);
    const elsewhere = await reading(versions);
    expect(elsewhere.ran).toHaveLength(2);
    expect(elsewhere.value).toBe(moved.value);
  });
});

/*
 * The triggers behind the port-operations versions (Migration20261125000300PortOpsVersions, and on
 * PostgreSQL Migration20261128000900StatementVersionTriggers: once per statement, from its
 * transition tables). One statement writing rows of two accounts moves both accounts' versions,
 * for an insert, an update and a delete.
 */
describeEachDialect('version triggers', (dialect) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ dialect });
  });
  afterAll(() => server?.close());

  it("one statement over two accounts' rows moves both accounts' versions, for every kind of write", async () => {
    const knex = knexIn(server.database.db.em() as EntityManager);
    const accounts = server.demo.accounts.slice(0, 2).map((a) => a.accountId);
    const versions = async () => {
      const rows: Array<{ name: string; version: number | string }> = await knex('read_model_versions')
        .whereIn(
          'name',
          accounts.map((a) => `port-ops:${a}`),
        )
        .select('name', 'version');
      return accounts.map((a) => Number(rows.find((r) => r.name === `port-ops:${a}`)?.version ?? 0));
    };
    const moved = async (write: () => Promise<unknown>) => {
      const before = await versions();
      await write();
      const after = await versions();
      after.forEach((v, i) => expect(v, `account ${i + 1}`).toBeGreaterThan(before[i]!));
    };
    const em = server.database.db.em();
    const vendors = accounts.map((accountId, i) => ({
      id: randomUUID(),
      accountId,
      name: `Trigger test vendor ${i + 1}`,
      services: [ServiceType.BUNKERING],
      ports: ['NLRTM'],
      active: true,
      createdAt: new Date(),
    }));
    const ids = { id: { $in: vendors.map((v) => v.id) } };
    await moved(() => em.insertMany(Vendor, vendors));
    await moved(() => em.nativeUpdate(Vendor, ids, { name: 'Renamed by one statement' }));
    await moved(() => em.nativeDelete(Vendor, ids));
  });
});

describeWithPostgres('version reads from memory on PostgreSQL', () => {
  let server: TestServer;
  let versions: ReadModelVersions;
  beforeAll(async () => {
    server = await startTestServer({ dialect: 'postgresql' });
    versions = server.app.services.versions;
  });
  afterAll(() => server?.close());

  const sql = (text: string) => server.database.db.em().getConnection().execute(text);
  const bumpNow = () => sql(`update read_model_versions set version = version + 1 where name = 'port-ops'`);
  const listenerPids = async () =>
    (
      (await sql(
        `select pid from pg_stat_activity where application_name = '${LISTENER_APPLICATION_NAME}' and datname = current_database()`,
      )) as Array<{ pid: number }>
    ).map((r) => r.pid);

  it('answer without a promise, and serve a commit by another connection once its notice arrives', async () => {
    const before = versions.read(NAMES);
    expect(typeof before).toBe('string');
    const started = Date.now();
    await bumpNow();
    const after = await servedWithin(
      () => versions.read(NAMES),
      (v) => major(v) === major(before as string) + 1,
      2_000,
    );
    expect(major(after)).toBe(major(before as string) + 1);
    // A notice on loopback arrives within milliseconds; a second of slack for a loaded machine.
    expect(Date.now() - started).toBeLessThan(1_000);
  });

  it("never hear of a transaction's write before it commits", async () => {
    const before = versions.read(NAMES) as string;
    let commit!: () => void;
    const gate = new Promise<void>((r) => (commit = r));
    let inside!: () => void;
    const written = new Promise<void>((r) => (inside = r));
    const transaction = server.database.db.em().transactional(async (tx) => {
      await bump(tx as EntityManager);
      inside();
      await gate;
    });
    await written;
    try {
      await new Promise((r) => setTimeout(r, 50));
      expect(versions.read(NAMES)).toBe(before);
    } finally {
      commit();
      await transaction;
    }
    expect(
      major(
        await servedWithin(
          () => versions.read(NAMES),
          (v) => v !== before,
          2_000,
        ),
      ),
    ).toBe(major(before) + 1);
  });

  it('read a name this process wrote from the database once, before its notice could arrive', async () => {
    await servedWithin(
      () => versions.read(NAMES),
      (v) => typeof v === 'string',
      2_000,
    );
    versions.written(['port-ops']);
    const read = versions.read(NAMES);
    expect(read).toBeInstanceOf(Promise);
    await read;
    expect(typeof versions.read(NAMES)).toBe('string');
  });

  it('read from the database while the listening connection is lost, and from memory again once it is back', async () => {
    const [pid] = await listenerPids();
    expect(pid).toBeGreaterThan(0);
    const before = versions.read(NAMES) as string;
    await sql(`select pg_terminate_backend(${pid})`);
    await servedWithin(
      () => versions.inMemory,
      (v) => !v,
      2_000,
    );
    // A change committed while nobody listens: its notice is never heard, and still it is served.
    await bumpNow();
    const during = await servedWithin(
      () => versions.read(NAMES),
      (v) => v !== before,
      2_000,
    );
    expect(major(during)).toBe(major(before) + 1);
    // Reconnected (the first retry is after 100 ms) and every version read again.
    await servedWithin(() => versions.inMemory, Boolean, 5_000);
    expect(versions.inMemory).toBe(true);
    const pids = await listenerPids();
    expect(pids).toHaveLength(1);
    expect(pids[0]).not.toBe(pid);
    expect(versions.read(NAMES)).toBe(during);
    await bumpNow();
    expect(
      major(
        await servedWithin(
          () => versions.read(NAMES),
          (v) => v !== during,
          2_000,
        ),
      ),
    ).toBe(major(during) + 1);
  });
});
