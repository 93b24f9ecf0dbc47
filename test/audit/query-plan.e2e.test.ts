import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachDialect } from '../helpers/env.js';
import { expectIndexed, readRecorder } from '../helpers/query-plan.js';
import { createKey, gql, rest, startTestServer, type TestServer } from '../helpers/server.js';

/*
 * The plans of an account's reads of its own calls (src/audit/usage.ts): every statement that
 * usage, the request log and a request-id lookup run on `audit_records` reaches its rows through
 * an index, never by reading the table, which grows by a row per API call. Their groupings and
 * the log's id tiebreak may sort the account's rows (test/helpers/query-plan.ts); the lookup by
 * request id must go by the index that leads with it, and match the account there too.
 */
describeEachDialect('query plans of the reads of an account’s calls', (dialect) => {
  let server: TestServer;
  let key: string;
  const reads = readRecorder(/\baudit_records\b/);

  beforeAll(async () => {
    server = await startTestServer({ dialect, onQuery: reads.onQuery });
    key = (await createKey(server, { plan: 'ANALYST', scopes: 'read:vessels read:analytics' })).secret;
    for (const i of [1, 2, 3]) {
      const res = await rest(server.url, '/v1/vessels/lookup?imo=9074729', {
        key,
        headers: { 'x-request-id': `plan-${dialect}-${i}` },
      });
      expect(res.status).toBe(200);
    }
    await server.app.services.audit.flush();
  });
  afterAll(() => server?.close());

  /** Runs `query` and returns the plans of the audit statements it ran, each checked. */
  async function plansOf(query: string, variables: Record<string, unknown>): Promise<string[]> {
    const statements = await reads.record(async () => {
      const { body } = await gql(server.url, query, { key, variables });
      expect(body.errors).toBeUndefined();
    });
    return expectIndexed(server.database.db, statements, false);
  }

  it('usage: calls per day, by operation and this month', () =>
    plansOf('query Usage($days: Int) { usage(days: $days) { calls callsThisMonth days { calls } } }', {
      days: 30,
    }));

  it('the request log, with and without its filters, and its next page', async () => {
    const log = `query Log($after: String, $status: Int, $operation: String, $since: DateTimeISO) {
      requestLog(first: 2, after: $after, status: $status, operation: $operation, since: $since) {
        totalCount pageInfo { endCursor } nodes { requestId }
      }
    }`;
    await plansOf(log, {});
    await plansOf(log, { status: 200, operation: 'GET /v1/vessels/lookup', since: '2026-01-01T00:00:00Z' });
    const first = await gql(server.url, log, { key, variables: {} });
    const after = (first.body.data as { requestLog: { pageInfo: { endCursor: string } } }).requestLog.pageInfo
      .endCursor;
    await plansOf(log, { after });
  });

  it('a request id, by the index that leads with it', async () => {
    const plans = await plansOf(
      'query Entry($id: String!) { requestLogEntry(requestId: $id) { requestId } }',
      {
        id: `plan-${dialect}-2`,
      },
    );
    expect(plans.join('\n')).toMatch(/audit_records_request_id_account_id_at_id_index/);
  });
});
