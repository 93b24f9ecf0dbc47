import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openAppDatabase } from '../../../src/database.js';
import { DASHBOARD_QUERY } from '../../bench/port-ops.js';
import { describeEachDialect } from '../../helpers/env.js';
import { otherWriterBoundMs, servedWithin } from '../../helpers/served.js';
import { parsePrometheus, seriesValue } from '../../helpers/prometheus.js';
import { gql, rest, startTestServer, type Json, type TestServer } from '../../helpers/server.js';

/*
 * Kept answers (src/gateway/pipeline/answers.ts) seen from outside: the same answer as an execution, by
 * every door; a write through the API served on the next request; a change by any other writer (raw
 * SQL on the account's rows, on the shared registers, another connection) at SQLite's next poll
 * and once its version's notice arrives on PostgreSQL; nothing kept across accounts (an
 * admin's reads, which span accounts, are test/port-ops/graphql.e2e.test.ts's), or for an operation
 * that reads anything the source does not cover.
 */

const CALL = `query Call($id: ID!) {
  portCall(id: $id) { id voyageReference status vessel { imo name } statusHistory { from to } }
}`;

async function outcomes(url: string): Promise<Record<'hit' | 'miss' | 'joined', number>> {
  const families = parsePrometheus(await (await fetch(`${url}/metrics`)).text());
  const of = (outcome: string) =>
    seriesValue(families, 'tidegate_answer_cache_total', { source: 'port-ops', outcome });
  return { hit: of('hit'), miss: of('miss'), joined: of('joined') };
}

