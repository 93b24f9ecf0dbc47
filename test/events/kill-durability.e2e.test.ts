import { afterAll, beforeAll, expect, it } from 'vitest';
import { createApiKey } from '../../src/accounts/service.js';
import { loadConfig } from '../../src/config.js';
import { EventRecord } from '../../src/events/entities.js';
import { LIQUIDITY_WEBHOOK_TYPES } from '../../src/events/catalog.js';
import { systemClock } from '../../src/kernel/clock.js';
import { createSeededTestDatabase, type TestDatabase } from '../helpers/db.js';
import { describeEachDialect } from '../helpers/env.js';
import { gql, rest, type Json } from '../helpers/server.js';
import { eventually, startReceiver, type Receiver } from './helpers.js';
import { startGatewayProcess, type GatewayProcess } from './process.js';

/*
 * Black-box durability: the gateway is a real process, killed with SIGKILL while webhook
 * deliveries are in flight and while an ingest is running, then restarted on the same database.
 * A real receiver counts what arrives. Every event the database holds for a subscribed type must
 * arrive at least once; duplicates (deliveries that reached the receiver but whose outcome died
 * with the process) are counted and reported (src/events/README.md, "Durability").
 */

const PORT_CALLS = 30;
const INGEST = `mutation Ingest($data: String!) {
  ingestLiquidityMetrics(format: JSON, data: $data, replace: true) { rows events }
}`;

describeEachDialect('webhook delivery across kill -9 of the gateway', (dialect) => {
  let database: TestDatabase;
  let receiver: Receiver;
  const processes: GatewayProcess[] = [];
  let key: string;
  let adminKey: string;
  let accountId: string;

  beforeAll(async () => {
    const seeded = await createSeededTestDatabase(dialect);
    database = seeded.database;
    const demo = seeded.demo;
    const config = loadConfig({ WEBHOOK_ALLOW_PRIVATE: 'true' });
    const institutional = demo.accounts.find((a) => a.plan === 'INSTITUTIONAL')!;
    key = institutional.apiKey;
    accountId = institutional.accountId;
    adminKey = (
      await createApiKey(
        { em: database.db.em(), clock: systemClock },
        { maxActiveKeys: 100, rotationGraceMs: config.apiKeyRotationGraceMs },
        { accountId, scopes: 'admin', expiresAt: null, name: 'ingest' },
      )
    ).secret;
    receiver = await startReceiver();
  }, 120_000);
  afterAll(async () => {
    for (const p of processes) await p.stop();
    await receiver?.close();
    await database?.drop();
  });

  const gatewayEnv = () => ({
    DATABASE_URL: database.url,
    WEBHOOK_ALLOW_PRIVATE: 'true',
    WEBHOOK_TIMEOUT: '3s',
    WEBHOOK_POLL: '1s',
    WEBHOOK_RETRY_BASE: '1s',
  });

  /** Rows for today that double every protocol's AUM: a change big enough to emit events. */
  async function ingestRows(url: string): Promise<Json[]> {
    const scores = (await rest(url, '/v1/scores?limit=100', { key })).body as Json[];
    const today = new Date().toISOString().slice(0, 10);
    return Promise.all(
      scores.slice(0, 20).map(async (s: Json) => {
        const inputs = (await rest(url, `/v1/audits/${s.audit_id}`, { key })).body.inputs;
        return {
          slug: s.slug,
          date: today,
          aum_usd: inputs.aumUsd * 2,
          volume_usd: inputs.volumeUsd,
          holders: inputs.holders,
          top_holder_pct: inputs.topHolderPct,
          redemption_queue_usd: inputs.redemptionQueueUsd,
          nav_deviation_bps: inputs.navDeviationBps,
          last_attestation_date: inputs.lastAttestationDate,
        };
      }),
    );
  }

  it(
    'delivers every committed event at least once after SIGKILL mid-delivery and mid-ingest',
    { timeout: 300_000 },
    async () => {
      const first = await startGatewayProcess(gatewayEnv());
      processes.push(first);
      const portOps = await rest(first.url, '/v1/webhook-subscriptions', {
        method: 'POST',
        key,
        body: { url: receiver.url, eventTypes: ['port_call.created'] },
      });
      expect(portOps.status, portOps.text).toBe(201);
      const liquidity = await rest(first.url, '/v1/webhooks', {
        method: 'POST',
        key,
        body: { url: receiver.url, event_types: [...LIQUIDITY_WEBHOOK_TYPES] },
      });
      expect(liquidity.status, liquidity.text).toBe(201);

      // Every third delivery hangs, so some are always in flight (leased, unanswered) at the kill.
      let seen = 0;
      receiver.respond = () => (++seen % 3 === 0 ? 'hang' : 200);
      const acknowledged: string[] = [];
      for (let i = 0; i < PORT_CALLS; i++) {
        const created = await rest(first.url, '/v1/port-calls', {
          method: 'POST',
          key,
          body: {
            vesselImo: '9074729',
            portLocode: 'SGSIN',
            voyageReference: `KILL-${i}`,
            eta: new Date(Date.now() + (i + 1) * 3_600_000).toISOString(),
          },
        });
        expect(created.status, created.text).toBe(201);
        acknowledged.push(created.body.id);
      }
      await receiver.waitFor((r) => r.length >= 10, 60_000);
      const rows = await ingestRows(first.url);
      // The ingest is sent, and the process dies while it runs (or just after it commits).
      const ingest = gql(first.url, INGEST, {
        key: adminKey,
        variables: { data: JSON.stringify(rows) },
      }).catch((e: unknown) => e);
      await new Promise((r) => setTimeout(r, 150));
      await first.kill();
      const ingestOutcome = await ingest;
      const beforeRestart = receiver.received.length;

      receiver.respond = () => 200;
      const second = await startGatewayProcess(gatewayEnv());
      processes.push(second);

      const subscribed = new Set<string>(['port_call.created', ...LIQUIDITY_WEBHOOK_TYPES]);
      const emitted = (await database.db.em().find(EventRecord, {})).filter(
        (e) => subscribed.has(e.type) && (e.accountId === null || e.accountId === accountId),
      );
      const received = () => new Set(receiver.received.map((r) => r.json.id));
      await eventually(
        () => emitted.every((e) => received().has(e.id)),
        () =>
          `${emitted.filter((e) => !received().has(e.id)).length} of ${emitted.length} events never arrived`,
        120_000,
      );

      // Every acknowledged port call is an emitted event, and was delivered.
      const createdFor = new Set(
        emitted
          .filter((e) => e.type === 'port_call.created')
          .map((e) => (e.payload as { portCall: { id: string } }).portCall.id),
      );
      expect(acknowledged.every((id) => createdFor.has(id))).toBe(true);
      const duplicates = receiver.received.length - received().size;
      const ingestEvents = emitted.filter((e) => e.type !== 'port_call.created').length;
      console.info(
        `[durability ${dialect}] events emitted ${emitted.length} (port calls ${createdFor.size}, ingest ${ingestEvents}; ingest ${
          ingestOutcome instanceof Error ? 'cut by the kill' : 'answered before the kill'
        }), requests received ${receiver.received.length} (${beforeRestart} before the restart), ` +
          `distinct ${received().size}, duplicates ${duplicates}`,
      );
      // At least once, not exactly once: only deliveries whose outcome died with the process repeat.
      expect(duplicates).toBeLessThanOrEqual(beforeRestart);
    },
  );
});
