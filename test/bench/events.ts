/**
 * Live-events benchmarks, callable by `npm run bench` (the lead wires them in) or on their own:
 *   node --import tsx test/bench/events.ts [subscribers...]
 *
 * benchFanout: event-to-client latency with N concurrent graphql-ws subscribers on one gateway
 * process, loopback: from publish (after commit) to the frame's arrival in a separate subscriber
 * process (test/bench/events-clients.ts), so client work does not share the server's event loop.
 * benchWebhooks: outbox throughput — committed events to 2xx-acknowledged deliveries per second.
 * Both are bounded (fixed rounds, hard timeouts) and clean up after themselves.
 */
import { fork } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { DomainEvent } from '../../src/kernel/events.js';
import { WebhookDelivery, WebhookDeliveryStatus } from '../../src/events/entities.js';
import { stageEvents } from '../../src/events/stage.js';
import { rest, startTestServer, type TestServer } from '../helpers/server.js';

const UNLIMITED = {
  LIMIT_INSTITUTIONAL_PER_MINUTE: '100000000',
  LIMIT_PROFESSIONAL_PER_MINUTE: '100000000',
  LIMIT_PROFESSIONAL_PER_MONTH: 'unlimited',
  PORT_OPS_PER_MINUTE: '100000000',
};

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

const round2 = (n: number) => Math.round(n * 100) / 100;

async function waitUntil(check: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`bench: ${what} not reached within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

export interface FanoutResult {
  subscribers: number;
  events: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
}

export async function benchFanout(options: {
  subscribers: number;
  events?: number;
  perConnection?: number;
}): Promise<FanoutResult> {
  const perConnection = options.perConnection ?? 50;
  const rounds = options.events ?? 20;
  const server = await startTestServer({
    env: {
      ...UNLIMITED,
      WS_MAX_SUBSCRIPTIONS_PER_CONNECTION: String(perConnection),
      // Every subscriber connection shares one key and one address.
      WS_MAX_CONNECTIONS_PER_CREDENTIAL: '100000',
      WS_MAX_CONNECTIONS_PER_ADDRESS: '1000000',
      WEBHOOK_WORKER: 'false',
    },
  });
  const clients = fork(join(import.meta.dirname, 'events-clients.ts'), [], {
    execArgv: ['--import', 'tsx'],
    stdio: 'inherit',
  });
  try {
    const bus = server.app.services.bus;
    const idle = bus.listenerCount;
    const messages: Array<{ type: string; arrivals?: number[] }> = [];
    clients.on('message', (m: { type: string; arrivals?: number[] }) => messages.push(m));
    clients.send({
      url: server.url,
      key: server.key('INSTITUTIONAL'),
      subscribers: options.subscribers,
      perConnection,
    });
    await waitUntil(() => messages.some((m) => m.type === 'ready'), 120_000, 'subscriber process ready');
    await waitUntil(
      () => bus.listenerCount >= idle + options.subscribers,
      60_000,
      `${options.subscribers} subscriptions`,
    );
    const latencies: number[] = [];
    // The first rounds warm the JIT up and are not counted.
    const warmup = 3;
    for (let i = 0; i < warmup + rounds; i++) {
      messages.length = 0;
      const event: DomainEvent = {
        id: `bench-${i}`,
        type: 'tier_change',
        occurredAt: new Date(),
        accountId: null,
        payload: {
          slug: `p${i}`,
          protocolId: 'x',
          previousTier: 'L1',
          tier: 'L2',
          score: 70,
          asOf: new Date().toISOString(),
        },
      };
      const publishedAt = performance.timeOrigin + performance.now();
      await server.app.services.events.publish([event]);
      await waitUntil(() => messages.some((m) => m.type === 'arrivals'), 30_000, `round ${i}`);
      if (i >= warmup)
        for (const at of messages.find((m) => m.type === 'arrivals')!.arrivals!)
          latencies.push(at - publishedAt);
      await new Promise((r) => setTimeout(r, 20));
    }
    latencies.sort((a, b) => a - b);
    return {
      subscribers: options.subscribers,
      events: rounds,
      p50Ms: round2(percentile(latencies, 50)),
      p99Ms: round2(percentile(latencies, 99)),
      maxMs: round2(latencies[latencies.length - 1] ?? NaN),
    };
  } finally {
    clients.disconnect();
    await server.close();
  }
}

export interface WebhookThroughput {
  deliveries: number;
  seconds: number;
  deliveriesPerSecond: number;
}

/** Commits `events` tier changes for one registered endpoint and times until every delivery is acknowledged. */
export async function benchWebhooks(options: { events?: number } = {}): Promise<WebhookThroughput> {
  const total = options.events ?? 2000;
  const receiver = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.writeHead(204).end());
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  const hook = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;
  let server: TestServer | undefined;
  try {
    server = await startTestServer({ env: { ...UNLIMITED, WEBHOOK_POLL: '1s' } });
    const registered = await rest(server.url, '/v1/webhooks', {
      method: 'POST',
      key: server.key('PROFESSIONAL'),
      body: { url: hook, event_types: ['tier_change'] },
    });
    if (registered.status !== 201)
      throw new Error(`bench: could not register the endpoint: ${registered.text}`);
    const drafts = Array.from({ length: total }, (_, i) => ({
      type: 'tier_change',
      payload: { slug: `p${i}`, tier: 'L2' },
    }));
    const started = performance.now();
    const events = await server.database.db
      .em()
      .transactional(async (tx) => stageEvents(tx, server!.app.services, drafts));
    await server.app.services.events.publish(events);
    const em = () => server!.database.db.em();
    let delivered = 0;
    const deadline = Date.now() + 120_000;
    while (delivered < total) {
      if (Date.now() > deadline)
        throw new Error(`bench: only ${delivered}/${total} webhooks delivered within 120 s`);
      await new Promise((r) => setTimeout(r, 50));
      delivered = await em().count(WebhookDelivery, { status: WebhookDeliveryStatus.DELIVERED });
    }
    const seconds = (performance.now() - started) / 1000;
    return { deliveries: total, seconds: round2(seconds), deliveriesPerSecond: Math.round(total / seconds) };
  } finally {
    await server?.close();
    await new Promise((r) => receiver.close(r));
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const counts = process.argv
    .slice(2)
    .map(Number)
    .filter((n) => n > 0);
  for (const subscribers of counts.length > 0 ? counts : [1000, 5000]) {
    console.log(JSON.stringify(await benchFanout({ subscribers })));
  }
  console.log(JSON.stringify(await benchWebhooks()));
  process.exit(0);
}

/** Called by `npm run bench` after the HTTP scenarios: fan-out at 1,000 and 5,000 subscribers, then webhook throughput. */
export async function extraBenchmarks(): Promise<Record<string, unknown>> {
  const fanout: FanoutResult[] = [];
  for (const subscribers of [1000, 5000]) fanout.push(await benchFanout({ subscribers }));
  return { fanout, webhooks: await benchWebhooks() };
}
