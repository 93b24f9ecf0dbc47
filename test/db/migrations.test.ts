import { randomBytes } from 'node:crypto';
import { ReferenceKind } from '@mikro-orm/core';
import { Client } from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { openAppDatabase } from '../../src/database.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { TEST_POSTGRES_URL, describeEachDialect, describeWithPostgres } from '../helpers/env.js';

describeEachDialect('checked-in migrations', (dialect) => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase(dialect);
  });
  afterAll(() => database?.drop());

  it('create every table and column the entities map', async () => {
    const conn = database.db.orm.em.getConnection();
    const missing: string[] = [];
    for (const meta of Object.values(database.db.orm.getMetadata().getAll())) {
      if (meta.embeddable || meta.virtual || !meta.tableName) continue;
      const columns = Object.values(meta.properties)
        .filter(
          (p) =>
            p.persist !== false &&
            [
              ReferenceKind.SCALAR,
              ReferenceKind.MANY_TO_ONE,
              ReferenceKind.ONE_TO_ONE,
              ReferenceKind.EMBEDDED,
            ].includes(p.kind),
        )
        .filter((p) => p.kind !== ReferenceKind.ONE_TO_ONE || p.owner)
        .flatMap((p) => p.fieldNames ?? []);
      try {
        await conn.execute(
          `select ${columns.map((c) => `"${c}"`).join(', ')} from "${meta.tableName}" where 1 = 0`,
        );
      } catch (e) {
        missing.push(`${meta.className} (${meta.tableName}): ${(e as Error).message.split('\n')[0]}`);
      }
    }
    expect(missing).toEqual([]);
  });

  it('leave no index that another index of its table begins with (it would only cost writes)', async () => {
    const conn = database.db.root.getConnection();
    type Index = { table: string; name: string; columns: string[]; unique: boolean };
    const indexes: Index[] =
      dialect === 'sqlite'
        ? (
            await conn.execute<Array<{ tbl: string; name: string; uniq: number; cols: string }>>(
              `select t.name as tbl, i.name, i."unique" as uniq,
                 (select group_concat(name, ',') from (select name from pragma_index_xinfo(i.name) where key = 1 order by seqno)) as cols
               from sqlite_master t, pragma_index_list(t.name) i
               where t.type = 'table' and i.partial = 0`,
            )
          ).map((r) => ({ table: r.tbl, name: r.name, columns: r.cols.split(','), unique: !!r.uniq }))
        : (
            await conn.execute<Array<{ tbl: string; name: string; uniq: boolean; cols: string[] }>>(
              `select t.relname as tbl, c.relname as name, x.indisunique as uniq,
                 array(select a.attname::text from unnest(x.indkey) with ordinality k(attnum, n)
                       join pg_attribute a on a.attrelid = x.indrelid and a.attnum = k.attnum order by k.n) as cols
               from pg_index x join pg_class c on c.oid = x.indexrelid join pg_class t on t.oid = x.indrelid
               join pg_namespace ns on ns.oid = t.relnamespace
               where ns.nspname = current_schema() and x.indpred is null and x.indexprs is null`,
            )
          ).map((r) => ({ table: r.tbl, name: r.name, columns: r.cols, unique: r.uniq }));
    expect(indexes.filter((i) => i.table === 'service_orders').length).toBeGreaterThan(3);
    const redundant = indexes.flatMap((index) =>
      indexes
        .filter(
          (other) =>
            other !== index &&
            !index.unique &&
            other.table === index.table &&
            other.columns.length >= index.columns.length &&
            index.columns.every((column, i) => other.columns[i] === column),
        )
        .map((other) => `${index.table}: ${index.name} (${index.columns.join(', ')}) begins ${other.name}`),
    );
    expect(redundant).toEqual([]);
  });

  it('are idempotent: a second run applies nothing', async () => {
    expect(await database.db.migrate()).toEqual([]);
  });
});

describeWithPostgres('a DATABASE_URL naming a missing PostgreSQL database', () => {
  it('is refused with a clear message instead of being created', async () => {
    const url = new URL(TEST_POSTGRES_URL!);
    const name = `tidegate_missing_${randomBytes(4).toString('hex')}`;
    url.pathname = `/${name}`;
    const db = await openAppDatabase(url.toString());
    try {
      await expect(db.migrate()).rejects.toThrow(
        `DATABASE_URL names PostgreSQL database '${name}' on ${url.hostname}:${url.port || 5432}, which does not exist; create it first (createdb ${name})`,
      );
    } finally {
      await db.close();
    }
    const admin = new Client({ connectionString: TEST_POSTGRES_URL });
    await admin.connect();
    const found = await admin.query('select 1 from pg_database where datname = $1', [name]);
    await admin.end();
    expect(found.rowCount).toBe(0);
  });
});
