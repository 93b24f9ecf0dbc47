import { Metrics } from '../../src/gateway/observability/metrics.js';
import { Telemetry } from '../../src/gateway/observability/telemetry.js';
import { pino } from 'pino';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createAccount } from '../../src/accounts/service.js';
import { loadConfig } from '../../src/config.js';
import { WebhookDomain } from '../../src/events/catalog.js';
import { LocalEventBus } from '../../src/events/bus.js';
import { EventRecord, WebhookDelivery, WebhookDeliveryStatus } from '../../src/events/entities.js';
import { MAX_IN_FLIGHT_PER_ENDPOINT, WebhookOutbox } from '../../src/events/outbox.js';
import { type Database } from '../../src/db/orm.js';
import { openAppDatabase } from '../../src/database.js';
import type { DomainEvent } from '../../src/kernel/events.js';
import { verifySignature } from '../../src/events/signature.js';
import { stageEvents } from '../../src/events/stage.js';
import { registerEndpoint } from '../../src/events/webhooks.js';
import { systemClock } from '../../src/kernel/clock.js';
import { Plan } from '../../src/kernel/plans.js';
import { SecretBox } from '../../src/kernel/secret-box.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { describeEachDialect, TEST_SECRETS_KEY } from '../helpers/env.js';
import { startReceiver, tierChange, type Receiver } from './helpers.js';
import { startGatewayProcess, type GatewayProcess } from './process.js';
import { noLiveEvents } from '../../src/kernel/events.js';

describeEachDialect('webhook outbox survives a killed deliverer', (dialect) => {
  let database: TestDatabase;
  let receiver: Receiver;
  const processes: GatewayProcess[] = [];
  beforeAll(async () => {
    database = await createTestDatabase(dialect);
    receiver = await startReceiver();
  });
  afterAll(async () => {
    for (const p of processes) await p.stop();
    await receiver?.close();
    await database?.drop();
  });

  it(
    'redelivers every event with the same id after the process dies mid-flight and a new one starts',
    { timeout: 120_000 },
    async () => {
      const em = database.db.em();
      const account = await createAccount(
        { em, clock: systemClock },
        { name: 'Receiver Co', plan: Plan.PROFESSIONAL },
      );
      const principal = {
        accountId: account.id,
        plan: Plan.PROFESSIONAL,
        scopes: new Set(['webhooks:manage', 'read:liquidity']),
        credential: { kind: 'api_key' as const, id: 'k' },
      };
      const env = {
        clock: systemClock,
        config: loadConfig({ WEBHOOK_ALLOW_PRIVATE: 'true' }),
        secrets: new SecretBox(Buffer.from(TEST_SECRETS_KEY!, 'hex')),
      };
      const { secret } = await registerEndpoint({ em, ...env }, principal, WebhookDomain.LIQUIDITY, {
        url: receiver.url,
        eventTypes: ['tier_change'],
      });
      const events = await database.db.em().transactional(async (tx) =>
        stageEvents(
          tx,
          { clock: systemClock, events: noLiveEvents },
          // As many as one endpoint may have in flight at once, so all are mid-flight together.
          Array.from({ length: MAX_IN_FLIGHT_PER_ENDPOINT }, (_, i) => tierChange(`p${i}`)),
        ),
      );
      const ids = events.map((e) => e.id).sort();

      const gatewayEnv = {
        DATABASE_URL: database.url,
        WEBHOOK_ALLOW_PRIVATE: 'true',
        WEBHOOK_TIMEOUT: '3s',
        WEBHOOK_POLL: '1s',
      };
      // The receiver takes the requests but never answers: the deliverer is mid-flight when it dies.
      receiver.respond = () => 'hang';
      const first = await startGatewayProcess(gatewayEnv);
      processes.push(first);
      await receiver.waitFor((r) => r.length >= ids.length, 30_000);
      await first.kill();
      expect(receiver.received.map((r) => r.json.id).sort()).toEqual(ids);
      const leased = await database.db.em().find(WebhookDelivery, {});
      expect(leased.every((d) => d.status === WebhookDeliveryStatus.PENDING && d.leaseToken !== null)).toBe(
        true,
      );

      receiver.respond = () => 200;
      receiver.received.length = 0;
      const second = await startGatewayProcess(gatewayEnv);
      processes.push(second);
      // The dead process's leases expire (timeout + 5 s) and the new process claims the rows.
      await receiver.waitFor((r) => new Set(r.map((x) => x.json.id)).size >= ids.length, 60_000);
      expect([...new Set(receiver.received.map((r) => r.json.id))].sort()).toEqual(ids);
      for (const request of receiver.received) {
        expect(
          verifySignature(secret, request.body, String(request.headers['tidegate-signature']), new Date()),
        ).toBe(true);
      }
      let delivered = 0;
      for (let i = 0; i < 50 && delivered < ids.length; i++) {
        await new Promise((r) => setTimeout(r, 100));
        delivered = await database.db
          .em()
          .count(WebhookDelivery, { status: WebhookDeliveryStatus.DELIVERED });
      }
      expect(delivered).toBe(ids.length);
    },
  );
});

describeEachDialect('CLI-staged events relayed by two outbox workers', (dialect) => {
  let database: TestDatabase;
  const connections: Database[] = [];
  beforeAll(async () => {
    database = await createTestDatabase(dialect);
  });
  afterAll(async () => {
    for (const c of connections) await c.close();
    await database?.drop();
  });

  it(
    'publishes each relayed event exactly once, by whichever worker dispatched it',
    { timeout: 120_000 },
    async () => {
      // Staged through a connection no server publishes from, as the CLI does: marked for relay.
      const staged = await database.db.em().transactional(async (tx) =>
        stageEvents(
          tx,
          { clock: systemClock, events: noLiveEvents },
          Array.from({ length: 450 }, (_, i) => ({ type: 'watchlist_alert', payload: { n: i } })),
        ),
      );
      const relayed: DomainEvent[] = [];
      const config = loadConfig({});
      const workers = await Promise.all(
        [0, 1].map(async () => {
          const db = await openAppDatabase(database.url);
          connections.push(db);
          const bus = new LocalEventBus();
          bus.subscribe((event) => relayed.push(event));
          return new WebhookOutbox({
            db,
            clock: systemClock,
            config,
            logger: pino({ level: 'silent' }),
            secrets: new SecretBox(Buffer.from(TEST_SECRETS_KEY!, 'hex')),
            metrics: new Metrics(),
            telemetry: Telemetry.off(),
            events: bus,
          });
        }),
      );
      // Two workers race over the batches; a worker that loses a race rolls back and tries again.
      // On SQLite every transaction takes the write lock first (src/db/README.md#concurrent-writers):
      // the second worker waits, synchronously, for the first's commit, which on this one thread
      // would be in vain (two processes each wait on their own), so there they take turns.
      for (let round = 0; round < 50; round++) {
        if (dialect === 'postgresql') await Promise.allSettled(workers.map((w) => w.dispatch()));
        else for (const w of workers) await w.dispatch();
        if ((await database.db.em().count(EventRecord, { dispatchedAt: null })) === 0) break;
      }
      expect(await database.db.em().count(EventRecord, { dispatchedAt: null })).toBe(0);
      expect(relayed.map((e) => e.id).sort()).toEqual(staged.map((e) => e.id).sort());
      expect(relayed[0]).toMatchObject({ type: 'watchlist_alert', accountId: null });
      await Promise.all(workers.map((w) => w.stop()));
    },
  );
});
