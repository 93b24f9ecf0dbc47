import { afterAll, beforeAll, beforeEach, expect, it } from 'vitest';
import { Account, ApiKey } from '../../src/accounts/entities.js';
import { changePlan } from '../../src/accounts/service.js';
import { AuthSession } from '../../src/auth/entities.js';
import { HOUR, ManualClock, MINUTE, SECOND } from '../../src/kernel/clock.js';
import { sha256Hex } from '../../src/kernel/crypto.js';
import { Plan } from '../../src/kernel/plans.js';
import { SANDBOX_SCOPES } from '../../src/playground/sandbox.js';
import { Browser, createAnalystUser, PASSWORD, startAuthServer } from '../auth/helpers.js';
import { describeEachDialect } from '../helpers/env.js';
import { gql, rest, type Json, type TestServer } from '../helpers/server.js';

const PER_MINUTE = 8;
const MAX_KEYS = 7;

describeEachDialect('sandbox keys from the playground', (dialect) => {
  let server: TestServer;
  let clock: ManualClock;
  let user: { id: string; email: string; accountId: string };
  let browser: Browser;
  let csrf: string;

  const counts = async () => {
    const em = server.database.db.em();
    return { accounts: await em.count(Account, {}), keys: await em.count(ApiKey, {}) };
  };

  async function signIn(): Promise<void> {
    browser = new Browser(server.url);
    const login = await browser.login(user.email, PASSWORD, '/playground');
    expect(login.status).toBe(303);
    expect(login.headers.get('location')).toBe('/playground');
    const session = (await (await browser.fetch('/playground/session')).json()) as Json;
    expect(session).toMatchObject({ signedIn: true, email: user.email, accountName: 'Demo Analyst' });
    csrf = session.csrfToken;
  }

  const generate = (headers: Record<string, string> = { 'x-csrf-token': csrf }, body = '{}') =>
    browser.fetch('/playground/sandbox-keys', {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body,
    });

  async function newKey(): Promise<{
    key: string;
    keyId: string;
    sandboxAccountId: string;
    expiresAt: string;
  }> {
    const res = await generate();
    expect(res.status).toBe(201);
    return (await res.json()) as never;
  }

  beforeAll(async () => {
    clock = new ManualClock(new Date(Math.floor(Date.now() / HOUR) * HOUR));
    server = await startAuthServer({
      dialect,
      clock,
      env: { SANDBOX_PER_MINUTE: String(PER_MINUTE), SANDBOX_MAX_ACTIVE_KEYS: String(MAX_KEYS) },
    });
    user = await createAnalystUser(server, clock);
    await signIn();
  });
  afterAll(() => server?.close());
  // Each test starts in a fresh rate-limit minute.
  beforeEach(() => clock.advance(MINUTE));

  it('tells a signed-out page where to sign in, and a signed-in one its CSRF token', async () => {
    const anonymous = await fetch(`${server.url}/playground/session`);
    expect(anonymous.headers.get('cache-control')).toBe('no-store');
    expect(await anonymous.json()).toEqual({
      signedIn: false,
      signInUrl: '/console/login?return_to=%2Fplayground',
    });
    const session = await browser.fetch('/playground/session');
    expect(session.headers.get('cache-control')).toBe('no-store');
    expect(((await session.json()) as Json).csrfToken).toBe(csrf);
  });

  it('issues a tg_sandbox_ key once, stored hashed, expiring in 24 h, on a sandbox account with demo data', async () => {
    const before = await counts();
    const res = await generate();
    expect(res.status).toBe(201);
    expect(res.headers.get('cache-control')).toBe('no-store');
    const body = (await res.json()) as Json;
    expect(body.key).toMatch(/^tg_sandbox_[A-Za-z0-9_-]{43}$/);
    expect(body.header).toBe('X-API-Key');
    expect(body.rateLimitPerMinute).toBe(PER_MINUTE);
    expect(body.expiresAt).toBe(new Date(clock.now().getTime() + 24 * HOUR).toISOString());
    expect([...body.scopes].sort()).toEqual([...SANDBOX_SCOPES].sort());
    expect(body.scopes).not.toContain('admin');
    expect(body.scopes).not.toContain('webhooks:manage');
    expect(body.scopes).not.toContain('export:liquidity');

    const em = server.database.db.em();
    const stored = await em.findOneOrFail(ApiKey, { id: body.keyId }, { populate: ['account'] });
    expect(stored.secretHash).toBe(sha256Hex(body.key));
    expect(JSON.stringify(await em.getConnection().execute('select * from api_keys'))).not.toContain(
      body.key,
    );
    const sandbox = await em.findOneOrFail(Account, { id: body.sandboxAccountId });
    expect(sandbox.sandboxOf).toBe(user.accountId);
    expect(sandbox.name).toBe('Demo Analyst (sandbox)');
    expect(stored.account.id).toBe(sandbox.id);
    expect(await counts()).toEqual({ accounts: before.accounts + 1, keys: before.keys + 1 });

    const { body: data } = await gql(
      server.url,
      '{ viewer { accountId accountName plan } portCalls(first: 20) { totalCount edges { node { voyageReference } } } }',
      { key: body.key },
    );
    expect(data.errors).toBeUndefined();
    // The owner's plan (Analyst), on the sandbox tenant with its demo calls only.
    expect(data.data!.viewer).toEqual({
      accountId: sandbox.id,
      accountName: 'Demo Analyst (sandbox)',
      plan: 'ANALYST',
    });
    const calls = data.data!.portCalls as Json;
    expect(calls.totalCount).toBe(6);
    for (const { node } of calls.edges) expect(node.voyageReference).toMatch(/^SANDBOX-\d{3}$/);

    // A second key reuses the sandbox: no second account, no second copy of the demo data.
    const again = await newKey();
    expect(again.sandboxAccountId).toBe(body.sandboxAccountId);
    expect(await counts()).toEqual({ accounts: before.accounts + 1, keys: before.keys + 2 });
  });

  it('cannot read or write a real account’s data: its port calls are 404 / null / NOT_FOUND, and nothing changes', async () => {
    const realKey = server.key('ANALYST');
    const created = await gql(
      server.url,
      `mutation { createPortCall(input: { vesselImo: "9074729", portLocode: "SGSIN", voyageReference: "REAL-1",
         agent: "Real Agency", eta: "${new Date(clock.now().getTime() + 48 * HOUR).toISOString()}" }) { id } }`,
      { key: realKey },
    );
    expect(created.body.errors).toBeUndefined();
    const realId = (created.body.data!.createPortCall as Json).id as string;
    const { key } = await newKey();

    expect((await gql(server.url, `{ portCall(id: "${realId}") { id } }`, { key })).body.data).toEqual({
      portCall: null,
    });
    const viaRest = await rest(server.url, `/v1/port-calls/${realId}`, { key });
    expect(viaRest.status).toBe(404);
    const update = await gql(
      server.url,
      `mutation { updatePortCall(id: "${realId}", patch: { agent: "Sandbox was here" }) { id } }`,
      { key },
    );
    expect(update.body.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
    const remove = await gql(server.url, `mutation { deletePortCall(id: "${realId}") }`, { key });
    expect(remove.body.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
    const list = await gql(server.url, '{ portCalls(first: 100) { edges { node { id } } } }', { key });
    expect((list.body.data!.portCalls as Json).edges.map((e: Json) => e.node.id)).not.toContain(realId);

    const real = await gql(server.url, `{ portCall(id: "${realId}") { id agent } }`, { key: realKey });
    expect(real.body.data!.portCall).toEqual({ id: realId, agent: 'Real Agency' });

    // What the sandbox writes stays in the sandbox.
    const own = await gql(
      server.url,
      `mutation { createPortCall(input: { vesselImo: "9074729", portLocode: "SGSIN", voyageReference: "MINE-1",
         eta: "${new Date(clock.now().getTime() + 72 * HOUR).toISOString()}" }) { id } }`,
      { key },
    );
    expect(own.body.errors).toBeUndefined();
    const ownId = (own.body.data!.createPortCall as Json).id as string;
    expect(
      (await gql(server.url, `{ portCall(id: "${ownId}") { id } }`, { key: realKey })).body.data,
    ).toEqual({
      portCall: null,
    });
  });

  it(`allows ${PER_MINUTE} calls a minute per key, then 429 with Retry-After; another key has its own budget`, async () => {
    const { key } = await newKey();
    for (let i = 1; i <= PER_MINUTE; i++) {
      const res = await rest(server.url, '/v1/vessels/lookup?imo=9074729', { key });
      expect(res.status, `call ${i}`).toBe(200);
      expect(res.headers.get('x-ratelimit-limit')).toBe(String(PER_MINUTE));
      expect(res.headers.get('x-ratelimit-remaining')).toBe(String(PER_MINUTE - i));
    }
    const refused = await rest(server.url, '/v1/vessels/lookup?imo=9074729', { key });
    expect(refused.status).toBe(429);
    expect(refused.body.error.message).toMatch(`sandbox keys allow ${PER_MINUTE} requests per minute`);
    expect(Number(refused.headers.get('retry-after'))).toBeGreaterThan(0);
    // A plan-gated call spends the key's budget too, before the plan's: refused alike.
    const liquidity = await gql(server.url, '{ protocols(first: 1) { totalCount } }', { key });
    expect(liquidity.status).toBe(429);
    expect(liquidity.body.errors![0]!.message).toMatch(
      `sandbox keys allow ${PER_MINUTE} requests per minute`,
    );

    const other = await newKey();
    expect((await rest(server.url, '/v1/vessels/lookup?imo=9074729', { key: other.key })).status).toBe(200);
    clock.advance(MINUTE);
    expect((await rest(server.url, '/v1/vessels/lookup?imo=9074729', { key })).status).toBe(200);
  });

  it('spends the owner’s plan budget on plan-gated (liquidity) calls, besides its own per-key budget', async () => {
    const { key } = await newKey();
    const query = '{ protocols(first: 1) { totalCount } }';
    const own = await gql(server.url, query, { key: server.key('ANALYST') });
    expect(own.status).toBe(200);
    const remaining = Number(own.headers.get('x-ratelimit-remaining'));
    const sandboxed = await gql(server.url, query, { key });
    expect(sandboxed.status).toBe(200);
    expect(sandboxed.body.errors).toBeUndefined();
    expect(sandboxed.headers.get('x-ratelimit-limit')).toBe(
      String(server.config.planLimits.ANALYST.perMinute),
    );
    expect(Number(sandboxed.headers.get('x-ratelimit-remaining'))).toBe(remaining - 1);
    expect(sandboxed.headers.get('x-quota-limit')).toBe(String(server.config.planLimits.ANALYST.perMonth));
  });

  it('acts with the owner’s current plan, whatever plan its sandbox account was created with', async () => {
    const em = server.database.db.em();
    await changePlan(em, user.accountId, Plan.PROFESSIONAL);
    try {
      const { key, sandboxAccountId } = await newKey();
      expect((await em.findOneOrFail(Account, { id: sandboxAccountId })).plan).toBe(Plan.ANALYST);
      const { body } = await gql(server.url, '{ viewer { plan } }', { key });
      expect(body.data!.viewer).toEqual({ plan: 'PROFESSIONAL' });
    } finally {
      await changePlan(em, user.accountId, Plan.ANALYST);
    }
  });

  it(`refuses a key past ${MAX_KEYS} unexpired ones with 409, naming the limit and writing nothing`, async () => {
    const em = server.database.db.em();
    const sandbox = await em.findOneOrFail(Account, { sandboxOf: user.accountId });
    const active = await em.count(ApiKey, { account: sandbox.id, expiresAt: { $gt: clock.now() } });
    for (let i = active; i < MAX_KEYS; i++) await newKey();
    const before = await counts();
    const res = await generate();
    expect(res.status).toBe(409);
    const body = (await res.json()) as Json;
    expect(body.error.code).toBe('CONFLICT');
    expect(body.error.message).toMatch(`already has ${MAX_KEYS} unexpired sandbox keys`);
    expect(body.error.details.limit).toBe(MAX_KEYS);
    expect(await counts()).toEqual(before);
  });

  it('refuses to issue without a session, with an expired one, without or with a wrong CSRF token, or with a non-JSON body; nothing is written', async () => {
    const before = await counts();
    const anonymous = await fetch(`${server.url}/playground/sandbox-keys`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-csrf-token': csrf },
      body: '{}',
    });
    expect(anonymous.status).toBe(401);
    expect(((await anonymous.json()) as Json).error.message).toMatch(/Sign in to generate a sandbox key/);

    const noToken = await generate({});
    expect(noToken.status).toBe(403);
    expect(((await noToken.json()) as Json).error).toMatchObject({
      code: 'FORBIDDEN',
      details: { field: 'X-CSRF-Token' },
    });
    expect((await generate({ 'x-csrf-token': `${csrf}x` })).status).toBe(403);
    // A cross-site form can post the token in the body, never in the header: refused.
    const form = await browser.post('/playground/sandbox-keys', { csrf });
    expect(form.status).toBe(403);
    const text = await generate({ 'x-csrf-token': csrf, 'content-type': 'text/plain' }, 'hello');
    expect(text.status).toBe(415);

    const expired = new Browser(server.url);
    await expired.login(user.email, PASSWORD);
    const token = ((await (await expired.fetch('/playground/session')).json()) as Json).csrfToken;
    await server.database.db
      .em()
      .nativeUpdate(
        AuthSession,
        { csrfToken: token },
        { expiresAt: new Date(clock.now().getTime() - SECOND) },
      );
    const late = await expired.fetch('/playground/sandbox-keys', {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-csrf-token': token },
      body: '{}',
    });
    expect(late.status).toBe(401);
    expect(await counts()).toEqual(before);
  });

  it('stops working once expired (24 h), which frees room for new keys; the next key deletes the expired ones', async () => {
    // Every earlier key has expired by now (and the 12 h console session with them).
    clock.advance(24 * HOUR);
    await signIn();
    const { key, expiresAt } = await newKey();
    expect((await rest(server.url, '/v1/vessels/lookup?imo=9074729', { key })).status).toBe(200);
    clock.set(new Date(new Date(expiresAt).getTime() - SECOND));
    expect((await rest(server.url, '/v1/vessels/lookup?imo=9074729', { key })).status).toBe(200);
    clock.advance(2 * SECOND);
    expect((await rest(server.url, '/v1/vessels/lookup?imo=9074729', { key })).status).toBe(401);
    expect((await gql(server.url, '{ viewer { accountId } }', { key })).status).toBe(401);

    // The next key clears the expired ones out: only it is left in the sandbox.
    await signIn();
    const next = await newKey();
    const left = await server.database.db.em().find(ApiKey, { account: next.sandboxAccountId });
    expect(left.map((k) => k.id)).toEqual([next.keyId]);
  });
});
