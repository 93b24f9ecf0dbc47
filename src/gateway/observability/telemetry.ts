import {
  ROOT_CONTEXT,
  SpanKind,
  SpanStatusCode,
  context,
  defaultTextMapGetter,
  defaultTextMapSetter,
  trace,
  type Context,
  type Span,
  type Tracer,
} from '@opentelemetry/api';
import type { BasicTracerProvider, SpanExporter } from '@opentelemetry/sdk-trace-base';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Config } from '../../config.js';
import type { Database } from '../../db/orm.js';
import { isPromise, type MaybePromise } from '../../kernel/maybe-async.js';
import { routeOf } from '../doors/fastify-types.js';
import { traceContextPropagator } from '../../kernel/trace-context.js';

interface KnexQuery {
  __knexQueryUid?: string;
  sql?: string;
  method?: string;
}

/**
 * OpenTelemetry tracing, off unless OTEL_EXPORTER_OTLP_ENDPOINT is set (or a test gives an
 * exporter). Off, every entry point is one property check: no spans, no context switches, no
 * hooks registered. The tracer provider is this object's own (not the global one), so several
 * apps in a process trace independently; only the context manager is process-wide, because
 * that is how OpenTelemetry finds the active span across awaits.
 */
export class Telemetry {
  private readonly propagator = traceContextPropagator;
  private readonly requests = new WeakMap<FastifyRequest, { span: Span; ctx: Context }>();

  private constructor(
    readonly tracer: Tracer | undefined,
    private readonly provider: BasicTracerProvider | undefined,
  ) {}

  static off(): Telemetry {
    return new Telemetry(undefined, undefined);
  }

  /**
   * From config; `exporter` replaces the OTLP exporter (tests export to memory, synchronously).
   * The SDK is loaded only when tracing is on: about a quarter of a second of every start otherwise.
   */
  static async create(
    config: Pick<Config, 'otelEndpoint' | 'otelServiceName'>,
    exporter?: SpanExporter,
  ): Promise<Telemetry> {
    if (!exporter && !config.otelEndpoint) return Telemetry.off();
    const [{ AsyncLocalStorageContextManager }, { resourceFromAttributes }, sdk] = await Promise.all([
      import('@opentelemetry/context-async-hooks'),
      import('@opentelemetry/resources'),
      import('@opentelemetry/sdk-trace-base'),
    ]);
    const processor = exporter
      ? new sdk.SimpleSpanProcessor(exporter)
      : new sdk.BatchSpanProcessor(
          new (await import('@opentelemetry/exporter-trace-otlp-http')).OTLPTraceExporter({
            url: `${config.otelEndpoint}/v1/traces`,
          }),
        );
    const provider = new sdk.BasicTracerProvider({
      resource: resourceFromAttributes({ 'service.name': config.otelServiceName }),
      spanProcessors: [processor],
    });
    // False when another app in this process set it first: that manager serves both.
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    return new Telemetry(provider.getTracer('tidegate'), provider);
  }

  get enabled(): boolean {
    return this.tracer !== undefined;
  }

