import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import type { Database } from '../../db/orm.js';
import { constantTimeEqual } from '../../kernel/crypto.js';
import type { Plan } from '../../kernel/plans.js';
import type { AnswerOutcome } from '../pipeline/answers.js';
import { routeOf } from '../doors/fastify-types.js';

/**
 * Which way an HTTP request came in: the first label of every request metric. (graphql-ws traffic
 * shows in the socket gauges and the admission refusals; its starts are not HTTP requests.)
 */
export type Door = 'graphql-http' | 'rest' | 'oauth' | 'other';

/** Why a WebSocket connection was closed with 4429. */
export type WsRefusal = 'credential' | 'address' | 'pings';

/** Outcome of one webhook delivery attempt. */
export type DeliveryOutcome = 'delivered' | 'retry' | 'failed';

export interface OutboxSnapshot {
  /** Deliveries still pending (due now or waiting for a retry). */
  pending: number;
  /** Committed events the outbox has not fanned out yet. */
  undispatched: number;
  /** Seconds since the oldest pending delivery or undispatched event was created; 0 when there is none. */
  oldestAgeSeconds: number;
}

export interface PoolSnapshot {
  used: number;
  free: number;
  pending: number;
}

/**
 * A counter counted in plain cells and added to its prom-client counter when scraped (its public
 * `collect` hook), instead of prom-client's label validation and hashing per call. A caller takes
 * a label set's cell once and counts on it directly. The series stay bounded by their labels
 * (operation names are capped).
 */
class BatchedCounter<L extends string> {
  private readonly pending = new Map<string, PendingCount<L>>();
  private readonly counter: Counter<L>;

  constructor(configuration: { name: string; help: string; labelNames: L[]; registers: Registry[] }) {
    this.counter = new Counter<L>({ ...configuration, collect: () => this.fold() });
  }

  /**
   * The pending count of one label set, for a caller that keeps it and counts on it directly.
   * `key` names the label values (the caller joins them); `labels` makes them on first use.
   */
  cell(key: string, labels: () => Record<L, string>): PendingCount<L> {
    let entry = this.pending.get(key);
    if (!entry) this.pending.set(key, (entry = { labels: labels(), count: 0 }));
    return entry;
  }

  /** Adds what was counted since the last scrape to the prom-client counter. */
  private fold(): void {
    for (const entry of this.pending.values()) {
      if (entry.count === 0) continue;
      this.counter.inc(entry.labels, entry.count);
      entry.count = 0;
    }
  }
}

/** What one label set of a BatchedCounter counted since the last scrape. */
interface PendingCount<L extends string> {
  readonly labels: Record<L, string>;
  count: number;
}

