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