  /**
   * A server span per HTTP request, child of an incoming W3C `traceparent`, active while the
   * edge hooks and the handler run. The handler runs after the body is read, in the socket's
   * async context, so the span is made active again just before it (preHandler).
   */
  traceRequests(app: FastifyInstance): void {
    const tracer = this.tracer;
    if (!tracer) return;
    app.addHook('onRequest', (request, _reply, done) => {
      const parent = this.propagator.extract(ROOT_CONTEXT, request.headers, defaultTextMapGetter);
      const route = routeOf(request).url;
      const span = tracer.startSpan(
        route ? `${request.method} ${route}` : request.method,
        {
          kind: SpanKind.SERVER,
          attributes: {
            'http.request.method': request.method,
            'url.path': request.url.split('?')[0],
            ...(route ? { 'http.route': route } : {}),
          },
        },
        parent,
      );
      const ctx = trace.setSpan(parent, span);
      this.requests.set(request, { span, ctx });
      context.with(ctx, done);
    });
    app.addHook('preHandler', (request, _reply, done) => {
      const entry = this.requests.get(request);
      if (entry) context.with(entry.ctx, done);
      else done();
    });
    app.addHook('onResponse', (request, reply, done) => {
      const entry = this.requests.get(request);
      if (entry) {
        const { span } = entry;
        span.setAttribute('http.response.status_code', reply.statusCode);
        const operation = request.gatewayMeta?.operation;
        if (operation) span.setAttribute('graphql.operation', operation);
        if (request.principal) span.setAttribute('tidegate.account_id', request.principal.accountId);
        if (reply.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
        span.end();
      }
      done();
    });
  }

  /** A client span per SQL statement, from knex's query events (MikroORM runs every statement through knex). */
  traceStatements(db: Database): void {
    const tracer = this.tracer;
    if (!tracer) return;
    const open = new Map<string, Span>();
    const knex = db.em().getKnex();
    const finish = (query: KnexQuery, error?: Error) => {
      const uid = query.__knexQueryUid;
      const span = uid ? open.get(uid) : undefined;
      if (!span || !uid) return;
      open.delete(uid);
      if (error) span.setStatus({ code: SpanStatusCode.ERROR, message: error.message });
      span.end();
    };
    knex.on('query', (query: KnexQuery) => {
      // Statements outside any trace (the outbox's polling, start-up) would each be a trace of their own.
      if (!query.__knexQueryUid || !trace.getSpan(context.active())) return;
      const sql = query.sql ?? '';
      open.set(
        query.__knexQueryUid,
        tracer.startSpan(`${(query.method ?? sql.split(' ')[0] ?? 'sql').toUpperCase()} ${db.dialect}`, {
          kind: SpanKind.CLIENT,
          attributes: { 'db.system': db.dialect, 'db.query.text': sql.slice(0, 2000) },
        }),
      );
    });
    knex.on('query-response', (_response: unknown, query: KnexQuery) => finish(query));
    knex.on('query-error', (error: Error, query: KnexQuery) => finish(query, error));
  }

  /**
   * A client span for one webhook delivery attempt, child of the span that staged the event — in
   * this process or another: its `traceparent` is stored with the event (events/stage.ts) — and
   * announced to the receiver as `traceparent`. An event staged untraced starts a trace of its own.
   */
  delivery<T>(
    event: { traceparent?: string | null },
    attributes: Record<string, string>,
    send: (traceHeaders: Record<string, string>) => Promise<T>,
    statusOf: (result: T) => number | null,
  ): Promise<T> {
    const tracer = this.tracer;
    if (!tracer) return send({});
    const parent = event.traceparent
      ? this.propagator.extract(ROOT_CONTEXT, { traceparent: event.traceparent }, defaultTextMapGetter)
      : ROOT_CONTEXT;
    const span = tracer.startSpan('webhook delivery', { kind: SpanKind.CLIENT, attributes }, parent);
    const headers: Record<string, string> = {};
    this.propagator.inject(trace.setSpan(parent, span), headers, defaultTextMapSetter);
    return send(headers).then(
      (result) => {
        const status = statusOf(result);
        if (status !== null) span.setAttribute('http.response.status_code', status);
        if (status === null || status >= 300) span.setStatus({ code: SpanStatusCode.ERROR });
        span.end();
        return result;
      },
      (error: unknown) => {
        span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error).message });
        span.end();
        throw error;
      },
    );
  }

  /** Exports what is buffered; the app calls it on close. */
  async shutdown(): Promise<void> {
    await this.provider?.shutdown();
  }
}

/**
 * Runs one GraphQL operation (any door) inside a span named after it, e.g. `query Dashboard`.
 * Synchronous results stay synchronous: the fast path answers without a promise.
 */
export function operationSpan<T>(
  telemetry: Telemetry,
  label: string,
  run: () => MaybePromise<T>,
): MaybePromise<T> {
  const tracer = telemetry.tracer;
  if (!tracer) return run();
  return tracer.startActiveSpan(label, { attributes: { 'graphql.operation': label } }, (span) => {
    const fail = (error: unknown) => {
      span.setStatus({ code: SpanStatusCode.ERROR, message: (error as Error)?.message });
      span.end();
      throw error;
    };
    try {
      const result = run();
      if (!isPromise(result)) {
        span.end();
        return result;
      }
      return result.then((value) => {
        span.end();
        return value;
      }, fail);
    } catch (error) {
      return fail(error);
    }
  });
}
