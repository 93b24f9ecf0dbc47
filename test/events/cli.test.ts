import { Metrics } from '../../src/gateway/observability/metrics.js';
import { Telemetry } from '../../src/gateway/observability/telemetry.js';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createAccount } from '../../src/accounts/service.js';
import { loadConfig } from '../../src/config.js';
import { type Database } from '../../src/db/orm.js';
import { openAppDatabase } from '../../src/database.js';
import { LocalEventBus } from '../../src/events/bus.js';
import { WebhookDomain } from '../../src/events/catalog.js';
import { eventsCommands } from '../../src/events/cli.js';
import {
  EventRecord,
  WebhookDelivery,
  WebhookDeliveryAttempt,
  WebhookDeliveryStatus,
  WebhookEndpoint,
} from '../../src/events/entities.js';
import { WebhookOutbox } from '../../src/events/outbox.js';
import { stageEvents } from '../../src/events/stage.js';
import { registerEndpoint } from '../../src/events/webhooks.js';
import { liquidityCommands } from '../../src/liquidity/cli.js';
import type { CliCommand } from '../../src/db/cli-command.js';
import { DAY, systemClock } from '../../src/kernel/clock.js';
import { Plan } from '../../src/kernel/plans.js';
import { SecretBox } from '../../src/kernel/secret-box.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { describeEachDialect, TEST_SECRETS_KEY } from '../helpers/env.js';
import { gql, startTestServer, type TestServer } from '../helpers/server.js';
import { untilListening, wsSession } from './helpers.js';
import { noLiveEvents } from '../../src/kernel/events.js';

function runner(commands: CliCommand[], db: () => Database) {
  return (name: string, options: Record<string, string | boolean> = {}, positionals: string[] = []) => {
    const command = commands.find((c) => c.name === name)!;
    return command.run(
      { db: db(), config: loadConfig({ WEBHOOK_ALLOW_PRIVATE: 'true' }), clock: systemClock },
      { options, positionals },
    );
  };
}

const principalOf = (accountId: string) => ({
  accountId,
  plan: Plan.PROFESSIONAL,
  scopes: new Set(['webhooks:manage', 'read:liquidity']),
  credential: { kind: 'api_key' as const, id: 'k' },
});

