import { SpanKind } from '@opentelemetry/api';
import { InMemorySpanExporter, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Telemetry } from '../../../src/gateway/observability/telemetry.js';
import { rest, startTestServer, type TestServer } from '../../helpers/server.js';
import { waitFor } from '../../helpers/wait.js';
import { startReceiver, type Receiver } from '../../events/helpers.js';

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';
const CALLER_SPAN = '00f067aa0ba902b7';

describe('OpenTelemetry tracing', () => {
  const exporter = new InMemorySpanExporter();
  let server: TestServer;
  let receiver: Receiver;
  beforeAll(async () => {
    server = await startTestServer({
      telemetry: await Telemetry.create(
        { otelEndpoint: undefined, otelServiceName: 'tidegate-test' },
        exporter,
      ),
    });
    receiver = await startReceiver();
  });
  afterAll(async () => {
    await server?.close();
    await receiver?.close();
  });

  it('carries an incoming traceparent through the request, the operation, its SQL and the webhook delivery', async () => {
    const key = server.key('PROFESSIONAL');
    const registered = await rest(server.url, '/v1/webhook-subscriptions', {
      method: 'POST',
      key,
      body: { url: receiver.url, eventTypes: ['port_call.created'] },
    });
    expect(registered.status, registered.text).toBe(201);
    exporter.reset();

    const created = await rest(server.url, '/v1/port-calls', {
      method: 'POST',
      key,
      headers: { traceparent: `00-${TRACE_ID}-${CALLER_SPAN}-01` },
      body: {
        vesselImo: '9321483',
        portLocode: 'NLRTM',
        voyageReference: 'TRACE-1',
        eta: new Date(Date.now() + 86_400_000).toISOString(),
      },
    });
    expect(created.status, created.text).toBe(201);

    const [delivered] = await receiver.waitFor((all) => all.length > 0);
    const sent = /^00-([0-9a-f]{32})-([0-9a-f]{16})-01$/.exec(String(delivered!.headers.traceparent));
    expect(sent?.[1]).toBe(TRACE_ID);

    const spans = await waitForSpan(exporter, (s) => s.name === 'webhook delivery');
    const inTrace = spans.filter((s) => s.spanContext().traceId === TRACE_ID);
    const parentOf = (s: ReadableSpan) => s.parentSpanContext?.spanId;
    const request = inTrace.find((s) => s.name === 'POST /v1/port-calls')!;
    expect(request.kind).toBe(SpanKind.SERVER);
    expect(parentOf(request)).toBe(CALLER_SPAN);
    expect(request.attributes['http.response.status_code']).toBe(201);

    const operation = inTrace.find((s) => s.name === 'mutation RestCreatePortCall')!;
    expect(parentOf(operation)).toBe(request.spanContext().spanId);
    const statements = inTrace.filter((s) => s.attributes['db.system'] === 'sqlite');
    const insert = statements.find(
      (s) =>
        parentOf(s) === operation.spanContext().spanId &&
        /insert into `port_calls`/i.test(String(s.attributes['db.query.text'])),
    );
    expect(insert, statements.map((s) => s.attributes['db.query.text']).join('\n')).toBeDefined();

    const delivery = inTrace.find((s) => s.name === 'webhook delivery')!;
    expect(delivery.kind).toBe(SpanKind.CLIENT);
    expect(delivery.attributes['tidegate.event.type']).toBe('port_call.created');
    // The receiver's parent is the delivery span itself.
    expect(sent?.[2]).toBe(delivery.spanContext().spanId);
  });

  it('starts a trace of its own for a request without traceparent, and a bad traceparent is ignored', async () => {
    exporter.reset();
    const res = await rest(server.url, '/v1/vessels/lookup?imo=9074729', {
      key: server.key('PROFESSIONAL'),
      headers: { traceparent: '00-not-a-trace-01' },
    });
    expect(res.status).toBe(200);
    const spans = await waitForSpan(exporter, (s) => s.name === 'GET /v1/vessels/lookup');
    const request = spans.find((s) => s.name === 'GET /v1/vessels/lookup')!;
    expect(request.parentSpanContext).toBeUndefined();
    expect(request.spanContext().traceId).not.toBe(TRACE_ID);
  });
});

/** The finished spans, once one of them is `found`. */
function waitForSpan(
  exporter: InMemorySpanExporter,
  found: (span: ReadableSpan) => boolean,
): Promise<ReadableSpan[]> {
  return waitFor(
    () => exporter.getFinishedSpans(),
    (spans) => spans.some(found),
    { what: (spans) => `the span among ${spans.map((s) => s.name).join(', ')}` },
  );
}
