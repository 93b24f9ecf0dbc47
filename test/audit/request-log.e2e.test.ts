import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeEachDialect } from '../helpers/env.js';
import { createKey, gql, rest, startTestServer, type Json, type TestServer } from '../helpers/server.js';

const USAGE = `query Usage($days: Int, $accountId: ID) {
  usage(days: $days, accountId: $accountId) {
    accountId plan perMinute perMonth portOperationsPerMinute callsThisMonth calls successful clientErrors serverErrors
    days { date calls successful clientErrors serverErrors }
    byOperation { operation calls successful clientErrors serverErrors }
    byOutcome { outcome status code calls }
  }
}`;

const LOG = `query Log($first: Int, $after: String, $accountId: ID, $outcome: CallOutcome, $status: Int, $operation: String, $since: DateTimeISO, $until: DateTimeISO) {
  requestLog(first: $first, after: $after, accountId: $accountId, outcome: $outcome, status: $status, operation: $operation, since: $since, until: $until) {
    totalCount
    pageInfo { hasNextPage endCursor }
    nodes { requestId accountId door operation status errorCode durationMs credentialKind credentialId ip }
  }
}`;

const ENTRY = `query Entry($requestId: String!, $accountId: ID) {
  requestLogEntry(requestId: $requestId, accountId: $accountId) { requestId accountId door operation status errorCode durationMs credentialId ip }
}`;

