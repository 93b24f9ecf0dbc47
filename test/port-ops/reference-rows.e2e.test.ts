import { afterAll, beforeAll, expect, it } from 'vitest';
import { openAppDatabase } from '../../src/database.js';
import { describeEachDialect } from '../helpers/env.js';
import { otherWriterBoundMs, servedWithin } from '../helpers/served.js';
import { gql, rest, startTestServer, type Json, type TestServer } from '../helpers/server.js';

/*
 * Vessels and ports by id are kept per version of the shared `port-ops` data
 * (src/port-ops/reference-rows.ts). With kept answers off, so that every request executes: a repeated
 * read loads neither again, and a change by any writer (raw SQL on the server's connection, another
 * connection as another process has) is served after SQLite's next poll and once its notice arrives
 * on PostgreSQL, by GraphQL and by the REST shim alike.
 */

const CALLS = `{ portCalls(first: 5, status: SCHEDULED) { nodes { id vessel { imo name } port { locode name } } } }`;

describeEachDialect('vessels and ports kept per data version', (dialect) => {
  let server: TestServer;
  let key: string;
  let recording = false;
  const statements: string[] = [];
  let sql: (text: string, values?: unknown[]) => Promise<unknown>;
  beforeAll(async () => {
    server = await startTestServer({
      dialect,
      env: { ANSWER_CACHE_MB: '0' },
      onQuery: (text) => {
        if (recording) statements.push(text);
      },
    });
    key = server.key('INSTITUTIONAL');
    const connection = server.database.db.em().getConnection();
    sql = (text, values = []) => connection.execute(text, values);
  });
  afterAll(() => server?.close());
  /** A change by another writer: served after SQLite's next poll, on PostgreSQL once its notice arrives. */
  const bound = otherWriterBoundMs(dialect);

  const calls = async (): Promise<Json[]> => {
    const answer = await gql(server.url, CALLS, { key });
    expect(answer.body.errors).toBeUndefined();
    return (answer.body.data as Json).portCalls.nodes as Json[];
  };
  const restCalls = async (): Promise<Json[]> =>
    (await rest(server.url, '/v1/port-calls?status=SCHEDULED&limit=5', { key })).body.data as Json[];
  const reads = async (run: () => Promise<unknown>): Promise<string[]> => {
    statements.length = 0;
    recording = true;
    await run();
    recording = false;
    return statements.filter((s) => /from "(vessels|ports)"/.test(s));
  };

  it('a repeated read executes without reading a vessel or a port again', async () => {
    const first = await calls();
    expect(first.length).toBeGreaterThan(0);
    expect(first.every((c) => c.vessel.imo && c.port.locode)).toBe(true);
    // The server's own audit writes move nothing the rows depend on.
    const again = await reads(async () => expect(await calls()).toEqual(first));
    expect(again, again.join('\n')).toEqual([]);
    const viaRest = await reads(async () => {
      const rows = await restCalls();
      expect(rows.map((r) => [r.id, r.vesselImo, r.portLocode])).toEqual(
        first.map((c) => [c.id, c.vessel.imo, c.port.locode]),
      );
    });
    expect(viaRest, viaRest.join('\n')).toEqual([]);
  });

  it('serves a vessel or port changed straight in the database by GraphQL and REST, whoever changed it', async () => {
    const [call] = await calls();
    const { imo } = call!.vessel;
    await sql('update vessels set name = ? where imo = ?', ['RENAMED IN PLACE', imo]);
    const renamed = await servedWithin(calls, (c) => c[0]!.vessel.name === 'RENAMED IN PLACE', bound);
    expect(renamed[0]!.vessel).toEqual({ imo, name: 'RENAMED IN PLACE' });

    // Another connection, as the CLI or a second gateway has (on SQLite its moves stamp the version sequence ours checks).
    const other = await openAppDatabase(server.database.url);
    try {
      await other
        .em()
        .getConnection()
        .execute('update ports set name = ? where locode = ?', ['Renamed Elsewhere', call!.port.locode]);
    } finally {
      await other.close();
    }
    const moved = await servedWithin(calls, (c) => c[0]!.port.name === 'Renamed Elsewhere', bound);
    expect(moved[0]!.port).toEqual({ locode: call!.port.locode, name: 'Renamed Elsewhere' });

    // The REST shim's vesselImo comes from the same rows.
    expect((await restCalls()).find((r) => r.id === call!.id)?.vesselImo).toBe(imo);
    await sql('update vessels set imo = ? where imo = ?', ['1000019', imo]);
    const listed = await servedWithin(
      restCalls,
      (rows) => rows.find((r) => r.id === call!.id)?.vesselImo === '1000019',
      bound,
    );
    expect(listed.find((r) => r.id === call!.id)?.vesselImo).toBe('1000019');
  });
});