describeEachDialect('events CLI', (dialect) => {
  let database: TestDatabase;
  const env = {
    clock: systemClock,
    config: loadConfig({ WEBHOOK_ALLOW_PRIVATE: 'true' }),
    secrets: new SecretBox(Buffer.from(TEST_SECRETS_KEY!, 'hex')),
  };
  beforeAll(async () => {
    database = await createTestDatabase(dialect);
  });
  afterAll(() => database?.drop());
  const run = runner(eventsCommands, () => database.db);

  it('lists endpoints without secrets and reports the outbox backlog', async () => {
    const account = await createAccount(
      { em: database.db.em(), clock: systemClock },
      {
        name: 'Ops',
        plan: Plan.PROFESSIONAL,
      },
    );
    const { secret } = await registerEndpoint(
      { em: database.db.em(), ...env },
      principalOf(account.id),
      WebhookDomain.LIQUIDITY,
      { url: 'http://127.0.0.1:9/hook', eventTypes: ['tier_change'] },
    );
    const listed = await run('webhooks list', { account: account.id });
    expect(listed.json).toMatchObject({
      endpoints: [
        { account_id: account.id, domain: 'LIQUIDITY', status: 'ACTIVE', event_types: ['tier_change'] },
      ],
    });
    expect(JSON.stringify(listed.json) + listed.text).not.toContain(secret);

    await database.db
      .em()
      .transactional(async (tx) =>
        stageEvents(tx, { clock: systemClock, events: noLiveEvents }, [
          { type: 'tier_change', payload: { slug: 'x' } },
        ]),
      );
    const status = await run('outbox status');
    expect(status.json).toEqual({
      undispatched_events: 1,
      pending: 0,
      failed: 0,
      delivered: 0,
      oldest_pending_at: null,
    });
    expect(status.text).toMatch(/Events not yet dispatched: 1/);
  });

  it('purges finished deliveries and dispatched events past the retention window, never undelivered ones', async () => {
    const em = database.db.em();
    await em.nativeDelete(EventRecord, {});
    const account = await createAccount(
      { em, clock: systemClock },
      { name: 'Purge Co', plan: Plan.PROFESSIONAL },
    );
    const { endpoint } = await registerEndpoint(
      { em, ...env },
      principalOf(account.id),
      WebhookDomain.LIQUIDITY,
      { url: 'http://127.0.0.1:9/hook', eventTypes: ['tier_change'] },
    );
    const old = new Date(Date.now() - 40 * DAY);
    const recent = new Date(Date.now() - 2 * DAY);
    // One event per case, dispatched (or not) at the given time, with at most one delivery.
    const cases = {
      oldDelivered: { at: old, status: WebhookDeliveryStatus.DELIVERED, gone: true },
      oldFailed: { at: old, status: WebhookDeliveryStatus.FAILED, gone: true },
      oldRetrying: { at: old, status: WebhookDeliveryStatus.PENDING, gone: false },
      recentDelivered: { at: recent, status: WebhookDeliveryStatus.DELIVERED, gone: false },
      oldWithoutDeliveries: { at: old, status: null, gone: true },
      oldUndispatched: { at: old, status: 'undispatched', gone: false },
    } as const;
    const ids: Record<string, string> = {};
    for (const [name, c] of Object.entries(cases)) {
      const event = em.create(EventRecord, {
        type: 'tier_change',
        occurredAt: c.at,
        payload: { name },
        relay: false,
        dispatchedAt: c.status === 'undispatched' ? null : c.at,
      });
      // The delivery rows refer to the event: it must exist first.
      await em.persistAndFlush(event);
      ids[name] = event.id;
      if (c.status && c.status !== 'undispatched') {
        const delivery = em.create(WebhookDelivery, {
          endpoint: endpoint.id,
          eventId: event.id,
          eventType: 'tier_change',
          status: c.status,
          attempts: 1,
          attemptsAtRedelivery: 0,
          lastAttemptAt: c.at,
          nextAttemptAt: c.status === WebhookDeliveryStatus.PENDING ? new Date() : null,
          createdAt: c.at,
        });
        em.persist(delivery);
        em.persist(
          em.create(WebhookDeliveryAttempt, {
            delivery,
            attempt: 1,
            attemptedAt: c.at,
            statusCode: 500,
            durationMs: 5,
          }),
        );
      }
    }
    await em.flush();

    const bad = run('events purge', { 'older-than': 'thirty days' });
    await expect(bad).rejects.toThrow(/older-than: 'thirty days' is not a duration/);
    expect(await database.db.em().count(EventRecord, {})).toBe(6);

    const purged = await run('events purge', { 'older-than': '30d', json: true });
    expect(purged.json).toMatchObject({
      older_than_seconds: 30 * 86_400,
      deliveries_deleted: 2,
      events_deleted: 3,
    });
    const left = await database.db.em().find(EventRecord, {});
    const remaining = new Set(left.map((e) => e.id));
    for (const [name, c] of Object.entries(cases)) expect(remaining.has(ids[name]!), name).toBe(!c.gone);
    // The attempt log went with its deliveries.
    expect(await database.db.em().count(WebhookDeliveryAttempt, {})).toBe(2);
    expect(await database.db.em().count(WebhookEndpoint, {})).toBeGreaterThan(0);

    // The default window is EVENT_RETENTION (30 days): nothing more to do.
    const again = await run('events purge');
    expect(again.text).toMatch(/Deleted 0 webhook deliveries and 0 events/);
  });

  it('the outbox worker enforces EVENT_RETENTION when it starts, and forgets rotated-out secrets', async () => {
    const em = database.db.em();
    const account = await createAccount(
      { em, clock: systemClock },
      { name: 'Sweep Co', plan: Plan.PROFESSIONAL },
    );
    const { endpoint } = await registerEndpoint(
      { em, ...env },
      principalOf(account.id),
      WebhookDomain.LIQUIDITY,
      { url: 'http://127.0.0.1:9/hook', eventTypes: ['tier_change'] },
    );
    await em.nativeUpdate(
      WebhookEndpoint,
      { id: endpoint.id },
      { previousSecret: endpoint.secret, previousSecretExpiresAt: new Date(Date.now() - 1000) },
    );
    const old = new Date(Date.now() - 3 * DAY);
    const event = em.create(EventRecord, {
      type: 'tier_change',
      occurredAt: old,
      payload: {},
      relay: false,
      dispatchedAt: old,
    });
    await em.persistAndFlush(event);

    const outbox = new WebhookOutbox({
      db: database.db,
      clock: systemClock,
      config: loadConfig({ EVENT_RETENTION: '2d', WEBHOOK_POLL: '1h' }),
      logger: pino({ level: 'silent' }),
      secrets: env.secrets,
      metrics: new Metrics(),
      telemetry: Telemetry.off(),
      events: new LocalEventBus(),
    });
    outbox.start();
    try {
      for (let i = 0; i < 100 && (await database.db.em().count(EventRecord, { id: event.id })) > 0; i++)
        await new Promise((r) => setTimeout(r, 50));
      expect(await database.db.em().count(EventRecord, { id: event.id })).toBe(0);
      const swept = await database.db.em().findOneOrFail(WebhookEndpoint, { id: endpoint.id });
      expect(swept).toMatchObject({ previousSecret: null, previousSecretExpiresAt: null });
    } finally {
      await outbox.stop();
    }
  });
});

