import { context, defaultTextMapSetter, type Context } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';

/** The one W3C trace-context codec: requests in, webhook deliveries out, events stored between. */
export const traceContextPropagator = new W3CTraceContextPropagator();

/** The W3C `traceparent` of the span active in `ctx`, or null when none is (tracing off). */
export function traceparentOf(ctx: Context = context.active()): string | null {
  const carrier: Record<string, string> = {};
  traceContextPropagator.inject(ctx, carrier, defaultTextMapSetter);
  return carrier.traceparent ?? null;
}
