import { afterAll, beforeAll, expect, it } from 'vitest';
import { isUniqueViolation } from '../../src/db/errors.js';
import { Port } from '../../src/port-ops/entities.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { describeEachDialect } from '../helpers/env.js';

describeEachDialect('unique-key violations', (dialect) => {
  let database: TestDatabase;
  beforeAll(async () => {
    database = await createTestDatabase(dialect);
  });
  afterAll(() => database?.drop());

  const port = (id: string) => ({
    id,
    locode: 'SGSIN',
    name: 'Singapore',
    country: 'SG',
    time_zone: 'Asia/Singapore',
    created_at: dialect === 'sqlite' ? Date.now() : new Date(),
  });

  it('are recognised whether the ORM or knex reported them, and nothing else is', async () => {
    const knex = database.db.em().getKnex();
    await knex('ports').insert(port('11111111-1111-4111-8111-111111111111'));
    const viaKnex = await knex('ports')
      .insert(port('22222222-2222-4222-8222-222222222222'))
      .catch((e: unknown) => e);
    expect(isUniqueViolation(viaKnex)).toBe(true);

    const em = database.db.em();
    em.persist(
      em.create(Port, {
        locode: 'SGSIN',
        name: 'Again',
        country: 'SG',
        timeZone: 'Asia/Singapore',
        createdAt: new Date(),
      }),
    );
    const viaOrm = await em.flush().catch((e: unknown) => e);
    expect(isUniqueViolation(viaOrm)).toBe(true);

    const notNull = await knex('ports')
      .insert({ ...port('33333333-3333-4333-8333-333333333333'), locode: null, name: 'x' })
      .catch((e: unknown) => e);
    expect(notNull).toBeInstanceOf(Error);
    expect(isUniqueViolation(notNull)).toBe(false);
  });
});