describeEachDialect('events staged by the CLI reach live subscribers', (dialect) => {
  let server: TestServer;
  let cli: Database;
  beforeAll(async () => {
    server = await startTestServer({ dialect });
    // The CLI is another process with its own connection and no live bus.
    cli = await openAppDatabase(server.database.url);
  });
  afterAll(async () => {
    await cli?.close();
    await server?.close();
  });

  it('relays a tier change ingested with `tidegate liquidity ingest` to a tierChanged subscriber on the server', async () => {
    const analyst = server.key('ANALYST');
    const listed = await gql(server.url, '{ protocols(first: 1) { nodes { slug liquidityTier } } }', {
      key: analyst,
    });
    const protocol = (
      listed.body.data!.protocols as { nodes: Array<{ slug: string; liquidityTier: string }> }
    ).nodes[0]!;
    const bus = server.app.services.bus;
    const before = bus.listenerCount;
    const session = wsSession(server.url, { apiKey: analyst });
    try {
      const sub = session.subscribe(
        'subscription($slugs: [String!]) { tierChanged(slugs: $slugs) { eventId slug previousTier tier } }',
        { slugs: [protocol.slug] },
      );
      await untilListening(() => bus.listenerCount > before, 5_000, sub);

      // A collapse of assets under management drags the score across at least one tier boundary.
      const dir = mkdtempSync(join(tmpdir(), 'tidegate-ingest-'));
      const file = join(dir, 'metrics.csv');
      const today = new Date().toISOString().slice(0, 10);
      writeFileSync(
        file,
        `slug,date,aum_usd,volume_usd,holders,redemption_queue_usd,nav_deviation_bps\n${protocol.slug},${today},1000,0,1,1000,900\n`,
      );
      const ingested = await runner(liquidityCommands, () => cli)('liquidity ingest', {}, [file]);
      expect((ingested.json as { eventTypes: Record<string, number> }).eventTypes.tier_change).toBe(1);
      const staged = await server.database.db.em().find(EventRecord, { type: 'tier_change', relay: true });
      expect(staged).toHaveLength(1);

      await sub.waitFor((s) => s.data.length >= 1);
      expect(sub.data[0]).toMatchObject({
        tierChanged: { eventId: staged[0]!.id, slug: protocol.slug, previousTier: protocol.liquidityTier },
      });
    } finally {
      await session.dispose();
    }
  });

  it('does not mark events staged by the server itself, which publishes them after commit', async () => {
    const [event] = await server.database.db
      .em()
      .transactional(async (tx) =>
        stageEvents(tx, server.app.services, [{ type: 'data_stale', payload: { slug: 'server-side' } }]),
      );
    const row = await server.database.db.em().findOneOrFail(EventRecord, { id: event!.id });
    expect(row.relay).toBe(false);
  });
});
