import { ReferenceKind } from '@mikro-orm/core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { describeEachDialect } from '../helpers/env.js';

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
