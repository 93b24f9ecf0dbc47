import type { EntityManager } from '@mikro-orm/knex';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { knexIn } from '../../src/db/knex.js';
import { readVersions } from '../../src/db/versions.js';
import { describeEachDialect } from '../helpers/env.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/*
 * The version read behind every kept port-operations answer. On SQLite it runs at once on the
 * pool's idle connection (no acquire); it must never do so while a transaction holds that
 * connection, or it would read the transaction's uncommitted rows.
 */
describeEachDialect('version reads', (dialect) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ dialect });
  });
  afterAll(() => server?.close());

  const NAMES = ['port-ops', 'port-ops:versions-test'] as const;
  const bump = (em: EntityManager) =>
    knexIn(em)('read_model_versions').where({ name: 'port-ops' }).increment('version', 1);

  it('read at once on an idle SQLite connection, through the pool on PostgreSQL', async () => {
    const root = server.database.db.root;
    await readVersions(root, NAMES); // the pool has handed out its connection once
    const read = readVersions(root, NAMES);
    if (dialect === 'sqlite') expect(typeof read).toBe('string');
    else expect(read).toBeInstanceOf(Promise);
    expect(await read).toMatch(/^\d+\.0$/);
  });

  it("never see a transaction's uncommitted write, and see its commit (on SQLite the read waits for the connection)", async () => {
    const root = server.database.db.root;
    const before = await readVersions(root, NAMES);
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
    const during = readVersions(root, NAMES);
    // SQLite's one connection is the transaction's: the read waits for it instead of running on it.
    expect(during).toBeInstanceOf(Promise);
    let settled: string | undefined;
    void Promise.resolve(during).then((v) => (settled = v));
    await new Promise((r) => setTimeout(r, 50));
    if (dialect === 'sqlite') expect(settled).toBeUndefined();
    else expect(settled).toBe(before);
    commit();
    await transaction;
    const major = (v: string) => Number(v.split('.')[0]);
    if (dialect === 'sqlite') expect(major(await during)).toBe(major(before) + 1);
    expect(major(await readVersions(root, NAMES))).toBe(major(before) + 1);
  });
});
