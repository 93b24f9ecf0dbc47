import { afterAll, beforeAll, expect, it } from 'vitest';
import { DASHBOARD_QUERY } from '../bench/port-ops.js';
import { describeEachDialect } from '../helpers/env.js';
import { gql, rest, startTestServer, type Json, type TestServer } from '../helpers/server.js';

/*
 * A request whose reads are all prepared (src/db/prepared.ts) runs them on the ORM's root entity
 * manager (`GatewayContext.reads`) and forks none of its own; a request that loads entities still
 * gets its fork. Kept answers are off, so every request executes.
 */

describeEachDialect('requests of prepared reads fork no entity manager', (dialect) => {
  let server: TestServer;
  let key: string;
  let forks = 0;
  beforeAll(async () => {
    server = await startTestServer({ dialect, env: { ANSWER_CACHE_MB: '0' } });
    key = server.key('INSTITUTIONAL');
    const db = server.app.services.db;
    const fork = db.em.bind(db);
    // Only the request context's forks: the audit writer and background workers fork their own.
    db.em = () => {
      if (new Error().stack?.includes('gateway/schema/context')) forks++;
      return fork();
    };
  });
  afterAll(() => server?.close());

  async function forksOf(run: () => Promise<void>): Promise<number> {
    forks = 0;
    await run();
    return forks;
  }

  it('the dashboard by GraphQL and REST and the port-call list', async () => {
    expect(
      await forksOf(async () => {
        const answer = await gql(server.url, DASHBOARD_QUERY, { key });
        expect(answer.body.errors).toBeUndefined();
        expect((answer.body.data as Json).portCalls.nodes).toHaveLength(50);
      }),
    ).toBe(0);
    expect(
      await forksOf(async () => {
        const res = await rest(server.url, '/v1/dashboard/port-calls?limit=50', { key });
        expect(res.status).toBe(200);
        expect(res.body.data[0].serviceOrders).toBeInstanceOf(Array);
      }),
    ).toBe(0);
    expect(
      await forksOf(async () => {
        const res = await rest(server.url, '/v1/port-calls?status=SCHEDULED&limit=10', { key });
        expect(res.status).toBe(200);
        expect(res.body.data.length).toBeGreaterThan(0);
      }),
    ).toBe(0);
  });

  it('the vessel and port registers', async () => {
    for (const path of ['/v1/ports', '/v1/ports?limit=3&offset=2']) {
      expect(
        await forksOf(async () => {
          const res = await rest(server.url, path, { key });
          expect(res.status).toBe(200);
          expect(res.body.data.length).toBeGreaterThan(0);
        }),
      ).toBe(0);
    }
    expect(
      await forksOf(async () => {
        const answer = await gql(server.url, '{ vessels(first: 5) { totalCount nodes { imo name } } }', {
          key,
        });
        expect((answer.body.data as Json).vessels.nodes).toHaveLength(5);
      }),
    ).toBe(0);
  });

  it('a list filtered by IMO (an entity lookup) and a single call (loaded as an entity) fork one', async () => {
    const [call] = (await rest(server.url, '/v1/port-calls?status=SCHEDULED&limit=1', { key })).body
      .data as Json[];
    expect(
      await forksOf(async () => {
        const res = await rest(server.url, `/v1/port-calls?vesselImo=${call!.vesselImo}&limit=5`, { key });
        expect(res.status).toBe(200);
        expect(res.body.data.some((c: Json) => c.id === call!.id)).toBe(true);
      }),
    ).toBe(1);
    expect(
      await forksOf(async () => {
        const res = await rest(server.url, `/v1/port-calls/${call!.id}`, { key });
        expect(res.status).toBe(200);
        expect(res.body.statusHistory.length).toBeGreaterThan(0);
      }),
    ).toBe(1);
  });
});
