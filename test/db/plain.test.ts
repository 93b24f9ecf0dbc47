import { afterAll, beforeAll, expect, it } from 'vitest';
import { findPlain } from '../../src/db/plain.js';
import { Protocol } from '../../src/liquidity/entities.js';
import { Vendor } from '../../src/port-ops/entities.js';
import { describeEachDialect } from '../helpers/env.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

describeEachDialect('plain read-only rows', (dialect) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ dialect });
  });
  afterAll(() => server?.close());

  it('carry the same values as hydrated entities, JSON, booleans and dates included', async () => {
    const em = server.database.db.em();
    // Entity classes differ in shape; the comparison only needs their rows as plain objects.
    for (const [entity, orderBy] of [
      [Protocol, { slug: 'asc' }],
      [Vendor, { name: 'asc' }],
    ] as Array<[new () => object, Record<string, 'asc'>]>) {
      const hydrated = await server.database.db.em().find(entity, {}, { orderBy, limit: 5 });
      const plain = await findPlain(em, entity, {}, { orderBy, limit: 5 });
      expect(plain).toHaveLength(hydrated.length);
      expect(hydrated.length).toBeGreaterThan(0);
      for (let i = 0; i < plain.length; i++) {
        expect(plain[i]).toBeInstanceOf(entity);
        expect({ ...(plain[i] as object) }).toEqual({ ...(hydrated[i] as object) });
      }
    }
    // Getters of the entity class work on plain rows.
    const [protocol] = await findPlain(em, Protocol, {}, { orderBy: { slug: 'asc' }, limit: 1 });
    expect(protocol!.aumUsd).toMatch(/^\d+\.\d{2}$/);
    expect(Array.isArray(protocol!.chains)).toBe(true);
  });

  it('are not managed: changing one writes nothing', async () => {
    const em = server.database.db.em();
    const [vendor] = await findPlain(em, Vendor, {}, { orderBy: { name: 'asc' }, limit: 1 });
    vendor!.name = 'Renamed in memory';
    await em.flush();
    const stored = await server.database.db.em().findOneOrFail(Vendor, vendor!.id);
    expect(stored.name).not.toBe('Renamed in memory');
  });
});
