import { Agent, request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { describeEachDialect } from '../helpers/env.js';
import { ApiKey } from '../../src/accounts/entities.js';
import { createApiKey, revokeApiKey, rotateApiKey } from '../../src/accounts/service.js';
import { DAY, HOUR, ManualClock } from '../../src/kernel/clock.js';
import { isAppError } from '../../src/kernel/errors.js';
import { rest, startTestServer, type Json, type TestServer } from '../helpers/server.js';

const LOOKUP = '/v1/vessels/lookup?imo=9074729';

describeEachDialect('API keys', (dialect) => {
  let server: TestServer;
  const clock = new ManualClock('2026-03-01T00:00:00Z');
  let accountId: string;
  const policy = { maxActiveKeys: 5, rotationGraceMs: 24 * HOUR };
  beforeAll(async () => {
    // The credential cache runs on the injected clock, so moving the clock expires cached keys too.
    server = await startTestServer({ dialect, clock });
    accountId = server.demo.accounts.find((a) => a.plan === 'ANALYST')!.accountId;
  });
  afterAll(() => server?.close());
  const em = () => server.database.db.em();

  it('are tg_ + at least 32 random bytes, stored only as a SHA-256 hash', async () => {
    const { key, secret } = await createApiKey({ em: em(), clock }, policy, {
      accountId,
      scopes: 'read:vessels',
    });
    expect(secret).toMatch(/^tg_[A-Za-z0-9_-]{43,}$/);
    const rows = await server.database.db.orm.em
      .getConnection()
      .execute('select * from api_keys where id = ?', [key.id]);
    const stored = JSON.stringify(rows);
    expect(stored).not.toContain(secret);
    expect(stored).not.toContain(secret.slice(3));
    expect(rows[0].secret_hash).toMatch(/^[0-9a-f]{64}$/);
    expect((await rest(server.url, LOOKUP, { key: secret })).status).toBe(200);
  });

  it('a revoked key gets 401 at once (this process evicts its cache)', async () => {
    const { key, secret } = await createApiKey({ em: em(), clock }, policy, { accountId });
    expect((await rest(server.url, LOOKUP, { key: secret })).status).toBe(200);
    await revokeApiKey({ em: em(), clock }, key.id);
    server.app.services.credentials.invalidateKey(key.id);
    const res = await rest(server.url, LOOKUP, { key: secret });
    expect(res.status).toBe(401);
    expect(res.body.error).toMatchObject({ code: 'UNAUTHORIZED', message: 'Missing or invalid credentials' });
  });

  it('an expired key gets 401', async () => {
    const { secret } = await createApiKey({ em: em(), clock }, policy, {
      accountId,
      expiresAt: new Date(clock.now().getTime() + HOUR),
    });
    expect((await rest(server.url, LOOKUP, { key: secret })).status).toBe(200);
    clock.advance(HOUR + 1000);
    expect((await rest(server.url, LOOKUP, { bearer: secret })).status).toBe(401);
  });

  it('allows at most 5 active keys per account, with a clear 409 and nothing written', async () => {
    const { createAccount } = await import('../../src/accounts/service.js');
    const account = await createAccount({ em: em(), clock }, { name: 'Limits Ltd', plan: 'ANALYST' });
    for (let i = 0; i < 5; i++) await createApiKey({ em: em(), clock }, policy, { accountId: account.id });
    const before = await em().count(ApiKey, { account: account.id });
    try {
      await createApiKey({ em: em(), clock }, policy, { accountId: account.id });
      expect.unreachable();
    } catch (e) {
      expect(isAppError(e) && e.code).toBe('CONFLICT');
      expect((e as Error).message).toMatch(/already has 5 active API keys \(the limit is 5\)/);
    }
    expect(await em().count(ApiKey, { account: account.id })).toBe(before);
  });

  it('rotation issues a new key and keeps the old one valid for 24 hours', async () => {
    const { key, secret: oldSecret } = await createApiKey({ em: em(), clock }, policy, {
      accountId,
      scopes: 'read:vessels read:port_calls',
      name: 'deploy',
    });
    const rotated = await rotateApiKey({ em: em(), clock }, policy, key.id);
    expect(rotated.key.scopes).toEqual(['read:port_calls', 'read:vessels']);
    expect(rotated.key.name).toBe('deploy');
    expect(rotated.previous.expiresAt!.getTime()).toBe(clock.now().getTime() + 24 * HOUR);
    expect((await rest(server.url, LOOKUP, { key: oldSecret })).status).toBe(200);
    expect((await rest(server.url, LOOKUP, { key: rotated.secret })).status).toBe(200);
    clock.advance(DAY + 1000);
    expect((await rest(server.url, LOOKUP, { key: oldSecret })).status).toBe(401);
    expect((await rest(server.url, LOOKUP, { key: rotated.secret })).status).toBe(200);
  });

  it('rotates a key once: the successor keeps the original expiry, a second rotation is refused', async () => {
    const expiresAt = new Date(clock.now().getTime() + 10 * DAY);
    const { key } = await createApiKey(
      { em: em(), clock },
      { ...policy, maxActiveKeys: 100 },
      {
        accountId,
        expiresAt,
        name: 'ci',
      },
    );
    const first = await rotateApiKey({ em: em(), clock }, policy, key.id);
    expect(first.key.expiresAt!.getTime()).toBe(expiresAt.getTime());
    expect(first.previous.expiresAt!.getTime()).toBe(clock.now().getTime() + 24 * HOUR);

    const before = await em().count(ApiKey, {});
    await expect(rotateApiKey({ em: em(), clock }, policy, key.id)).rejects.toThrow(
      `API key ${key.id} was already rotated; rotate its successor ${first.key.id} instead`,
    );
    expect(await em().count(ApiKey, {})).toBe(before);
    // The successor itself can be rotated, and its successor inherits the same original expiry.
    const second = await rotateApiKey({ em: em(), clock }, policy, first.key.id);
    expect(second.key.expiresAt!.getTime()).toBe(expiresAt.getTime());
  });

  it('two concurrent rotations of one key give one successor', async () => {
    const { createAccount } = await import('../../src/accounts/service.js');
    const account = await createAccount({ em: em(), clock }, { name: `Race ${dialect}`, plan: 'ANALYST' });
    const { key } = await createApiKey({ em: em(), clock }, policy, { accountId: account.id, name: 'race' });
    const results = await Promise.allSettled([
      rotateApiKey({ em: em(), clock }, policy, key.id),
      rotateApiKey({ em: em(), clock }, policy, key.id),
    ]);
    expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
    const refused = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
    expect(isAppError(refused.reason) && refused.reason.code).toBe('CONFLICT');
    expect(await em().count(ApiKey, { rotatedFromId: key.id })).toBe(1);
  });

  it('records when each key was last used, per key', async () => {
    const roomy = { ...policy, maxActiveKeys: 100 };
    const first = await createApiKey({ em: em(), clock }, roomy, { accountId, name: 'first' });
    const second = await createApiKey({ em: em(), clock }, roomy, { accountId, name: 'second' });
    const firstUse = clock.now().getTime();
    await rest(server.url, LOOKUP, { key: first.secret });
    clock.advance(HOUR);
    await rest(server.url, LOOKUP, { key: second.secret });
    await server.app.services.credentials.flushLastUsed();
    const stamped = await em().find(ApiKey, { id: { $in: [first.key.id, second.key.id] } });
    const at = (id: string) => stamped.find((k) => k.id === id)!.lastUsedAt!.getTime();
    expect(at(first.key.id)).toBe(firstUse);
    expect(at(second.key.id)).toBe(firstUse + HOUR);
  });

  it('refuses bad input with errors naming the field', async () => {
    const attempts: Array<[Record<string, unknown>, RegExp]> = [
      [{ accountId, scopes: 'read:vessels nope:read' }, /scopes: unknown scope: nope:read/],
      [{ accountId, name: '   ' }, /name: is required/],
      [{ accountId, expiresAt: new Date(clock.now().getTime() - 1) }, /expiresAt: must be in the future/],
      [{ accountId: 'not-a-uuid' }, /Account 'not-a-uuid' was not found/],
    ];
    for (const [input, message] of attempts) {
      const before = await em().count(ApiKey, {});
      await expect(createApiKey({ em: em(), clock }, policy, input as never)).rejects.toThrow(message);
      expect(await em().count(ApiKey, {})).toBe(before);
    }
  });

  it('answer for the key each request presents, when one keep-alive connection changes keys', async () => {
    // One socket for every request below (asserted): the per-connection memo of the last key's
    // hash must never answer for a different key, nor outlive a revocation.
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const viewer = (key: string) =>
      new Promise<{ status: number; reused: boolean; body: Json }>((resolve, reject) => {
        const url = new URL('/graphql', server.url);
        const req = httpRequest(
          url,
          { method: 'POST', agent, headers: { 'content-type': 'application/json', 'x-api-key': key } },
          (res) => {
            let text = '';
            res.setEncoding('utf8');
            res.on('data', (chunk: string) => (text += chunk));
            res.on('end', () =>
              resolve({
                status: res.statusCode ?? 0,
                reused: req.reusedSocket,
                body: JSON.parse(text) as Json,
              }),
            );
          },
        );
        req.on('error', reject);
        req.end(JSON.stringify({ query: '{ viewer { accountId credentialId } }' }));
      });
    // Earlier tests filled the accounts' five active keys.
    const roomy = { ...policy, maxActiveKeys: 100 };
    try {
      const other = server.demo.accounts.find((a) => a.accountId !== accountId)!.accountId;
      const first = await createApiKey({ em: em(), clock }, roomy, { accountId });
      const second = await createApiKey({ em: em(), clock }, roomy, { accountId: other });
      const seen: Array<{ status: number; account?: string; credential?: string }> = [];
      const reused: boolean[] = [];
      for (const secret of [first.secret, first.secret, second.secret, 'tg_not-a-real-key', first.secret]) {
        const res = await viewer(secret);
        reused.push(res.reused);
        const v = (res.body as { data?: { viewer?: { accountId: string; credentialId: string } } }).data
          ?.viewer;
        seen.push({ status: res.status, account: v?.accountId, credential: v?.credentialId });
      }
      expect(reused).toEqual([false, true, true, true, true]);
      expect(seen).toEqual([
        { status: 200, account: accountId, credential: first.key.id },
        { status: 200, account: accountId, credential: first.key.id },
        { status: 200, account: other, credential: second.key.id },
        { status: 401, account: undefined, credential: undefined },
        { status: 200, account: accountId, credential: first.key.id },
      ]);
      await revokeApiKey({ em: em(), clock }, first.key.id);
      server.app.services.credentials.invalidateKey(first.key.id);
      const revoked = await viewer(first.secret);
      expect(revoked.reused).toBe(true);
      expect(revoked.status).toBe(401);
    } finally {
      agent.destroy();
    }
  });
});

describe('REST error shapes', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server?.close());

  it('403 names the missing scope; bearer callers also get WWW-Authenticate insufficient_scope', async () => {
    const { createKey } = await import('../helpers/server.js');
    const { secret } = await createKey(server, { scopes: 'read:port_calls' });
    const viaHeader = await rest(server.url, LOOKUP, { key: secret });
    expect(viaHeader.status).toBe(403);
    expect(viaHeader.body.error).toMatchObject({
      code: 'FORBIDDEN',
      message: 'Missing required scope: read:vessels',
      details: { requiredScopes: ['read:vessels'] },
    });
    expect(viaHeader.headers.get('www-authenticate')).toBeNull();
    const viaBearer = await rest(server.url, LOOKUP, { bearer: secret });
    expect(viaBearer.status).toBe(403);
    expect(viaBearer.headers.get('www-authenticate')).toBe(
      'Bearer realm="tidegate", error="insufficient_scope", scope="read:vessels"',
    );
  });

  it('401 for a missing credential carries a Bearer challenge; an invalid bearer says invalid_token', async () => {
    const none = await rest(server.url, LOOKUP);
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toBe('Bearer realm="tidegate"');
    const bad = await rest(server.url, LOOKUP, { bearer: 'tg_nope' });
    expect(bad.status).toBe(401);
    expect(bad.headers.get('www-authenticate')).toMatch(/error="invalid_token"/);
  });

  it('echoes a sane incoming X-Request-Id and replaces an unsafe one', async () => {
    const echoed = await rest(server.url, LOOKUP, {
      key: server.key('ANALYST'),
      headers: { 'x-request-id': 'trace-abc.123' },
    });
    expect(echoed.headers.get('x-request-id')).toBe('trace-abc.123');
    const replaced = await rest(server.url, '/v1/nope', {
      headers: { 'x-request-id': 'bad id with spaces' },
    });
    expect(replaced.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
    expect(replaced.status).toBe(404);
    expect(replaced.body.error).toMatchObject({
      code: 'NOT_FOUND',
      requestId: replaced.headers.get('x-request-id'),
    });
  });
});

describe('refused keys', () => {
  let server: TestServer;
  const statements: string[] = [];
  beforeAll(async () => {
    server = await startTestServer({ onQuery: (sql) => statements.push(sql) });
  });
  afterAll(() => server?.close());

  it('are remembered briefly, so retrying a dead key does not query the database each time', async () => {
    const dead = `tg_${'x'.repeat(43)}`;
    statements.length = 0;
    for (let i = 0; i < 3; i++) expect((await rest(server.url, LOOKUP, { key: dead })).status).toBe(401);
    expect(statements.filter((s) => /from .api_keys.*secret_hash/.test(s))).toHaveLength(1);
  });
});
