import { randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/knex';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openAppDatabase } from '../../src/database.js';
import { knexIn } from '../../src/db/knex.js';
import { LISTENER_APPLICATION_NAME, POLL_MS, ReadModelVersions } from '../../src/db/versions.js';
import { ServiceType, Vendor } from '../../src/port-ops/entities.js';
import { describeEachDialect, describeWithPostgres } from '../helpers/env.js';
import { servedWithin } from '../helpers/served.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/*
 * The version reads behind every kept port-operations answer (src/db/versions.ts), from memory on
 * both dialects: on PostgreSQL kept by the database's notices, on SQLite by a poll at most every
 * POLL_MS. From the database (a SQLite poll, or PostgreSQL with the listener lost): on SQLite at
 * once on the pool's idle connection (no acquire), never while a transaction holds that connection
 * (it would read the transaction's uncommitted rows).
 */

const NAMES = ['port-ops', 'port-ops:versions-test'] as const;
const major = (v: string) => Number(v.split('.')[0]);
const bump = (em: EntityManager) =>
  knexIn(em)('read_model_versions').where({ name: 'port-ops' }).increment('version', 1);

describeEachDialect('version reads from the database', (dialect) => {
  let server: TestServer;
  /**
   * Never started, and on SQLite a poll due at every read: every read goes to the database, as
   * with the listener lost or at each SQLite poll.
   */
  let fromDatabase: ReadModelVersions;
  beforeAll(async () => {
    server = await startTestServer({ dialect });
    let now = 0;
    fromDatabase = new ReadModelVersions(server.database.db, { now: () => (now += POLL_MS) });
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

  it('the gateway listens for notices only on PostgreSQL', () => {
    expect(server.app.services.versions.inMemory).toBe(dialect === 'postgresql');
  });
});

/*
 * SQLite keeps the versions in memory and polls (src/db/versions.ts): a read more than POLL_MS after
 * the last poll reads, in one statement, only the rows stamped since the last stamp it saw of the
 * sequence every version move takes (Migration20261201000200VersionSequence), none when nothing
 * moved; a name this process's pipeline wrote is read at once. Nothing written but a version moves
 * the stamp.
 */
describe('version reads on SQLite: memory, polled', () => {
  let server: TestServer;
  const statements: string[] = [];
  beforeAll(async () => {
    server = await startTestServer({ dialect: 'sqlite', onQuery: (sql) => statements.push(sql) });
  });
  afterAll(() => server?.close());

  /** The poll: the rows stamped since the last stamp seen, `rows` of them. */
  const SINCE = (rows: number) => expect.stringMatching(new RegExp(`where seq > \\?.* ${rows} results?\\]`));

  /** The value read, and the version statements that read it. */
  async function reading(versions: ReadModelVersions): Promise<{ value: string; ran: string[] }> {
    statements.length = 0;
    const value = await versions.read(NAMES);
    return { value, ran: statements.filter((s) => /read_model_versions/.test(s)) };
  }
  const sql = (text: string) => server.database.db.em().getConnection().execute(text);
  const bumpShared = () =>
    sql(`update read_model_versions set version = version + 1 where name = 'port-ops'`);

  it('serve from memory within POLL_MS, then read only the rows moved since, in one statement', async () => {
    let now = 0;
    const versions = new ReadModelVersions(server.database.db, { now: () => now });
    const first = await reading(versions);
    expect(first.ran).toEqual([expect.stringMatching(/where seq > \?/)]);
    expect(await reading(versions)).toEqual({ value: first.value, ran: [] });
    // Rows that move no version (an account's name) leave the stamp where it was.
    await sql(`update accounts set name = name where id = '${server.demo.accounts[0]!.accountId}'`);
    now += POLL_MS;
    expect(await reading(versions)).toEqual({ value: first.value, ran: [SINCE(0)] });
    // Another writer (another connection, raw SQL) moves a version: unseen until the next poll.
    const other = await openAppDatabase(server.database.url);
    try {
      await other
        .em()
        .getConnection()
        .execute(`update read_model_versions set version = version + 1 where name = 'port-ops'`);
    } finally {
      await other.close();
    }
    now += POLL_MS - 1;
    expect(await reading(versions)).toEqual({ value: first.value, ran: [] });
    now += 1;
    const moved = await reading(versions);
    expect(major(moved.value)).toBe(major(first.value) + 1);
    expect(moved.ran).toEqual([SINCE(1)]);
    // A version these names do not read: read at the next poll, the value unchanged.
    await sql(`update read_model_versions set version = version + 1 where name = 'liquidity'`);
    now += POLL_MS;
    expect(await reading(versions)).toEqual({ value: moved.value, ran: [SINCE(1)] });
  });

  it("serve a name this process's pipeline wrote from the database on its next read", async () => {
    // The clock stands still: only the mark can send a read to the database.
    const versions = new ReadModelVersions(server.database.db, { now: () => 0 });
    const before = await versions.read(NAMES);
    await bumpShared();
    expect(await versions.read(NAMES)).toBe(before); // within POLL_MS: not heard of yet
    versions.written([NAMES[0]]);
    const after = await reading(versions);
    expect(major(after.value)).toBe(major(before) + 1);
    expect(after.ran).toEqual([SINCE(1)]);
    expect((await reading(versions)).ran).toEqual([]); // the mark is gone with the poll
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

  it('clear a mark with the first read begun after it, whatever other names are marked meanwhile', async () => {
    await servedWithin(
      () => versions.read(NAMES),
      (v) => typeof v === 'string',
      2_000,
    );
    versions.written([NAMES[1]]);
    const read = versions.read(NAMES);
    expect(read).toBeInstanceOf(Promise);
    versions.written(['port-ops:another-account']); // another tenant's write while the read runs
    await read;
    expect(typeof versions.read(NAMES)).toBe('string');
    // A mark of the same name made while a read runs outlives that read.
    versions.written([NAMES[1]]);
    const first = versions.read(NAMES);
    versions.written([NAMES[1]]);
    await first;
    const second = versions.read(NAMES);
    expect(second).toBeInstanceOf(Promise);
    await second;
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