describeEachDialect('kept answers', (dialect) => {
  let server: TestServer;
  let key: string;
  let sql: (text: string, values?: unknown[]) => Promise<unknown>;
  beforeAll(async () => {
    server = await startTestServer({ dialect });
    key = server.key('INSTITUTIONAL');
    const connection = server.database.db.em().getConnection();
    sql = (text, values = []) => connection.execute(text, values);
  });
  afterAll(() => server?.close());
  /** A change by another writer: served after SQLite's next poll, on PostgreSQL once its notice arrives. */
  const bound = otherWriterBoundMs(dialect);

  /** A scheduled call of the institutional account, with the vessel it carries. */
  async function scheduledCall(): Promise<Json> {
    return (await rest(server.url, '/v1/port-calls?status=SCHEDULED&limit=1', { key })).body.data[0];
  }

  it('answer as the execution did, by GraphQL POST and GET and the REST shim, counting hits', async () => {
    const before = await outcomes(server.url);
    const first = await gql(server.url, DASHBOARD_QUERY, { key });
    const second = await gql(server.url, DASHBOARD_QUERY, { key });
    expect(first.body.errors).toBeUndefined();
    expect(second.body.data).toEqual(first.body.data);
    const viaGet = await fetch(`${server.url}/graphql?query=${encodeURIComponent(DASHBOARD_QUERY)}`, {
      headers: { 'x-api-key': key, 'apollo-require-preflight': 'true' },
    });
    expect(((await viaGet.json()) as Json).data).toEqual(first.body.data);
    const restFirst = await rest(server.url, '/v1/dashboard/port-calls?limit=50', { key });
    const restSecond = await rest(server.url, '/v1/dashboard/port-calls?limit=50', { key });
    expect(restSecond.text).toBe(restFirst.text);
    const after = await outcomes(server.url);
    // The GraphQL dashboard executed at most once, and so did the REST route (its own operation).
    expect(after.miss - before.miss).toBeLessThanOrEqual(2);
    expect(after.hit - before.hit).toBeGreaterThanOrEqual(3);
  });

  it("serve a write through the API on the next request: the account's rows and a status change", async () => {
    const call = await scheduledCall();
    const read = async (): Promise<Json> =>
      ((await gql(server.url, CALL, { key, variables: { id: call.id } })).body.data as Json).portCall;
    expect((await read()).status).toBe('SCHEDULED');
    expect((await read()).status).toBe('SCHEDULED'); // kept now
    const moved = await rest(server.url, `/v1/port-calls/${call.id}/status`, {
      method: 'POST',
      key,
      body: { status: 'ARRIVED' },
    });
    expect(moved.status, moved.text).toBeLessThan(300);
    const after = await read();
    expect(after.status).toBe('ARRIVED');
    expect(after.statusHistory.at(-1)).toEqual({ from: 'SCHEDULED', to: 'ARRIVED' });
  });

  it('serve a change written straight to the database, by whoever wrote it (triggers move the version)', async () => {
    const call = await scheduledCall();
    const read = async (): Promise<Json> =>
      ((await gql(server.url, CALL, { key, variables: { id: call.id } })).body.data as Json).portCall;
    const kept = await read();
    await sql('update port_calls set voyage_reference = ? where id = ?', ['RAW-1', call.id]);
    expect((await servedWithin(read, (c) => c.voyageReference === 'RAW-1', bound)).voyageReference).toBe(
      'RAW-1',
    );
    // The shared vessel register: every account's answers that show the vessel.
    await sql('update vessels set name = ? where imo = ?', ['RENAMED BY SQL', kept.vessel.imo]);
    expect((await servedWithin(read, (c) => c.vessel.name === 'RENAMED BY SQL', bound)).vessel.name).toBe(
      'RENAMED BY SQL',
    );
  });

  it('serve a change another connection commits (another process: the CLI, a second gateway)', async () => {
    const call = await scheduledCall();
    const read = async (): Promise<Json> =>
      ((await gql(server.url, CALL, { key, variables: { id: call.id } })).body.data as Json).portCall;
    await read();
    expect((await read()).voyageReference).not.toBe('OTHER-CONNECTION');
    // A connection of its own, as another process has (on SQLite its moves stamp the version sequence ours checks).
    const other = await openAppDatabase(server.database.url);
    try {
      await other
        .em()
        .getConnection()
        .execute('update port_calls set voyage_reference = ? where id = ?', ['OTHER-CONNECTION', call.id]);
    } finally {
      await other.close();
    }
    const served = await servedWithin(read, (c) => c.voyageReference === 'OTHER-CONNECTION', bound);
    expect(served.voyageReference).toBe('OTHER-CONNECTION');
  });

  it("never serve one account's kept answer to another", async () => {
    const query = '{ portCalls(first: 1) { totalCount } }';
    const own = await gql(server.url, query, { key });
    const other = await gql(server.url, query, { key: server.key('ANALYST') });
    expect((own.body.data as Json).portCalls.totalCount).toBeGreaterThan(0);
    expect((other.body.data as Json).portCalls.totalCount).toBe(0);
  });

  it('execute every time an operation that reads anything else (a report window ending now)', async () => {
    const query = `{ portCalls(first: 1) { totalCount } invoices(first: 1) { totalCount } }`;
    const before = await outcomes(server.url);
    for (let i = 0; i < 3; i++) expect((await gql(server.url, query, { key })).body.errors).toBeUndefined();
    const after = await outcomes(server.url);
    expect(after).toEqual(before);
  });
});

describe('ANSWER_CACHE_MB=0', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ env: { ANSWER_CACHE_MB: '0' } });
  });
  afterAll(() => server?.close());

  it('keeps nothing: every request executes', async () => {
    const key = server.key('INSTITUTIONAL');
    for (let i = 0; i < 2; i++)
      expect((await gql(server.url, DASHBOARD_QUERY, { key })).body.errors).toBeUndefined();
    const families = parsePrometheus(await (await fetch(`${server.url}/metrics`)).text());
    expect(families.has('tidegate_answer_cache_total')).toBe(true);
    expect(seriesValue(families, 'tidegate_answer_cache_total', { source: 'port-ops', outcome: 'hit' })).toBe(
      0,
    );
  });
});
