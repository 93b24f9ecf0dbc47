import { afterAll, beforeAll, expect, it } from 'vitest';
import { describeEachDialect } from '../helpers/env.js';
import { AuditRecord } from '../../src/audit/entities.js';
import { ipPrefix, sessionFingerprint } from '../../src/audit/writer.js';
import { createKey, gql, rest, startTestServer, type TestServer } from '../helpers/server.js';

describeEachDialect('audit log', (dialect) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ dialect });
  });
  afterAll(() => server?.close());

  async function records(requestId: string) {
    await server.app.services.audit.flush();
    return server.database.db.em().find(AuditRecord, { requestId });
  }

  it('records a REST call with account, credential, IP, user agent, fingerprint, route, status and duration', async () => {
    const res = await rest(server.url, '/v1/vessels/lookup?imo=9074729', {
      key: server.key('ANALYST'),
      headers: { 'x-request-id': 'audit-rest-1', 'user-agent': 'audit-test/1.0' },
    });
    expect(res.status).toBe(200);
    const [record] = await records('audit-rest-1');
    expect(record).toMatchObject({
      accountId: server.demo.accounts.find((a) => a.plan === 'ANALYST')!.accountId,
      credentialKind: 'api_key',
      ip: '127.0.0.1',
      userAgent: 'audit-test/1.0',
      operation: 'GET /v1/vessels/lookup',
      status: 200,
    });
    expect(record!.fingerprint).toBe(sessionFingerprint(record!.credentialId, '127.0.0.1', 'audit-test/1.0'));
    expect(record!.durationMs).toBeGreaterThanOrEqual(0);
  });

  it('records GraphQL operations by name, and failures with their status', async () => {
    await gql(server.url, 'query FleetCheck { vessel(imo: "9074729") { name } }', {
      key: server.key('ANALYST'),
      headers: { 'x-request-id': 'audit-gql-1' },
    });
    expect((await records('audit-gql-1'))[0]).toMatchObject({ operation: 'query FleetCheck', status: 200 });
    await rest(server.url, '/v1/vessels/lookup?imo=9074729', { headers: { 'x-request-id': 'audit-401' } });
    expect((await records('audit-401'))[0]).toMatchObject({
      operation: 'GET /v1/vessels/lookup',
      status: 401,
      accountId: null,
    });
  });

  it('writes a large batch whole: prepared chunks and the remainder, nothing lost or doubled', async () => {
    const requestId = `batch-${dialect}`;
    for (let i = 0; i < 123; i++) {
      server.app.services.audit.record({
        at: new Date(Date.UTC(2026, 0, 1, 0, 0, i)),
        requestId,
        operation: `GET /batch/${i}`,
        status: 200,
        durationMs: i,
      });
    }
    const rows = await records(requestId);
    expect(rows).toHaveLength(123);
    expect(new Set(rows.map((r) => r.operation)).size).toBe(123);
    const last = rows.find((r) => r.operation === 'GET /batch/122')!;
    expect(last.at.toISOString()).toBe('2026-01-01T00:02:02.000Z');
    expect(last.durationMs).toBe(122);
  });

  it('stores text as it came, whatever it holds: quotes, braces, commas, backslashes, NULL', async () => {
    const requestId = `text-${dialect}`;
    const odd = ['say "hi", {x}', 'back\\slash \\"', 'NULL', '', 'ünïcødé ✓'];
    odd.forEach((userAgent, i) =>
      server.app.services.audit.record({
        at: new Date(Date.UTC(2026, 0, 2, 0, 0, i)),
        requestId,
        credentialKind: 'api_key',
        credentialId: `k${i}`,
        ip: '::1',
        userAgent,
        operation: `op ${userAgent}`,
        status: 400 + i,
        durationMs: 1.6,
        door: 'rest',
        errorCode: i === 2 ? 'NULL' : null,
      }),
    );
    const rows = (await records(requestId)).sort((a, b) => a.status - b.status);
    expect(rows.map((r) => r.userAgent)).toEqual(odd);
    expect(rows.map((r) => r.operation)).toEqual(odd.map((u) => `op ${u}`));
    expect(rows.map((r) => r.errorCode)).toEqual([null, null, 'NULL', null, null]);
    expect(rows.every((r) => r.durationMs === 2 && r.ip === '::1' && r.door === 'rest')).toBe(true);
  });

  it('honours TRUST_PROXY for the client IP', async () => {
    const proxied = await startTestServer({ env: { TRUST_PROXY: '127.0.0.1' }, seed: true });
    try {
      await rest(proxied.url, '/v1/vessels/lookup?imo=9074729', {
        key: proxied.key('ANALYST'),
        headers: { 'x-request-id': 'audit-proxy', 'x-forwarded-for': '203.0.113.9' },
      });
      await proxied.app.services.audit.flush();
      const [record] = await proxied.database.db.em().find(AuditRecord, { requestId: 'audit-proxy' });
      expect(record!.ip).toBe('203.0.113.9');
    } finally {
      await proxied.close();
    }
    // Without TRUST_PROXY the header is ignored.
    await rest(server.url, '/v1/vessels/lookup?imo=9074729', {
      key: server.key('ANALYST'),
      headers: { 'x-request-id': 'audit-noproxy', 'x-forwarded-for': '203.0.113.9' },
    });
    expect((await records('audit-noproxy'))[0]!.ip).toBe('127.0.0.1');
  });

  it('is readable by admins through GraphQL and refused to others', async () => {
    const admin = await createKey(server, { scopes: 'admin' });
    const res = await gql(
      server.url,
      '{ auditLog(first: 2) { totalCount edges { node { operation status } } pageInfo { hasNextPage endCursor } } }',
      { key: admin.secret },
    );
    expect(res.status).toBe(200);
    const log = res.body.data!.auditLog as {
      totalCount: number;
      edges: unknown[];
      pageInfo: { hasNextPage: boolean };
    };
    expect(log.totalCount).toBeGreaterThan(2);
    expect(log.edges).toHaveLength(2);
    expect(log.pageInfo.hasNextPage).toBe(true);
    const denied = await gql(server.url, '{ auditLog { totalCount } }', { key: server.key('INSTITUTIONAL') });
    expect(denied.status).toBe(403);
    expect(denied.body.errors![0]!.extensions).toMatchObject({
      code: 'FORBIDDEN',
      requiredScopes: ['admin'],
    });
    const badPage = await gql(server.url, '{ auditLog(first: 101) { totalCount } }', { key: admin.secret });
    expect(badPage.body.errors![0]).toMatchObject({
      message: 'first: must be between 1 and 100 (got 101)',
      extensions: { code: 'BAD_USER_INPUT' },
    });
    // Not a raw database error (PostgreSQL would refuse the uuid comparison).
    const badAccount = await gql(server.url, '{ auditLog(accountId: "not-a-uuid") { totalCount } }', {
      key: admin.secret,
    });
    expect(badAccount.body.errors![0]).toMatchObject({
      message: 'accountId: must be a UUID',
      extensions: { code: 'BAD_USER_INPUT', field: 'accountId' },
    });
  });

  it('groups a session by credential, network prefix and user agent', () => {
    expect(ipPrefix('192.0.2.77')).toBe('192.0.2.0/24');
    expect(ipPrefix('::ffff:192.0.2.77')).toBe('192.0.2.0/24');
    expect(ipPrefix('2001:db8:1:2::5')).toBe('2001:db8:1::/48');
    expect(sessionFingerprint('k1', '192.0.2.1', 'ua')).toBe(sessionFingerprint('k1', '192.0.2.200', 'ua'));
    expect(sessionFingerprint('k1', '192.0.2.1', 'ua')).not.toBe(sessionFingerprint('k2', '192.0.2.1', 'ua'));
    expect(sessionFingerprint(null, '192.0.2.1', 'ua')).toBeNull();
  });
});
