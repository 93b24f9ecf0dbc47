import { afterAll, beforeAll, expect, it } from 'vitest';
import { createAccount } from '../../../src/accounts/service.js';
import { ApiKey } from '../../../src/accounts/entities.js';
import { AuditRecord } from '../../../src/audit/entities.js';
import { authCommands } from '../../../src/auth/cli.js';
import { commitEvents, tierChange } from '../../events/helpers.js';
import {
  describeEachDialect,
  describeWithPostgres,
  describeWithRedis,
  TEST_REDIS_URL,
} from '../../helpers/env.js';
import { createKey, gql, startTestServer, type Json, type TestServer } from '../../helpers/server.js';
import { startGatewayProcess, type GatewayProcess } from '../../events/process.js';
import { Connection } from './ws-connection.js';

const SET_PLAN = `mutation ($accountId: ID!, $plan: Plan!) {
  setAccountPlan(accountId: $accountId, plan: $plan) { accountId previousPlan plan }
}`;
const COMPLIANCE = 'subscription { complianceAlerts { eventId } }';
const TIERS = 'subscription { tierChanged { slug } }';
const CALLS = 'subscription { portCallUpdated { eventId } }';

/** A fresh account on `plan` with a key of every scope but admin: each test changes its own. */
async function account(
  server: TestServer,
  plan: string,
): Promise<{ id: string; key: string; keyId: string }> {
  const { id } = await createAccount(
    { em: server.database.db.em(), clock: server.app.services.clock },
    { name: `live ${plan}`, plan },
  );
  const key = await createKey(server, { accountId: id });
  return { id, key: key.secret, keyId: key.id };
}

async function subscribed(url: string, key: string, subscriptions: Record<string, string>) {
  const connection = await Connection.open(url, key);
  for (const [id, query] of Object.entries(subscriptions))
    connection.send({ type: 'subscribe', id, payload: { query } });
  await connection.roundTrip();
  return connection;
}

const ended = (c: Connection, id: string) => c.messages.some((m) => m.type === 'complete' && m.id === id);
const errorsOf = (c: Connection, id: string): Json[] =>
  c.messages
    .filter((m) => m.id === id && m.type === 'next' && m.payload.errors)
    .flatMap((m) => m.payload.errors);

/** Asks `viewer { plan }` over the connection until it answers `plan` (a re-check is asynchronous). */
async function untilPlan(connection: Connection, plan: string): Promise<void> {
  for (let i = 0; i < 100; i++) {
    if ((await connection.execute(`plan-${i}`, '{ viewer { plan } }')).data.viewer.plan === plan) return;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`the connection never answered ${plan}`);
}

describeEachDialect('open graphql-ws connections follow the account', (dialect) => {
  let server: TestServer;
  let admin: string;
  beforeAll(async () => {
    server = await startTestServer({ dialect });
    admin = (await createKey(server, { plan: 'INSTITUTIONAL', scopes: 'admin' })).secret;
  });
  afterAll(() => server?.close());

  it('a downgrade by the admin mutation ends what the new plan does not allow, at once; the rest goes on', async () => {
    const { id, key } = await account(server, 'PROFESSIONAL');
    const connection = await subscribed(server.url, key, { compliance: COMPLIANCE, tiers: TIERS });
    expect((await connection.execute('v1', '{ viewer { plan } }')).data.viewer.plan).toBe('PROFESSIONAL');

    const changed = await gql(server.url, SET_PLAN, {
      key: admin,
      variables: { accountId: id, plan: 'ANALYST' },
    });
    expect(changed.body.data).toEqual({
      setAccountPlan: { accountId: id, previousPlan: 'PROFESSIONAL', plan: 'ANALYST' },
    });

    await connection.until(() => ended(connection, 'compliance'), 'the compliance feed to end');
    expect(errorsOf(connection, 'compliance').map((e) => e.extensions.code)).toEqual(['PLAN_REQUIRED']);
    expect(connection.closed).toBeUndefined();
    expect((await connection.execute('v2', '{ viewer { plan } }')).data.viewer.plan).toBe('ANALYST');
    const refused = await connection.execute('again', COMPLIANCE);
    expect(refused.errors.map((e: Json) => e.extensions.code)).toEqual(['PLAN_REQUIRED']);

    // The Analyst feed still runs: an event reaches it.
    await commitEvents(server, [tierChange('after-downgrade')]);
    await connection.until(
      () =>
        connection.messages.some(
          (m) => m.id === 'tiers' && m.payload?.data?.tierChanged?.slug === 'after-downgrade',
        ),
      'the tier event',
    );
    expect(ended(connection, 'tiers')).toBe(false);
    // HTTP answers with the new plan at once too (the credential cache forgot the account).
    expect((await gql(server.url, '{ viewer { plan } }', { key })).body.data!.viewer).toEqual({
      plan: 'ANALYST',
    });

    const audited = await server.database.db
      .em()
      .find(AuditRecord, { accountId: id, operation: { $like: 'set-plan%' } });
    expect(audited.map((r) => [r.operation, r.credentialKind])).toEqual([
      ['set-plan PROFESSIONAL→ANALYST', 'api_key'],
    ]);
    connection.close();
  });

  it('the mutation needs the admin scope, and names a bad account', async () => {
    const { id, key } = await account(server, 'ANALYST');
    const own = await gql(server.url, SET_PLAN, { key, variables: { accountId: id, plan: 'INSTITUTIONAL' } });
    expect(own.body.errors?.[0]?.extensions?.code).toBe('FORBIDDEN');
    const unknown = await gql(server.url, SET_PLAN, {
      key: admin,
      variables: { accountId: '00000000-0000-4000-8000-000000000000', plan: 'OBSERVER' },
    });
    expect(unknown.body.errors?.[0]?.extensions?.code).toBe('NOT_FOUND');
  });

  it('`accounts set-plan` from the CLI reaches open connections through the outbox relay', async () => {
    const { id, key } = await account(server, 'ANALYST');
    const connection = await subscribed(server.url, key, { tiers: TIERS });
    const command = authCommands.find((c) => c.name === 'accounts set-plan')!;
    const { json } = await command.run(
      { db: server.database.db, clock: server.app.services.clock, config: server.config },
      { options: {}, positionals: [id, 'observer'] },
    );
    expect(json).toMatchObject({ account_id: id, previous_plan: 'ANALYST', plan: 'OBSERVER' });
    await connection.until(() => ended(connection, 'tiers'), 'the Analyst feed to end');
    expect(errorsOf(connection, 'tiers')[0].extensions).toMatchObject({
      code: 'PLAN_REQUIRED',
      currentPlan: 'OBSERVER',
    });
    expect((await connection.execute('v', '{ viewer { plan } }')).data.viewer.plan).toBe('OBSERVER');
    const audited = await server.database.db.em().find(AuditRecord, { accountId: id, credentialKind: 'cli' });
    expect(audited.map((r) => r.operation)).toEqual(['set-plan ANALYST→OBSERVER']);

    await expect(
      command.run(
        { db: server.database.db, clock: server.app.services.clock, config: server.config },
        { options: {}, positionals: [id, 'GOLD'] },
      ),
    ).rejects.toThrow(/plan: must be one of OBSERVER, ANALYST, PROFESSIONAL, INSTITUTIONAL \(got 'GOLD'\)/);
    connection.close();
  });

  it('an upgrade admits what it allows on the open connection', async () => {
    const { id, key } = await account(server, 'ANALYST');
    const connection = await Connection.open(server.url, key);
    expect((await connection.execute('before', COMPLIANCE)).errors[0].extensions.code).toBe('PLAN_REQUIRED');
    await gql(server.url, SET_PLAN, { key: admin, variables: { accountId: id, plan: 'PROFESSIONAL' } });
    await untilPlan(connection, 'PROFESSIONAL');
    connection.send({ type: 'subscribe', id: 'after', payload: { query: COMPLIANCE } });
    await connection.roundTrip();
    expect(connection.messages.filter((m) => m.id === 'after')).toEqual([]);
    connection.close();
  });
});

