import { ReferenceKind, type EntityMetadata } from '@mikro-orm/core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { SQLITE_WRITE_LOCK } from '../../src/db/prepared.js';
import { describeEachDialect } from '../helpers/env.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/*
 * A flush writes what changed, and nothing else. With `type: 'datetime'` (a string) MikroORM 6
 * compares a loaded date with `equals()`, which on SQLite sees the hydrated Date and the stored
 * epoch number as different: every flush rewrote every non-null date of every entity the unit of
 * work had loaded (a service order's creation updated its port's and vendor's `created_at`),
 * firing the version triggers and writing back values another process may have changed since.
 */
describeEachDialect('the ORM on loaded entities', (dialect) => {
  let server: TestServer;
  let recording = false;
  const writes: string[] = [];
  beforeAll(async () => {
    server = await startTestServer({
      dialect,
      onQuery: (sql) => {
        // The write lock a SQLite transaction takes first (src/db/orm.ts) writes no row.
        if (recording && /^\[query\] (insert|update|delete)\b/i.test(sql) && !sql.includes(SQLITE_WRITE_LOCK))
          writes.push(sql);
      },
    });
  });
  afterAll(() => server?.close());

  const datedEntities = (): EntityMetadata[] =>
    Object.values(server.database.db.orm.getMetadata().getAll()).filter(
      (meta) =>
        !meta.embeddable &&
        !meta.virtual &&
        meta.tableName &&
        meta.props.some((p) => p.kind === ReferenceKind.SCALAR && p.runtimeType === 'Date'),
    );

  it('covers the entities that hold dates, with rows in the demo data', async () => {
    const em = server.database.db.em();
    const withRows: string[] = [];
    for (const meta of datedEntities())
      if ((await em.count(meta.className, {})) > 0) withRows.push(meta.className);
    // The test below means something only if the demo data loads dated rows of each domain.
    expect(withRows).toEqual(
      expect.arrayContaining(['Port', 'Vendor', 'PortCall', 'ServiceOrder', 'Protocol']),
    );
  });

  it('flushes no statement for entities that were only read', async () => {
    const em = server.database.db.em();
    let loaded = 0;
    for (const meta of datedEntities()) loaded += (await em.find(meta.className, {}, { limit: 20 })).length;
    expect(loaded).toBeGreaterThan(0);
    writes.length = 0;
    recording = true;
    await em.flush();
    recording = false;
    expect(writes).toEqual([]);
  });

  it('writes only the changed column when one date changes', async () => {
    const em = server.database.db.em();
    const [call] = await em.find('PortCall', {}, { limit: 1 });
    const record = call as { eta: Date };
    record.eta = new Date(record.eta.getTime() + 60_000);
    writes.length = 0;
    recording = true;
    await em.flush();
    recording = false;
    expect(writes).toHaveLength(1);
    // One column set, by one id: `update port_calls set eta = ? where id = ?`.
    expect(writes[0]).toMatch(
      /^\[query\] update ["`]port_calls["`] set ["`]eta["`] = \S+ where ["`]id["`] = \S+( |$)/,
    );
  });
});
