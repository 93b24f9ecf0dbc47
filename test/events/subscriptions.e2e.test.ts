import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { revokeApiKey } from '../../src/accounts/service.js';
import { EventRecord } from '../../src/events/entities.js';
import { DAY, ManualClock } from '../../src/kernel/clock.js';
import { describeEachDialect } from '../helpers/env.js';
import { createKey, gql, rest, startTestServer, type TestServer } from '../helpers/server.js';
import { command, postForm, registerClient, tokenRequest } from '../auth/helpers.js';
import { commitEvents, scoreChange, tierChange, untilListening, wsSession } from './helpers.js';

describeEachDialect('graphql-ws subscriptions', (dialect) => {
  let server: TestServer;
  const listeners = () => server.app.services.bus.listenerCount;
  let idle = 0;
  beforeAll(async () => {
    server = await startTestServer({ dialect, env: { REVOCATION_POLL: '1s' } });
    idle = listeners();
  });
  afterAll(() => server?.close());
  // Every test ends its sessions; wait until the server has dropped their listeners.
  afterEach(() => untilListening(() => listeners() === idle));

  /** An OAuth client (client credentials) of the Analyst account and an access token it obtained. */
  async function oauthToken() {
    const accountId = server.demo.accounts.find((a) => a.plan === 'ANALYST')!.accountId;
    const client = await registerClient(server, server.app.services.clock, {
      accountId,
      scopes: 'read:liquidity',
      grantTypes: 'client_credentials',
    });
    const token = await tokenRequest(server, {
      grant_type: 'client_credentials',
      client_id: client.client_id,
      client_secret: client.client_secret!,
    });
    expect(token.status).toBe(200);
    return { client, accessToken: String(token.body.access_token) };
  }

  it('streams tier and score changes, filtered by slug and minDelta', async () => {
    const session = wsSession(server.url, { apiKey: server.key('ANALYST') });
    const before = listeners();
    const tiers = session.subscribe(
      'subscription { tierChanged(slugs: ["alpha"]) { eventId slug previousTier tier score asOf } }',
    );
    const scores = session.subscribe(
      'subscription($d: Float) { scoreChanged(minDelta: $d) { eventId slug delta score auditId } }',
      { d: 2 },
    );
    await untilListening(() => listeners() >= before + 2);
    const [alphaTier] = await commitEvents(server, [
      tierChange('alpha'),
      tierChange('beta'),
      scoreChange('alpha', 1),
      scoreChange('beta', -3),
    ]);
    await tiers.waitFor((s) => s.data.length >= 1);
    await scores.waitFor((s) => s.data.length >= 1);
    await new Promise((r) => setTimeout(r, 200));
    expect(tiers.data).toEqual([
      {
        tierChanged: {
          eventId: alphaTier!.id,
          slug: 'alpha',
          previousTier: 'L1',
          tier: 'L2',
          score: 71.5,
          asOf: '2026-01-01T00:00:00.000Z',
        },
      },
    ]);
    expect(scores.data).toEqual([
      { scoreChanged: expect.objectContaining({ slug: 'beta', delta: -3, score: 67 }) },
    ]);
    await session.dispose();
  });

  it('sends port-call updates to the owning account only, filtered by status', async () => {
    const own = server.demo.accounts.find((a) => a.plan === 'ANALYST')!;
    const other = server.demo.accounts.find((a) => a.plan === 'INSTITUTIONAL')!;
    const session = wsSession(server.url, { authorization: `Bearer ${own.apiKey}` });
    const before = listeners();
    const updates = session.subscribe(
      'subscription { portCallUpdated(status: ARRIVED) { type portCallId status previousStatus } }',
    );
    await untilListening(() => listeners() >= before + 1, 5_000, updates);
    await commitEvents(server, [
      {
        type: 'port_call.status_changed',
        accountId: other.accountId,
        payload: { portCallId: 'theirs', from: 'SCHEDULED', to: 'ARRIVED' },
      },
      {
        type: 'port_call.status_changed',
        accountId: own.accountId,
        payload: { portCallId: 'mine', from: 'ARRIVED', to: 'BERTHED' },
      },
      {
        type: 'port_call.created',
        accountId: own.accountId,
        payload: { portCall: { id: 'new', status: 'ARRIVED' } },
      },
      {
        type: 'port_call.status_changed',
        accountId: own.accountId,
        payload: { portCallId: 'mine', from: 'SCHEDULED', to: 'ARRIVED' },
      },
    ]);
    await updates.waitFor((s) => s.data.length >= 2);
    await new Promise((r) => setTimeout(r, 200));
    expect(updates.data).toEqual([
      {
        portCallUpdated: {
          type: 'port_call.created',
          portCallId: 'new',
          status: 'ARRIVED',
          previousStatus: null,
        },
      },
      {
        portCallUpdated: {
          type: 'port_call.status_changed',
          portCallId: 'mine',
          status: 'ARRIVED',
          previousStatus: 'SCHEDULED',
        },
      },
    ]);
    await session.dispose();
  });

  it('sends watchlist alerts and service-order updates to their own account only', async () => {
    const own = server.demo.accounts.find((a) => a.plan === 'PROFESSIONAL')!;
    const other = server.demo.accounts.find((a) => a.plan === 'ANALYST')!;
    const session = wsSession(server.url, { apiKey: own.apiKey });
    const before = listeners();
    const alerts = session.subscribe(
      'subscription { watchlistAlerts { watchlistId alertId kind slug message } }',
    );
    const orders = session.subscribe(
      'subscription { serviceOrderUpdated(portCallId: "pc-1") { type serviceOrderId portCallId status previousStatus } }',
    );
    await untilListening(() => listeners() >= before + 2, 5_000, alerts, orders);
    const alert = (accountId: string, alertId: string) => ({
      type: 'watchlist_alert',
      accountId,
      payload: {
        watchlistId: 'w',
        alertId,
        kind: 'TIER_SHIFT',
        slug: 'alpha',
        message: 'moved',
        asOf: '2026-01-01T00:00:00Z',
      },
    });
    await commitEvents(server, [
      alert(other.accountId, 'theirs'),
      alert(own.accountId, 'mine'),
      {
        type: 'service_order.created',
        accountId: own.accountId,
        payload: { serviceOrder: { id: 'so-1', portCallId: 'pc-1', status: 'REQUESTED' } },
      },
      {
        type: 'service_order.status_changed',
        accountId: own.accountId,
        payload: { serviceOrderId: 'so-2', portCallId: 'pc-2', from: 'REQUESTED', to: 'CONFIRMED' },
      },
      {
        type: 'service_order.status_changed',
        accountId: other.accountId,
        payload: { serviceOrderId: 'so-3', portCallId: 'pc-1', from: 'REQUESTED', to: 'CONFIRMED' },
      },
    ]);
    await alerts.waitFor((s) => s.data.length >= 1);
    await orders.waitFor((s) => s.data.length >= 1);
    await new Promise((r) => setTimeout(r, 200));
    expect(alerts.data).toEqual([
      {
        watchlistAlerts: {
          watchlistId: 'w',
          alertId: 'mine',
          kind: 'TIER_SHIFT',
          slug: 'alpha',
          message: 'moved',
        },
      },
    ]);
    expect(orders.data).toEqual([
      {
        serviceOrderUpdated: {
          type: 'service_order.created',
          serviceOrderId: 'so-1',
          portCallId: 'pc-1',
          status: 'REQUESTED',
          previousStatus: null,
        },
      },
    ]);
    await session.dispose();
  });

  it('refuses a Professional-only subscription for an Analyst key with PLAN_REQUIRED', async () => {
    const session = wsSession(server.url, { apiKey: server.key('ANALYST') });
    const before = listeners();
    const sub = session.subscribe('subscription { complianceAlerts { eventId slug } }');
    await sub.waitFor((s) => s.errors.length > 0);
    expect(JSON.stringify(sub.errors)).toMatch(/PLAN_REQUIRED/);
    expect(JSON.stringify(sub.errors)).toMatch(/Professional plan or higher/);
    expect(listeners()).toBe(before);
    const pro = wsSession(server.url, { apiKey: server.key('PROFESSIONAL') });
    const allowed = pro.subscribe('subscription { complianceAlerts { eventId slug data } }');
    await untilListening(() => listeners() >= before + 1);
    await commitEvents(server, [
      {
        type: 'compliance_alert',
        payload: {
          slug: 'alpha',
          protocolId: 'p',
          kind: 'SANCTIONS',
          message: 'm',
          asOf: '2026-01-01T00:00:00Z',
        },
      },
    ]);
    await allowed.waitFor((s) => s.data.length === 1);
    await session.dispose();
    await pro.dispose();
  });

  it('refuses a subscription without the scope (FORBIDDEN) and bad arguments (BAD_USER_INPUT)', async () => {
    const { secret } = await createKey(server, { plan: 'INSTITUTIONAL', scopes: 'read:vessels' });
    const session = wsSession(server.url, { apiKey: secret });
    const sub = session.subscribe('subscription { tierChanged { eventId } }');
    await sub.waitFor((s) => s.errors.length > 0);
    expect(JSON.stringify(sub.errors)).toMatch(/FORBIDDEN.*read:liquidity|read:liquidity.*FORBIDDEN/);
    const analyst = wsSession(server.url, { apiKey: server.key('ANALYST') });
    const bad = analyst.subscribe('subscription { scoreChanged(minDelta: -1) { eventId } }');
    await bad.waitFor((s) => s.errors.length > 0);
    expect(JSON.stringify(bad.errors)).toMatch(/minDelta: must be zero or more/);
    expect(JSON.stringify(bad.errors)).toMatch(/BAD_USER_INPUT/);
    await session.dispose();
    await analyst.dispose();
  });

  it('closes with 4401 without a valid credential', async () => {
    const session = wsSession(server.url, { apiKey: 'tg_not-a-key' });
    expect((await session.closed).code).toBe(4401);
  });

  it('closes with 4403 when the API key is revoked (noticed by the key watch)', async () => {
    const { secret, id } = await createKey(server, { plan: 'ANALYST' });
    const session = wsSession(server.url, { apiKey: secret });
    const before = listeners();
    session.subscribe('subscription { tierChanged { eventId } }');
    await untilListening(() => listeners() >= before + 1);
    await revokeApiKey({ em: server.database.db.em(), clock: server.app.services.clock }, id);
    const closed = await session.closed;
    expect(closed.code).toBe(4403);
    await untilListening(() => listeners() === before);
  });

  it('closes with 4403 when another process announces a revocation on the bus (credential.revoked)', async () => {
    const { secret, id } = await createKey(server, { plan: 'ANALYST' });
    const session = wsSession(server.url, { apiKey: secret });
    const before = listeners();
    const sub = session.subscribe('subscription { tierChanged { eventId } }');
    await untilListening(() => listeners() >= before + 1, 5_000, sub);
    await server.app.services.events.publish([
      {
        id: 'revocation-1',
        type: 'credential.revoked',
        occurredAt: new Date(),
        accountId: null,
        payload: { credentialId: id },
      },
    ]);
    expect((await session.closed).code).toBe(4403);
  });

  it('closes with 4403 when the OAuth access token in use is revoked at POST /oauth/revoke', async () => {
    const { client, accessToken } = await oauthToken();
    const session = wsSession(server.url, { authorization: `Bearer ${accessToken}` });
    const before = listeners();
    const sub = session.subscribe('subscription { tierChanged { eventId } }');
    await untilListening(() => listeners() >= before + 1, 5_000, sub);
    const revoked = await postForm(server, '/oauth/revoke', {
      token: accessToken,
      client_id: client.client_id,
      client_secret: client.client_secret!,
    });
    expect(revoked.status).toBe(200);
    expect((await session.closed).code).toBe(4403);
    // And the token opens no new connection.
    expect((await wsSession(server.url, { authorization: `Bearer ${accessToken}` }).closed).code).toBe(4401);
  });

  it('closes with 4403 when another process, its clock 3 s behind ours, revokes the API key in use', async () => {
    const { secret, id } = await createKey(server, { plan: 'ANALYST' });
    const session = wsSession(server.url, { apiKey: secret });
    const before = listeners();
    const sub = session.subscribe('subscription { tierChanged { eventId } }');
    await untilListening(() => listeners() >= before + 1, 5_000, sub);
    // Its revoked_at is then older than this process's last look: the watch's window must overlap that much.
    await revokeApiKey(
      { em: server.database.db.em(), clock: { now: () => new Date(Date.now() - 3_000) } },
      id,
    );
    expect((await session.closed).code).toBe(4403);
  });

  it('closes with 4403 when `tidegate clients delete` revokes the OAuth token in use (noticed by the revocation watch)', async () => {
    const clock = server.app.services.clock;
    const { client, accessToken } = await oauthToken();
    const session = wsSession(server.url, { authorization: `Bearer ${accessToken}` });
    const before = listeners();
    const sub = session.subscribe('subscription { tierChanged { eventId } }');
    await untilListening(() => listeners() >= before + 1, 5_000, sub);
    // The CLI runs in its own process in production: it writes the revocation and publishes nothing.
    await command('clients delete').run(
      { config: server.config, db: server.database.db, clock },
      { options: {}, positionals: [client.client_id] },
    );
    expect((await session.closed).code).toBe(4403);
  });
});