/** Prometheus label values escape backslash, double quote and newline. */
function escapeLabel(value: string): string {
  return value.replace(/[\\"\n]/g, (c) => (c === '\n' ? '\\n' : '\\' + c));
}

/** One door and route: its answers by status, and its durations in histogram buckets. */
interface RouteSeries {
  /** Label text for the histogram lines, `door="…",route="…"`, escaped once. */
  labelText: string;
  /** Answers by status, cells of the request counter kept here so a request makes no key. */
  statuses: Map<number, PendingCount<'door' | 'route' | 'status'>>;
  /** Observations per bucket (not cumulative), the last for values above every bound. */
  buckets: Float64Array;
  sum: number;
  count: number;
}

/**
 * The request counter and the duration histogram, kept per door and route: one key and one map
 * lookup per request instead of prom-client's label validation, hashing and a closure per call,
 * for each of the two metrics. The counter is a BatchedCounter whose cells each route keeps by
 * status. prom-client has no public way to add bucket counts in bulk, so the histogram family is
 * written here, in the text exposition format (version 0.0.4), and served after the registry's
 * families on the same scrape.
 */
class RequestSeries {
  /** By door, then route: keys the caller already holds, so no joined key is made and hashed per request. */
  private readonly series = new Map<Door, Map<string, RouteSeries>>();
  private readonly requests: BatchedCounter<'door' | 'route' | 'status'>;

  constructor(
    registers: Registry[],
    private readonly duration: { name: string; help: string; buckets: readonly number[] },
  ) {
    this.requests = new BatchedCounter({
      name: 'tidegate_requests_total',
      help: 'Requests answered, by door, route or GraphQL operation, and HTTP status',
      labelNames: ['door', 'route', 'status'],
      registers,
    });
  }

  observe(door: Door, route: string, status: number, seconds: number): void {
    let routes = this.series.get(door);
    if (!routes) this.series.set(door, (routes = new Map()));
    let series = routes.get(route);
    if (!series) {
      series = {
        labelText: `door="${escapeLabel(door)}",route="${escapeLabel(route)}"`,
        statuses: new Map(),
        buckets: new Float64Array(this.duration.buckets.length + 1),
        sum: 0,
        count: 0,
      };
      routes.set(route, series);
    }
    let answered = series.statuses.get(status);
    if (!answered) {
      answered = this.requests.cell(`${door}\u0000${route}\u0000${status}`, () => ({
        door,
        route,
        status: String(status),
      }));
      series.statuses.set(status, answered);
    }
    answered.count++;
    if (!Number.isFinite(seconds)) return;
    const bounds = this.duration.buckets;
    let i = 0;
    while (i < bounds.length && seconds > bounds[i]!) i++;
    series.buckets[i]!++;
    series.sum += seconds;
    series.count++;
  }

  /** The duration histogram in the text exposition format, as prom-client writes a histogram. */
  histogramText(): string {
    const { name, help, buckets } = this.duration;
    let text = `# HELP ${name} ${help.replace(/\\/g, '\\\\').replace(/\n/g, '\\n')}\n# TYPE ${name} histogram\n`;
    for (const series of [...this.series.values()].flatMap((routes) => [...routes.values()])) {
      if (series.count === 0) continue;
      let cumulative = 0;
      for (let i = 0; i < buckets.length; i++) {
        cumulative += series.buckets[i]!;
        text += `${name}_bucket{le="${buckets[i]}",${series.labelText}} ${cumulative}\n`;
      }
      text += `${name}_bucket{le="+Inf",${series.labelText}} ${series.count}\n`;
      text += `${name}_sum{${series.labelText}} ${series.sum}\n`;
      text += `${name}_count{${series.labelText}} ${series.count}\n`;
    }
    return text;
  }
}

/**
 * prom-client's default metrics name three gauges `nodejs_active_{handles,requests,resources}_total`;
 * `_total` is for counters, and `promtool check metrics` says so. They are served as
 * `nodejs_active_{handles,requests,resources}_all_types` (the name without the suffix is taken by
 * prom-client's per-type gauges, whose sum they are). prom-client offers no way to rename a default
 * metric, so the exposition text is rewritten (HELP, TYPE and the samples).
 */
const MISNAMED_GAUGES = /\b(nodejs_active_(?:handles|requests|resources))_total\b/g;

/**
 * Client-chosen operation names are unbounded: past this many distinct ones, the rest share the
 * label `other`. Only operations of authenticated callers that were admitted spend the budget, so a
 * stranger cannot use it up; the others count under UNADMITTED.
 */
const MAX_OPERATION_LABELS = 500;
/** The `route` of every GraphQL request refused before it ran: no credential, refused by scope, plan or rate. */
export const UNADMITTED = 'unadmitted';
/** Statuses of an operation refused before it ran (the access check and the rate limiter). */
const REFUSED = new Set([401, 402, 403, 429]);

/**
 * The service's Prometheus metrics, in a Registry of its own (never prom-client's global one), so
 * several apps in one process (tests) each count their own. Made once in the composition root;
 * sources that are cheaper to read on a scrape than to count (outbox backlog, pool, sockets) are
 * callbacks registered by whoever owns them.
 */
export class Metrics {
  readonly registry = new Registry();
  private readonly requests: RequestSeries;
  private readonly errors: Counter<'door' | 'code'>;
  private readonly refusals: Counter<'reason' | 'plan'>;
  private readonly events: Counter<'type'>;
  private readonly deliveries: Counter<'outcome'>;
  private readonly wsRefusals: Counter<'reason'>;
  private readonly answers: BatchedCounter<'source' | 'outcome'>;
  /** The answer counter's cells by source and outcome: a kept answer is counted without a joined key. */
  private readonly answerCells = new Map<string, Map<AnswerOutcome, PendingCount<'source' | 'outcome'>>>();
  private readonly operationLabels = new Set<string>();
  private outbox: (() => Promise<OutboxSnapshot>) | undefined;
  private pool: (() => PoolSnapshot | undefined) | undefined;
  private sockets: (() => { connections: number; subscriptions: number }) | undefined;
  private readModelVersion: (() => number) | undefined;
  private answerCacheSize: (() => { entries: number; bytes: number }) | undefined;

  constructor() {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry });
    this.requests = new RequestSeries(registers, {
      name: 'tidegate_request_duration_seconds',
      help: 'Time from the request arriving to the response being sent, by door and route or operation',
      buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    });
    this.errors = new Counter({
      name: 'tidegate_errors_total',
      help: 'Errors answered, by door and error code (extensions.code for GraphQL, error.code for REST)',
      labelNames: ['door', 'code'],
      registers,
    });
    this.refusals = new Counter({
      name: 'tidegate_admission_refusals_total',
      help: 'Calls refused by the per-minute rate limit (rate_limit) or the monthly quota (quota), by plan',
      labelNames: ['reason', 'plan'],
      registers,
    });
    this.events = new Counter({
      name: 'tidegate_events_published_total',
      help: 'Domain events this process published, by type',
      labelNames: ['type'],
      registers,
    });
    this.answers = new BatchedCounter({
      name: 'tidegate_answer_cache_total',
      help: 'Queries whose results may be kept, by source and outcome: hit (kept result of the current data version), carried (a kept result the data changes since did not touch), spliced (a kept result with the list items a change touched executed again), joined (an execution already running), miss (executed)',
      labelNames: ['source', 'outcome'],
      registers,
    });
    this.deliveries = new Counter({
      name: 'tidegate_webhook_delivery_attempts_total',
      help: 'Webhook delivery attempts made by this process: delivered, retry (failed, will retry), failed (gave up)',
      labelNames: ['outcome'],
      registers,
    });
    this.wsRefusals = new Counter({
      name: 'tidegate_ws_refused_total',
      help: 'WebSocket connections closed with 4429: over the per-credential (credential) or per-address (address) bound, or sending pings too fast (pings)',
      labelNames: ['reason'],
      registers,
    });
    // Read on each scrape from their owners: cheaper than counting every change.
    const gauge = (
      name: string,
      help: string,
      read: (g: Gauge) => void | Promise<void>,
      labelNames: string[] = [],
    ) => {
      const g: Gauge = new Gauge({ name, help, labelNames, registers, collect: () => read(g) });
    };
    gauge('tidegate_ws_connections', 'Open, authenticated graphql-ws connections', (g) =>
      g.set(this.sockets?.().connections ?? 0),
    );
    gauge('tidegate_ws_subscriptions', 'Active GraphQL subscriptions over WebSocket', (g) =>
      g.set(this.sockets?.().subscriptions ?? 0),
    );
    const outboxGauge = (name: string, help: string, pick: (s: OutboxSnapshot) => number) =>
      gauge(name, help, async (g) => {
        const snapshot = await this.outbox?.();
        if (snapshot) g.set(pick(snapshot));
      });
    outboxGauge(
      'tidegate_outbox_pending_deliveries',
      'Webhook deliveries not yet delivered or failed',
      (s) => s.pending,
    );
    outboxGauge(
      'tidegate_outbox_undispatched_events',
      'Committed events not yet fanned out to endpoints',
      (s) => s.undispatched,
    );
    outboxGauge(
      'tidegate_outbox_oldest_undelivered_age_seconds',
      'Age of the oldest event still waiting for a delivery (0 when none waits)',
      (s) => s.oldestAgeSeconds,
    );
    gauge(
      'tidegate_db_pool_connections',
      'Database pool connections by state (used, free, pending acquisitions)',
      (g) => {
        const pool = this.pool?.();
        if (!pool) return;
        g.set({ state: 'used' }, pool.used);
        g.set({ state: 'free' }, pool.free);
        g.set({ state: 'pending' }, pool.pending);
      },
      ['state'],
    );
    gauge(
      'tidegate_answer_cache_bytes',
      'Size as JSON of the query results this process keeps (bounded by ANSWER_CACHE_MB)',
      (g) => g.set(this.answerCacheSize?.().bytes ?? 0),
    );
    gauge(
      'tidegate_read_model_version',
      'Version of the in-memory liquidity read model this process serves (0 before it is built)',
      (g) => g.set(this.readModelVersion?.() ?? 0),
    );
  }

  /** Every family in the Prometheus text format: the registry's, then the request durations. */
  async exposition(): Promise<string> {
    const registry = (await this.registry.metrics()).replace(MISNAMED_GAUGES, '$1_all_types');
    return registry + this.requests.histogramText();
  }

  /** A query whose results may be kept (src/gateway/pipeline/answers.ts): answered from a kept result, joined, or executed. */
  answerCache(source: string, outcome: AnswerOutcome): void {
    let cells = this.answerCells.get(source);
    if (!cells) this.answerCells.set(source, (cells = new Map()));
    let cell = cells.get(outcome);
    if (!cell)
      cells.set(
        outcome,
        (cell = this.answers.cell(`${source}\u0000${outcome}`, () => ({ source, outcome }))),
      );
    cell.count++;
  }

  observeAnswerCache(probe: () => { entries: number; bytes: number }): void {
    this.answerCacheSize = probe;
  }

  /**
   * One answered request. `route` is the route template or the GraphQL operation ("query Name");
   * an operation gets its own label only when an `authenticated` caller's request was admitted.
   */
  request(
    door: Door,
    route: string,
    status: number,
    seconds: number,
    errorCodes: readonly string[],
    authenticated: boolean,
  ): void {
    const label =
      door !== 'graphql-http'
        ? route
        : authenticated && !REFUSED.has(status)
          ? this.operationLabel(route)
          : UNADMITTED;
    this.requests.observe(door, label, status, seconds);
    for (const code of errorCodes) this.errors.inc({ door, code });
  }

  refusal(reason: 'rate_limit' | 'quota', plan: Plan | 'none'): void {
    this.refusals.inc({ reason, plan });
  }

  published(types: Iterable<string>): void {
    for (const type of types) this.events.inc({ type });
  }

  wsRefused(reason: WsRefusal): void {
    this.wsRefusals.inc({ reason });
  }

  deliveryAttempt(outcome: DeliveryOutcome): void {
    this.deliveries.inc({ outcome });
  }

  observeOutbox(probe: () => Promise<OutboxSnapshot>): void {
    this.outbox = probe;
  }

  observePool(probe: () => PoolSnapshot | undefined): void {
    this.pool = probe;
  }

  observeSockets(probe: () => { connections: number; subscriptions: number }): void {
    this.sockets = probe;
  }

  /** The liquidity read model registers how to read its version once it exists. */
  observeReadModelVersion(probe: () => number): void {
    this.readModelVersion = probe;
  }

  private operationLabel(operation: string): string {
    if (this.operationLabels.has(operation)) return operation;
    if (this.operationLabels.size >= MAX_OPERATION_LABELS) return 'other';
    this.operationLabels.add(operation);
    return operation;
  }
}

