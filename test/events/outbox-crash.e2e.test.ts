import { afterAll, beforeAll, expect, it } from 'vitest';
import { createAccount } from '../../src/accounts/service.js';
import { loadConfig } from '../../src/config.js';
import { WebhookDomain } from '../../src/events/catalog.js';
import { WebhookDelivery, WebhookDeliveryStatus } from '../../src/events/entities.js';
import { verifySignature } from '../../src/events/signature.js';
import { stageEvents } from '../../src/events/stage.js';
import { registerEndpoint } from '../../src/events/webhooks.js';
import { systemClock } from '../../src/kernel/clock.js';
import { Plan } from '../../src/kernel/plans.js';
import { createTestDatabase, type TestDatabase } from '../helpers/db.js';
import { describeEachDialect } from '../helpers/env.js';
import { startReceiver, tierChange, type Receiver } from './helpers.js';
import { startGatewayProcess, type GatewayProcess } from './process.js';

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
      const account = await createAccount(em, systemClock, { name: 'Receiver Co', plan: Plan.PROFESSIONAL });
      const principal = {
        accountId: account.id,
        plan: Plan.PROFESSIONAL,
        scopes: new Set(['webhooks:manage']),
        credential: { kind: 'api_key' as const, id: 'k' },
      };
      const env = { clock: systemClock, config: loadConfig({ WEBHOOK_ALLOW_PRIVATE: 'true' }) };
      const { secret } = await registerEndpoint(
        em,
        principal,
        WebhookDomain.LIQUIDITY,
        { url: receiver.url, eventTypes: ['tier_change'] },
        env,
      );
      const events = await database.db.em().transactional(async (tx) =>
        stageEvents(
          tx,
          systemClock,
          ['a', 'b', 'c', 'd', 'e'].map((s) => tierChange(s)),
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
      await receiver.waitFor((r) => r.length >= 5, 30_000);
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
      await receiver.waitFor((r) => new Set(r.map((x) => x.json.id)).size >= 5, 60_000);
      expect([...new Set(receiver.received.map((r) => r.json.id))].sort()).toEqual(ids);
      for (const request of receiver.received) {
        expect(
          verifySignature(secret, request.body, String(request.headers['tidegate-signature']), new Date()),
        ).toBe(true);
      }
      let delivered = 0;
      for (let i = 0; i < 50 && delivered < 5; i++) {
        await new Promise((r) => setTimeout(r, 100));
        delivered = await database.db
          .em()
          .count(WebhookDelivery, { status: WebhookDeliveryStatus.DELIVERED });
      }
      expect(delivered).toBe(5);
    },
  );
});