describeEachDialect('usage and the request log through the schema', (dialect) => {
  let server: TestServer;
  /** A fresh account whose only calls are the fixture's four. */
  let analyst: { secret: string; id: string };
  let analystAccount: string;
  /** Everyday reads and refusals come from another account, so they never count among the four. */
  let reader: { secret: string; id: string };
  let readerAccount: string;
  let professionalAccount: string;
  let admin: { secret: string; id: string };
  let adminAccount: string;
  const run = `${dialect}-${randomUUID().slice(0, 8)}`;

  beforeAll(async () => {
    server = await startTestServer({ dialect });
    const { createAccount } = await import('../../src/accounts/service.js');
    const quiet = await createAccount(
      { em: server.database.db.em(), clock: server.app.services.clock },
      { name: `Quiet ${run}`, plan: 'ANALYST' },
    );
    analystAccount = quiet.id;
    readerAccount = server.demo.accounts.find((a) => a.plan === 'ANALYST')!.accountId;
    reader = await createKey(server, { accountId: readerAccount, scopes: 'read:vessels read:analytics' });
    professionalAccount = server.demo.accounts.find((a) => a.plan === 'PROFESSIONAL')!.accountId;
    adminAccount = server.demo.admin.accountId;
    analyst = await createKey(server, { accountId: analystAccount, scopes: 'read:vessels read:analytics' });
    admin = await createKey(server, { accountId: adminAccount, scopes: 'admin read:analytics' });
    // The analyst's calls: two good lookups, one bad one (400), one GraphQL query; a professional call.
    for (const i of [1, 2]) {
      const ok = await rest(server.url, '/v1/vessels/lookup?imo=9074729', {
        key: analyst.secret,
        headers: { 'x-request-id': `${run}-ok-${i}` },
      });
      expect(ok.status).toBe(200);
    }
    const bad = await rest(server.url, '/v1/vessels/lookup?imo=12', {
      key: analyst.secret,
      headers: { 'x-request-id': `${run}-bad` },
    });
    expect(bad.status).toBe(400);
    await gql(server.url, 'query FleetCheck { vessel(imo: "9074729") { name } }', {
      key: analyst.secret,
      headers: { 'x-request-id': `${run}-gql` },
    });
    await rest(server.url, '/v1/vessels/lookup?imo=9074729', {
      key: server.key('PROFESSIONAL'),
      headers: { 'x-request-id': `${run}-other` },
    });
    await server.app.services.audit.flush();
  });
  afterAll(() => server?.close());

  const ask = (query: string, variables: Record<string, unknown>, key = reader.secret) =>
    gql(server.url, query, { key, variables });
  // Reads are calls too, audited under the reader's account: the analyst's figures are read by an
  // admin naming the account, so they stay the four calls made above.
  const asAdmin = (query: string, variables: Record<string, unknown>) =>
    ask(query, { accountId: analystAccount, ...variables }, admin.secret);
  const codeOf = (body: { errors?: Array<{ extensions?: Record<string, unknown> }> }) =>
    body.errors?.[0]?.extensions?.code;

  describe('usage', () => {
    it('counts the account’s calls per day, by operation and by outcome, beside the plan’s limits', async () => {
      const { body } = await asAdmin(USAGE, {});
      expect(body.errors).toBeUndefined();
      const usage = (body.data as Json).usage;
      expect(usage).toMatchObject({
        accountId: analystAccount,
        plan: 'ANALYST',
        perMinute: server.config.planLimits.ANALYST.perMinute,
        perMonth: server.config.planLimits.ANALYST.perMonth,
        portOperationsPerMinute: server.config.portOpsPerMinute,
      });
      expect(usage.days).toHaveLength(30);
      const today = new Date().toISOString().slice(0, 10);
      expect(usage.days[29].date).toBe(today);
      // The demo seed's key made no calls: these four are all of the account's.
      expect(usage.days[29]).toMatchObject({ calls: 4, successful: 3, clientErrors: 1, serverErrors: 0 });
      expect(usage).toMatchObject({ calls: 4, successful: 3, clientErrors: 1, callsThisMonth: 4 });
      expect(usage.byOperation).toEqual([
        { operation: 'GET /v1/vessels/lookup', calls: 3, successful: 2, clientErrors: 1, serverErrors: 0 },
        { operation: 'query FleetCheck', calls: 1, successful: 1, clientErrors: 0, serverErrors: 0 },
      ]);
      expect(usage.byOutcome).toEqual([
        { outcome: 'SUCCESS', status: 200, code: null, calls: 3 },
        { outcome: 'CLIENT_ERROR', status: 400, code: 'BAD_USER_INPUT', calls: 1 },
      ]);
    });

    it('answers a key holder about its own account, over a shorter period too', async () => {
      const { body } = await ask(USAGE, { days: 7 });
      const usage = (body.data as Json).usage;
      expect(usage.accountId).toBe(readerAccount);
      expect(usage.days).toHaveLength(7);
    });

    it.each([0, 91, -3])('refuses days: %s', async (days) => {
      const { body } = await ask(USAGE, { days });
      expect(codeOf(body)).toBe('BAD_USER_INPUT');
      expect(body.errors![0]!.message).toMatch(/^days: must be between 1 and 90/);
    });

    it('refuses another account’s usage without admin, and a malformed account id', async () => {
      const other = await ask(USAGE, { accountId: professionalAccount });
      expect(codeOf(other.body)).toBe('FORBIDDEN');
      expect(other.body.errors![0]!.message).toMatch(/admin/);
      const malformed = await ask(USAGE, { accountId: 'not-an-id' });
      expect(codeOf(malformed.body)).toBe('BAD_USER_INPUT');
      expect(malformed.body.errors![0]!.message).toMatch(/^accountId: must be a UUID/);
    });

    it('gives an admin its own account unless it names another; an unknown account is not found', async () => {
      const own = await ask(USAGE, {}, admin.secret);
      expect((own.body.data as Json).usage.accountId).toBe(adminAccount);
      const named = await asAdmin(USAGE, {});
      expect((named.body.data as Json).usage.accountId).toBe(analystAccount);
      const unknown = await ask(USAGE, { accountId: randomUUID() }, admin.secret);
      expect(codeOf(unknown.body)).toBe('NOT_FOUND');
    });

    it('needs read:analytics', async () => {
      const narrow = await createKey(server, { plan: 'ANALYST', scopes: 'read:vessels' });
      const { status, body } = await ask(USAGE, {}, narrow.secret);
      expect(status).toBe(403);
      expect(codeOf(body)).toBe('FORBIDDEN');
      expect(body.errors![0]!.message).toMatch(/read:analytics/);
    });

    it('needs a credential', async () => {
      const { status } = await gql(server.url, USAGE);
      expect(status).toBe(401);
    });
  });

  describe('request log', () => {
    const log = async (variables: Record<string, unknown>, key?: string) => {
      const { body } = key ? await ask(LOG, variables, key) : await asAdmin(LOG, variables);
      expect(body.errors).toBeUndefined();
      return (body.data as Json).requestLog;
    };

    it('lists the account’s calls newest first with door, status, code, latency, credential and IP', async () => {
      const page = await log({});
      expect(page.totalCount).toBe(4);
      expect(page.nodes.map((n: Json) => n.requestId)).toEqual([
        `${run}-gql`,
        `${run}-bad`,
        `${run}-ok-2`,
        `${run}-ok-1`,
      ]);
      expect(page.nodes[0]).toMatchObject({
        accountId: analystAccount,
        door: 'graphql-http',
        operation: 'query FleetCheck',
        status: 200,
        errorCode: null,
        credentialKind: 'api_key',
        credentialId: analyst.id,
        ip: '127.0.0.1',
      });
      expect(page.nodes[1]).toMatchObject({ door: 'rest', status: 400, errorCode: 'BAD_USER_INPUT' });
      expect(page.nodes[1].durationMs).toBeGreaterThanOrEqual(0);
    });

    it('filters by outcome, status and operation', async () => {
      expect((await log({ outcome: 'CLIENT_ERROR' })).nodes.map((n: Json) => n.requestId)).toEqual([
        `${run}-bad`,
      ]);
      expect((await log({ outcome: 'SUCCESS' })).totalCount).toBe(3);
      expect((await log({ outcome: 'SERVER_ERROR' })).totalCount).toBe(0);
      expect((await log({ status: 400 })).totalCount).toBe(1);
      expect((await log({ operation: 'query FleetCheck' })).totalCount).toBe(1);
      expect((await log({ operation: 'GET /v1/vessels/lookup', outcome: 'SUCCESS' })).totalCount).toBe(2);
      expect((await log({ since: new Date(Date.now() + 60_000).toISOString() })).totalCount).toBe(0);
    });

    it('pages with first and after', async () => {
      const first = await log({ first: 3 });
      expect(first.nodes).toHaveLength(3);
      expect(first.pageInfo.hasNextPage).toBe(true);
      const second = await log({ first: 3, after: first.pageInfo.endCursor });
      expect(second.nodes.map((n: Json) => n.requestId)).toEqual([`${run}-ok-1`]);
      expect(second.pageInfo.hasNextPage).toBe(false);
    });

    it('never shows another account’s calls; an admin sees its own unless it names one', async () => {
      // The reader's own earlier calls are written by the batching audit writer: flush them first.
      await server.app.services.audit.flush();
      const mine = await log({ first: 100 }, reader.secret);
      expect(mine.nodes.length).toBeGreaterThan(0);
      expect(mine.nodes.every((n: Json) => n.accountId === readerAccount)).toBe(true);
      const forbidden = await ask(LOG, { accountId: professionalAccount });
      expect(codeOf(forbidden.body)).toBe('FORBIDDEN');
      expect((await log({}, admin.secret)).nodes.every((n: Json) => n.accountId === adminAccount)).toBe(true);
      const named = await log({ accountId: professionalAccount });
      expect(named.nodes.map((n: Json) => n.requestId)).toContain(`${run}-other`);
    });

    it.each([
      [{ first: 0 }, /^first: must be between 1 and 100/],
      [{ first: 101 }, /^first: must be between 1 and 100/],
      [{ after: 'nope' }, /^after: is not a cursor/],
      [{ status: 42 }, /^status: must be an HTTP status between 100 and 599/],
      [{ operation: '' }, /^operation: must be 1 to 200 characters/],
      [{ since: '2026-02-01T00:00:00Z', until: '2026-01-01T00:00:00Z' }, /^since: must be before until/],
      [{ accountId: 'x' }, /^accountId: must be a UUID/],
    ])('refuses %j', async (variables, message) => {
      const { body } = await ask(LOG, variables);
      expect(codeOf(body)).toBe('BAD_USER_INPUT');
      expect(body.errors![0]!.message).toMatch(message);
    });

    it('refuses an outcome that is not one', async () => {
      const { status, body } = await ask(LOG, { outcome: 'TEAPOT' });
      expect(status).toBe(400);
      expect(body.errors![0]!.message).toMatch(/TEAPOT/);
    });
  });

  describe('request lookup', () => {
    it('opens the call a 4xx body’s requestId names', async () => {
      const bad = await rest(server.url, '/v1/vessels/lookup?imo=1', { key: reader.secret });
      expect(bad.status).toBe(400);
      const requestId = bad.body.error.requestId as string;
      await server.app.services.audit.flush();
      const { body } = await ask(ENTRY, { requestId });
      expect((body.data as Json).requestLogEntry).toMatchObject({
        requestId,
        accountId: readerAccount,
        door: 'rest',
        operation: 'GET /v1/vessels/lookup',
        status: 400,
        errorCode: 'BAD_USER_INPUT',
        credentialId: reader.id,
      });
    });

    it('does not find another account’s request, nor an unknown one', async () => {
      for (const requestId of [`${run}-other`, `${run}-never`]) {
        const { body } = await ask(ENTRY, { requestId });
        expect(codeOf(body)).toBe('NOT_FOUND');
        expect(body.errors![0]!.message).toBe(`request '${requestId}' was not found`);
      }
      const asAdmin = await ask(
        ENTRY,
        { requestId: `${run}-other`, accountId: professionalAccount },
        admin.secret,
      );
      expect((asAdmin.body.data as Json).requestLogEntry.accountId).toBe(professionalAccount);
      const forbidden = await ask(ENTRY, { requestId: `${run}-other`, accountId: professionalAccount });
      expect(codeOf(forbidden.body)).toBe('FORBIDDEN');
    });

    it.each(['', 'x'.repeat(65)])('refuses a request id of %s characters', async (requestId) => {
      const { body } = await ask(ENTRY, { requestId });
      expect(codeOf(body)).toBe('BAD_USER_INPUT');
      expect(body.errors![0]!.message).toMatch(/^requestId: must be 1 to 64 characters/);
    });
  });
});
