import { SpanKind } from '@opentelemetry/api';
import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp, type App } from '../../src/app.js';
import { loadConfig } from '../../src/config.js';
import { EventRecord } from '../../src/events/entities.js';
import { Telemetry } from '../../src/gateway/observability/telemetry.js';
import { describeWithPostgres, TEST_SECRETS_KEY } from '../helpers/env.js';
import { rest, startTestServer, type TestServer } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';
import { startReceiver, type Receiver } from './helpers.js';

const TRACE_ID = '0af7651916cd43dd8448eb211c80319c';
const CALLER_SPAN = 'b7ad6b7169203331';

const tracing = (exporter: InMemorySpanExporter) =>
  Telemetry.create({ otelEndpoint: undefined, otelServiceName: 'tidegate-test' }, exporter);

/**
 * A webhook delivery joins the trace of the request that staged its event even when another
 * process delivers it: the staging span's traceparent is stored with the event. Two apps with
 * their own tracers on one PostgreSQL: A stages (WEBHOOK_WORKER=false), B delivers.
 */
describeWithPostgres('webhook delivery spans across processes', () => {
  const stagingSpans = new InMemorySpanExporter();
  const deliveringSpans = new InMemorySpanExporter();
  let staging: TestServer;
  let delivering: App;
  let receiver: Receiver;
  beforeAll(async () => {
    receiver = await startReceiver();
    staging = await startTestServer({
      dialect: 'postgresql',
      env: { WEBHOOK_WORKER: 'false' },
      telemetry: await tracing(stagingSpans),
    });
    // Its own connection pool, ORM, bus and tracer: all it shares with A is the database.
    delivering = await buildApp(
      loadConfig({
        PORT: '0',
        HOST: '127.0.0.1',
        DATABASE_URL: staging.database.url,
        LOG_LEVEL: 'warn',
        WEBHOOK_ALLOW_PRIVATE: 'true',
        SECRETS_KEY: TEST_SECRETS_KEY,
        SHUTDOWN_DRAIN_MS: '0',
      }),
      { logger: false, telemetry: await tracing(deliveringSpans) },
    );
    await delivering.listen();
  }, 60_000);
  afterAll(async () => {
    await delivering?.close();
    await staging?.close();
    await receiver?.close();
  });

  it('B’s delivery span and the receiver’s traceparent carry the trace id of the request A staged it in', async () => {
    const key = staging.key('PROFESSIONAL');
    const registered = await rest(staging.url, '/v1/webhook-subscriptions', {
      method: 'POST',
      key,
      body: { url: receiver.url, eventTypes: ['port_call.created'] },
    });
    expect(registered.status, registered.text).toBe(201);

    const created = await rest(staging.url, '/v1/port-calls', {
      method: 'POST',
      key,
      headers: { traceparent: `00-${TRACE_ID}-${CALLER_SPAN}-01` },
      body: {
        vesselImo: '9321483',
        portLocode: 'NLRTM',
        voyageReference: 'TRACE-XP',
        eta: new Date(Date.now() + 86_400_000).toISOString(),
      },
    });
    expect(created.status, created.text).toBe(201);

    // The event row carries the span that staged it: the operation span of A's request.
    const event = await staging.database.db
      .em()
      .findOneOrFail(EventRecord, { type: 'port_call.created' }, { orderBy: { occurredAt: 'desc' } });
    const stagedIn = /^00-([0-9a-f]{32})-([0-9a-f]{16})-01$/.exec(event.traceparent ?? '');
    expect(stagedIn?.[1]).toBe(TRACE_ID);
    const operation = stagingSpans.getFinishedSpans().find((s) => s.name === 'mutation RestCreatePortCall');
    expect(operation?.spanContext().traceId).toBe(TRACE_ID);
    expect(stagedIn?.[2]).toBe(operation!.spanContext().spanId);

    const isOurs = (r: { json: { id: string } }) => r.json.id === event.id;
    const delivered = (await receiver.waitFor((all) => all.some(isOurs))).find(isOurs);
    const sent = /^00-([0-9a-f]{32})-([0-9a-f]{16})-01$/.exec(String(delivered!.headers.traceparent));
    expect(sent?.[1]).toBe(TRACE_ID);

    const delivery = await spanNamed(deliveringSpans, 'webhook delivery');
    expect(delivery.kind).toBe(SpanKind.CLIENT);
    expect(delivery.spanContext().traceId).toBe(TRACE_ID);
    expect(delivery.parentSpanContext?.spanId).toBe(operation!.spanContext().spanId);
    expect(delivery.parentSpanContext?.isRemote).toBe(true);
    // The receiver's parent is B's delivery span; A delivered nothing.
    expect(sent?.[2]).toBe(delivery.spanContext().spanId);
    expect(stagingSpans.getFinishedSpans().filter((s) => s.name === 'webhook delivery')).toEqual([]);
  });
});

describe('tracing off', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server?.close());

  it('stores no trace context with staged events, even under an incoming traceparent', async () => {
    const created = await rest(server.url, '/v1/port-calls', {
      method: 'POST',
      key: server.key('PROFESSIONAL'),
      headers: { traceparent: `00-${TRACE_ID}-${CALLER_SPAN}-01` },
      body: {
        vesselImo: '9321483',
        portLocode: 'NLRTM',
        voyageReference: 'UNTRACED',
        eta: new Date(Date.now() + 86_400_000).toISOString(),
      },
    });
    expect(created.status, created.text).toBe(201);
    const events = await server.database.db.em().find(EventRecord, { type: 'port_call.created' });
    expect(events.map((e) => e.traceparent)).toEqual([null]);
  });
});

async function spanNamed(exporter: InMemorySpanExporter, name: string): Promise<ReadableSpan> {
  const spans = await waitFor(
    () => exporter.getFinishedSpans(),
    (finished) => finished.some((s) => s.name === name),
    { what: (finished) => `a ${name} span among ${finished.map((s) => s.name).join(', ')}` },
  );
  return spans.find((s) => s.name === name)!;
}
