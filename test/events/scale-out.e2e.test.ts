import { randomBytes } from 'node:crypto';
import Fastify from 'fastify';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createApiKey } from '../../src/accounts/service.js';
import { RedisEventBus } from '../../src/events/bus.js';
import type { DomainEvent } from '../../src/kernel/events.js';
import { systemClock } from '../../src/kernel/clock.js';
import { createSeededTestDatabase, type TestDatabase } from '../helpers/db.js';
import { describeWithPostgres, describeWithRedis, TEST_REDIS_URL } from '../helpers/env.js';
import { gql, rest } from '../helpers/server.js';
import { startReceiver, wsSession, type Receiver, type Subscription, type WsSession } from './helpers.js';
import { keysOf, startGatewayProcess, type GatewayProcess } from './process.js';

const PROFESSIONAL_PER_MINUTE = 20;

describeWithPostgres('scale-out: two gateway processes on one PostgreSQL', () => {
  describeWithRedis('with Redis fan-out', () => {
    let database: TestDatabase;
    let a: GatewayProcess;
    let b: GatewayProcess;
    let keys: Record<string, { accountId: string; key: string }>;
    let receiver: Receiver;
    /** Publishes on the two processes' channel, as a third gateway would. */
    let probes: RedisEventBus;
    const sessions: WsSession[] = [];
    const prefix = `tidegate-test-${randomBytes(4).toString('hex')}`;
    beforeAll(async () => {
      receiver = await startReceiver();
      const seeded = await createSeededTestDatabase('postgresql');
      database = seeded.database;
      probes = await RedisEventBus.connect(TEST_REDIS_URL!, prefix, Fastify({ logger: false }).log);
      const env = {
        DATABASE_URL: database.url,
        REDIS_URL: TEST_REDIS_URL!,
        REDIS_PREFIX: prefix,
        WEBHOOK_ALLOW_PRIVATE: 'true',
        // Small enough for the shared-budget test below; no other test here spends Professional budget.
        LIMIT_PROFESSIONAL_PER_MINUTE: String(PROFESSIONAL_PER_MINUTE),
      };
      [a, b] = await Promise.all([startGatewayProcess(env), startGatewayProcess(env)]);
      keys = keysOf(seeded.demo);
    }, 120_000);
    afterAll(async () => {
      for (const s of sessions) await s.dispose();
      await a?.stop();
      await b?.stop();
      await receiver?.close();
      await probes?.close();
      await database?.drop();
    });

    /**
     * A subscription on another process is live once an event published through Redis reaches it:
     * publish probe events (which only the bus sees, never the database or webhooks) until one arrives.
     */
    async function untilLive(
      sub: Subscription,
      probe: Pick<DomainEvent, 'type' | 'accountId' | 'payload'>,
    ): Promise<void> {
      for (let i = 0; sub.data.length === 0; i++) {
        if (i === 100) throw new Error(`subscription never became live: ${JSON.stringify(sub)}`);
        await probes.publish([{ ...probe, id: `probe-${prefix}-${i}`, occurredAt: new Date() }]);
        await sub.waitFor((s) => s.data.length > 0 || s.errors.length > 0, 100).catch(() => undefined);
        expect(sub.errors).toEqual([]);
      }
    }

    it('an ingestion on B that moves a protocol across a tier boundary reaches a tierChanged subscriber on A within a second', async () => {
      const analyst = keys.ANALYST!.key;
      const listed = await gql(
        b.url,
        '{ protocols(first: 1) { nodes { slug liquidityTier liquidityScore } } }',
        { key: analyst },
      );
      expect(listed.body.errors, JSON.stringify(listed.body)).toBeUndefined();
      const protocol = (
        listed.body.data!.protocols as { nodes: Array<{ slug: string; liquidityTier: string }> }
      ).nodes[0]!;
      // Ingestion is an operator action (admin scope): the operator's key.
      const { secret: admin } = await createApiKey(
        { em: database.db.em(), clock: systemClock },
        { maxActiveKeys: 100, rotationGraceMs: 0 },
        { accountId: keys.INSTITUTIONAL!.accountId, scopes: 'admin' },
      );

      const session = wsSession(a.url, { apiKey: analyst });
      sessions.push(session);
      const sub = session.subscribe(
        'subscription($slugs: [String!]) { tierChanged(slugs: $slugs) { eventId slug previousTier tier } }',
        { slugs: [protocol.slug, 'readiness-probe'] },
      );
      await untilLive(sub, {
        type: 'tier_change',
        accountId: null,
        payload: { slug: 'readiness-probe', previousTier: 'L1', tier: 'L2' },
      });

      // A collapse of assets under management drags the score across at least one tier boundary.
      const today = new Date().toISOString().slice(0, 10);
      const ingested = await gql(
        b.url,
        'mutation($data: String!) { ingestLiquidityMetrics(format: CSV, data: $data) { events } }',
        {
          key: admin,
          variables: {
            data: `slug,date,aum_usd,volume_usd,holders,redemption_queue_usd,nav_deviation_bps\n${protocol.slug},${today},1000,0,1,1000,900\n`,
          },
        },
      );
      expect(ingested.body.errors, JSON.stringify(ingested.body)).toBeUndefined();
      // The budget: one second from the commit on B (its response) to the frame on A.
      const real = (d: Record<string, unknown>) => (d.tierChanged as { slug: string }).slug === protocol.slug;
      await sub.waitFor((s) => s.data.some(real), 1_000);
      const moved = sub.data.find(real)!.tierChanged as { previousTier: string; tier: string };
      expect(moved.previousTier).toBe(protocol.liquidityTier);
      expect(moved.tier).not.toBe(protocol.liquidityTier);
    });

    it('a port-call status change on B reaches a portCallUpdated subscriber on A within a second', async () => {
      const key = keys.INSTITUTIONAL!.key;
      expect(key).toMatch(/^tg_/);
      const session = wsSession(a.url, { apiKey: key });
      sessions.push(session);
      const sub = session.subscribe(
        'subscription { portCallUpdated(status: ARRIVED) { eventId type portCallId status previousStatus } }',
      );
      await untilLive(sub, {
        type: 'port_call.status_changed',
        accountId: keys.INSTITUTIONAL!.accountId,
        payload: { portCallId: 'readiness-probe', from: 'SCHEDULED', to: 'ARRIVED' },
      });

      const created = await gql(
        b.url,
        'mutation($input: PortCallInput!) { createPortCall(input: $input) { id status } }',
        {
          key,
          variables: {
            input: {
              vesselImo: '9074729',
              portLocode: 'SGSIN',
              voyageReference: 'SCALE-1',
              eta: new Date(Date.now() + 86_400_000).toISOString(),
            },
          },
        },
      );
      expect(created.body.errors, JSON.stringify(created.body)).toBeUndefined();
      const id = (created.body.data!.createPortCall as { id: string }).id;
      const moved = await gql(
        b.url,
        'mutation($id: ID!) { transitionPortCall(id: $id, status: ARRIVED) { id status } }',
        { key, variables: { id } },
      );
      expect(moved.body.errors, JSON.stringify(moved.body)).toBeUndefined();
      const real = (d: Record<string, unknown>) =>
        (d.portCallUpdated as { portCallId: string }).portCallId === id;
      await sub.waitFor((s) => s.data.some(real), 1_000);
      expect(sub.data.find(real)).toMatchObject({
        portCallUpdated: {
          type: 'port_call.status_changed',
          portCallId: id,
          status: 'ARRIVED',
          previousStatus: 'SCHEDULED',
        },
      });
    });

    it('delivers each webhook once although both processes run the outbox worker', async () => {
      const key = keys.PROFESSIONAL!.key;
      const registered = await rest(a.url, '/v1/webhook-subscriptions', {
        method: 'POST',
        key,
        body: { url: receiver.url, eventTypes: ['port_call.created', 'port_call.status_changed'] },
      });
      expect(registered.status, registered.text).toBe(201);
      const eta = new Date(Date.now() + 86_400_000).toISOString();
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) {
        const target = i % 2 === 0 ? a : b;
        const created = await gql(
          target.url,
          'mutation($input: PortCallInput!) { createPortCall(input: $input) { id } }',
          {
            key,
            variables: {
              input: { vesselImo: '9321483', portLocode: 'NLRTM', voyageReference: `ONCE-${i}`, eta },
            },
          },
        );
        expect(created.body.errors, JSON.stringify(created.body)).toBeUndefined();
        ids.push((created.body.data!.createPortCall as { id: string }).id);
      }
      for (const id of ids) {
        const moved = await gql(
          b.url,
          'mutation($id: ID!) { transitionPortCall(id: $id, status: ARRIVED) { id } }',
          { key, variables: { id } },
        );
        expect(moved.body.errors, JSON.stringify(moved.body)).toBeUndefined();
      }
      await receiver.waitFor((r) => r.length >= 10, 20_000);
      // Both workers poll every second; wait a few rounds for any duplicate to show up.
      await new Promise((r) => setTimeout(r, 2_500));
      const eventIds = receiver.received.map((r) => r.json.id);
      expect(eventIds).toHaveLength(10);
      expect(new Set(eventIds).size).toBe(10);
    }, 60_000);

    it('shares one rate-limit budget: 30 concurrent liquidity calls split over both processes admit exactly 20', async () => {
      const key = keys.PROFESSIONAL!.key;
      // Stay inside one UTC minute window: start at the top of a minute if too little of this one is left.
      const intoMinute = Date.now() % 60_000;
      if (intoMinute > 50_000) await new Promise((r) => setTimeout(r, 60_000 - intoMinute + 100));
      const calls = Array.from({ length: 30 }, (_, i) =>
        rest(i % 2 === 0 ? a.url : b.url, '/v1/market', { key }),
      );
      const statuses = (await Promise.all(calls)).map((r) => r.status);
      expect(statuses.filter((s) => s === 200)).toHaveLength(PROFESSIONAL_PER_MINUTE);
      expect(statuses.filter((s) => s === 429)).toHaveLength(30 - PROFESSIONAL_PER_MINUTE);
    }, 90_000);
  });
});