interface TarnPool {
  numUsed(): number;
  numFree(): number;
  numPendingAcquires(): number;
}

/** The knex (tarn) pool's standing; undefined before the pool exists. */
export function poolSnapshot(db: Database): PoolSnapshot | undefined {
  // knex types its client as `any`; the pool is tarn's, created on first use.
  const pool = (db.em().getKnex().client as { pool?: TarnPool }).pool;
  if (!pool) return undefined;
  return { used: pool.numUsed(), free: pool.numFree(), pending: pool.numPendingAcquires() };
}

/** The door a finished request came in by, from its route (not its raw URL: that is unbounded). */
export function doorOf(request: FastifyRequest): Door {
  const options = routeOf(request);
  const config = options.config;
  if (config.graphql) return 'graphql-http';
  const url = options.url ?? '';
  if (url.startsWith('/oauth') || url.startsWith('/.well-known')) return 'oauth';
  if (config.audit) return 'rest';
  return 'other';
}

/**
 * GET /metrics in Prometheus text format. With METRICS_TOKEN set it wants that bearer token
 * (compared in constant time); without it, keep the port off the public network.
 */
export function registerMetricsRoute(
  app: FastifyInstance,
  metrics: Metrics,
  token: string | undefined,
): void {
  app.get('/metrics', async (request, reply) => {
    if (token !== undefined) {
      const presented = /^Bearer (.+)$/i.exec(request.headers.authorization ?? '')?.[1] ?? '';
      if (!constantTimeEqual(presented, token)) {
        return reply
          .code(401)
          .header('WWW-Authenticate', 'Bearer realm="tidegate-metrics"')
          .send({
            error: {
              code: 'UNAUTHORIZED',
              message: 'GET /metrics needs the METRICS_TOKEN bearer token',
              requestId: request.id,
            },
          });
      }
    }
    const body = await metrics.exposition();
    return reply.type(metrics.registry.contentType).send(body);
  });
}