describeEachDialect('liquidity subscriptions fed by a real ingestion', (dialect) => {
  // Reports for every protocol stop at the seed; ten days later one protocol reports again.
  const clock = new ManualClock('2026-06-15T10:00:00Z');
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ dialect, clock });
  });
  afterAll(() => server?.close());

  it('aumChanged, dataStale, circuitBreakers and complianceAlerts each stream the events the ingestion committed', async () => {
    const listeners = () => server.app.services.bus.listenerCount;
    const slug = 'harbor-treasury';
    const admin = (await createKey(server, { plan: 'INSTITUTIONAL', scopes: 'admin' })).secret;
    const before = (await rest(server.url, `/v1/protocols/${slug}`, { key: server.key('PROFESSIONAL') }))
      .body;
    expect(before.aum_usd, JSON.stringify(before)).toBeDefined();

    const session = wsSession(server.url, { apiKey: server.key('PROFESSIONAL') });
    const idle = listeners();
    const fields = '{ eventId type slug protocolId asOf data }';
    const feeds = {
      aum_change: session.subscribe(`subscription { aumChanged(slugs: ["${slug}"]) ${fields} }`),
      data_stale: session.subscribe(`subscription { dataStale ${fields} }`),
      circuit_breaker: session.subscribe(`subscription { circuitBreakers(slugs: ["${slug}"]) ${fields} }`),
      compliance_alert: session.subscribe(`subscription { complianceAlerts(slugs: ["${slug}"]) ${fields} }`),
    };
    await untilListening(() => listeners() === idle + 4, 5_000, ...Object.values(feeds));

    clock.advance(10 * DAY);
    const today = clock.now().toISOString().slice(0, 10);
    // AUM down 60 %, NAV 250 bps off (circuit breaker), last attestation long ago (compliance alert).
    const csv = [
      'slug,date,aum_usd,volume_usd,holders,top_holder_pct,redemption_queue_usd,nav_deviation_bps,last_attestation_date',
      `${slug},${today},${(Number(before.aum_usd) * 0.4).toFixed(2)},1000,50,65,1000,250,2025-01-01`,
    ].join('\n');
    const ingested = await gql(
      server.url,
      'mutation($data: String!) { ingestLiquidityMetrics(format: CSV, data: $data) { events } }',
      { key: admin, variables: { data: csv } },
    );
    expect(ingested.body.errors, JSON.stringify(ingested.body)).toBeUndefined();

    const committed = await server.database.db
      .em()
      .find(EventRecord, { type: { $in: Object.keys(feeds) }, occurredAt: { $gte: clock.now() } });
    for (const [type, feed] of Object.entries(feeds)) {
      const expected = committed.filter(
        (e) => e.type === type && (type === 'data_stale' || e.payload.slug === slug),
      );
      expect(expected.length, `${type} events committed`).toBeGreaterThan(0);
      await feed.waitFor((s) => s.data.length >= expected.length);
      const received = feed.data.map((d) => Object.values(d)[0] as { eventId: string; type: string });
      expect(received.map((r) => r.eventId).sort(), type).toEqual(expected.map((e) => e.id).sort());
      expect(received.every((r) => r.type === type)).toBe(true);
    }
    const [aum] = feeds.aum_change.data.map((d) => d.aumChanged as Record<string, unknown>);
    expect(aum).toMatchObject({ slug, protocolId: before.id, asOf: `${today}T00:00:00.000Z` });
    expect(aum!.data).toMatchObject({ changePct: -60 });
    expect(JSON.stringify(feeds.circuit_breaker.data)).toMatch(/NAV deviation of 250 bps/);
    expect(JSON.stringify(feeds.compliance_alert.data)).toMatch(/ATTESTATION_OVERDUE/);
    await session.dispose();
  });
});