describeEachDialect('without the bus, the credential cache TTL bounds what a connection keeps', (dialect) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ dialect, env: { CREDENTIAL_CACHE_TTL: '1s' } });
  });
  afterAll(() => server?.close());

  it("a key's scopes narrowed in the database end the subscriptions that needed them within 1.5 TTL", async () => {
    const { key, keyId } = await account(server, 'PROFESSIONAL');
    const connection = await subscribed(server.url, key, { tiers: TIERS, calls: CALLS });
    // Written as a hand edit would: no event, no eviction.
    await server.database.db.em().nativeUpdate(ApiKey, { id: keyId }, { scopes: ['read:port_calls'] });
    const started = Date.now();
    await connection.until(() => ended(connection, 'tiers'), 'the liquidity feed to end');
    expect(Date.now() - started).toBeLessThan(2_500);
    expect(errorsOf(connection, 'tiers')[0].extensions).toMatchObject({
      code: 'FORBIDDEN',
      requiredScopes: ['read:liquidity'],
    });
    expect(ended(connection, 'calls')).toBe(false);
    expect(connection.closed).toBeUndefined();
    expect((await connection.execute('v', '{ viewer { scopes } }')).data.viewer.scopes).toEqual([
      'read:port_calls',
    ]);
    connection.close();
  });
});

describeWithPostgres('a plan change on one process reaches connections on another [postgresql]', () => {
  describeWithRedis('through the Redis bus', () => {
    let server: TestServer;
    let other: GatewayProcess;
    const prefix = `tidegate-live-${process.pid}`;
    beforeAll(async () => {
      const env = { REDIS_URL: TEST_REDIS_URL!, REDIS_PREFIX: prefix };
      server = await startTestServer({ dialect: 'postgresql', env });
      other = await startGatewayProcess({ ...env, DATABASE_URL: server.database.url });
    }, 120_000);
    afterAll(async () => {
      await other?.stop();
      await server?.close();
    });

    it('a downgrade by the mutation on this process ends the Professional feed on the other at once', async () => {
      const admin = (await createKey(server, { plan: 'INSTITUTIONAL', scopes: 'admin' })).secret;
      const { id, key } = await account(server, 'PROFESSIONAL');
      const connection = await subscribed(other.url, key, { compliance: COMPLIANCE, tiers: TIERS });
      expect((await connection.execute('v1', '{ viewer { plan } }')).data.viewer.plan).toBe('PROFESSIONAL');
      await gql(server.url, SET_PLAN, { key: admin, variables: { accountId: id, plan: 'ANALYST' } });
      await connection.until(() => ended(connection, 'compliance'), 'the compliance feed to end');
      expect(errorsOf(connection, 'compliance')[0].extensions.code).toBe('PLAN_REQUIRED');
      expect(ended(connection, 'tiers')).toBe(false);
      expect((await connection.execute('v2', '{ viewer { plan } }')).data.viewer.plan).toBe('ANALYST');
      expect((await gql(other.url, '{ viewer { plan } }', { key })).body.data!.viewer).toEqual({
        plan: 'ANALYST',
      });
      connection.close();
    });
  });
});
