import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { LockMode, raw, type EntityName, type FilterQuery, type RequiredEntityData } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/knex';
import { Account } from '../accounts/entities.js';
import type { AppServices } from '../gateway/schema/context.js';
import type { DomainEvent } from '../kernel/events.js';
import type { Database } from '../db/orm.js';
import { plainEntities } from '../db/plain.js';
import type { OutboxSnapshot } from '../gateway/observability/metrics.js';
import { HOUR, type Clock } from '../kernel/clock.js';
import { isAppError } from '../kernel/errors.js';
import { Plan, planAtLeast } from '../kernel/plans.js';
import { WebhookDomain, webhookDomainOf } from './catalog.js';
import {
  EventRecord,
  WebhookDelivery,
  WebhookDeliveryAttempt,
  WebhookDeliveryStatus,
  WebhookEndpoint,
  WebhookEndpointStatus,
} from './entities.js';
import { dropExpiredPreviousSecrets, purgeExpired } from './retention.js';
import { signingSecrets } from './secrets.js';
import { SIGNATURE_HEADER, signatureHeader, standardWebhookHeaders } from './signature.js';
import { WebhookHttp, type Answer } from './delivery-http.js';
import { vetWebhookUrl, type Resolver } from './ssrf.js';

const DISPATCH_BATCH = 200;
/** Attempts in flight per process; a slow receiver holds some slots, never the whole worker. */
const MAX_IN_FLIGHT = 32;
/**
 * Attempts in flight per endpoint (all processes, counted from live leases when claiming): one
 * hanging receiver with a backlog holds at most this many slots, so the others keep flowing.
 * Two processes claiming at the same instant may briefly exceed it.
 */
export const MAX_IN_FLIGHT_PER_ENDPOINT = 4;
/** Each retry waits this many times longer than the one before. */
const BACKOFF_FACTOR = 3;
const JITTER = 0.2;
/** A claim's lease outlasts the attempt deadline by this much, to write the result. */
const LEASE_MARGIN_MS = 5_000;
/** How often the worker enforces EVENT_RETENTION (and at start). */
const RETENTION_SWEEP_MS = HOUR;

/** What of an endpoint decides whether an event is for it (besides its creation time). */
type Subscriber = Pick<WebhookEndpoint, 'domain' | 'eventTypes' | 'accountId'>;

/** Whether any row of `entity` matches `where`: one index entry read, outside any transaction. */
async function anyRow<T extends object>(
  db: Database,
  entity: EntityName<T>,
  where: FilterQuery<T>,
): Promise<boolean> {
  const rows = await db.em().createQueryBuilder(entity).select(raw('1')).where(where).limit(1).execute('all');
  return rows.length > 0;
}

/**
 * Whether `endpoint` takes events like `event`: its domain and one of its types; a port-operations
 * event only from the endpoint's own account.
 */
function subscribes(endpoint: Subscriber, event: { type: string; accountId?: string | null }): boolean {
  const domain = webhookDomainOf(event.type);
  if (!domain || endpoint.domain !== domain || !endpoint.eventTypes.includes(event.type)) return false;
  return domain !== WebhookDomain.PORT_OPS || endpoint.accountId === event.accountId;
}

/** Moves each time this process registers, changes or enables an endpoint (`endpointsChanged`). */
let endpointsGeneration = 0;

/**
 * An endpoint was registered, changed or enabled in this process: every outbox here reads the
 * endpoints afresh before it lets an event wait for the poll. Called before and after the change's
 * transaction, so a dispatch that read the endpoints while it ran is not trusted either.
 */
export function endpointsChanged(): void {
  endpointsGeneration++;
}

/** Delay before attempt `attempt + 1`, after `attempt` failures: base·3^(n-1) ± 20 %. */
export function retryDelayMs(
  baseMs: number,
  failedAttempts: number,
  random: () => number = Math.random,
): number {
  const plain = baseMs * BACKOFF_FACTOR ** (failedAttempts - 1);
  return Math.round(plain * (1 - JITTER + 2 * JITTER * random()));
}

/** The JSON every receiver gets; identical on every attempt of the same event. */
export function webhookBody(event: Pick<EventRecord, 'id' | 'type' | 'occurredAt' | 'payload'>): string {
  return JSON.stringify({
    id: event.id,
    type: event.type,
    created_at: event.occurredAt.toISOString(),
    data: event.payload,
  });
}

interface AttemptResult extends Answer {
  attemptedAt: Date;
  durationMs: number;
}

export type OutboxOptions = Pick<
  AppServices,
  'db' | 'clock' | 'config' | 'logger' | 'secrets' | 'events' | 'metrics' | 'telemetry'
> & {
  /** DNS for receiver hosts; the system resolver unless a test plays DNS. */
  resolve?: Resolver;
};

/**
 * The webhook outbox worker. Two steps, each safe to run in any number of processes at once:
 *
 * 1. dispatch: committed `events` rows not yet dispatched become one `webhook_deliveries` row per
 *    matching endpoint, and the event is marked dispatched — in one transaction, so an event is
 *    fanned out exactly once (PostgreSQL: `FOR UPDATE SKIP LOCKED`; the unique (endpoint, event)
 *    index and a conditional update back it up everywhere). Events marked `relay` (staged by the
 *    CLI) are published to the live bus by the worker whose dispatch committed.
 * 2. deliver: due deliveries are claimed with a lease (token + expiry, taken by a conditional
 *    update); a process that dies mid-flight simply lets its lease expire and the row is retried.
 *    The whole attempt — DNS lookup, connect, answer — ends before the lease does.
 */
export class WebhookOutbox {
  private timer: NodeJS.Timeout | undefined;
  private sweepTimer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private sweeping: Promise<void> | undefined;
  private again = false;
  /**
   * Whether the next turn looks for due deliveries. A publish only adds undispatched events: the
   * deliveries its dispatch creates, a poll (a retry's backoff ends between polls), a finished
   * attempt (a slot frees) and a claim that found some with slots to spare (more may wait) set it.
   * So a write whose events no endpoint subscribes to costs the dispatch alone, not a claim
   * transaction as well.
   */
  private deliveriesDue = true;
  private stopped = false;
  private readonly inFlight = new Set<AbortController>();
  private readonly attempts = new Set<Promise<void>>();
  private results: Array<{ delivery: WebhookDelivery; token: string; result: AttemptResult }> = [];
  private recording: Promise<void> | undefined;
  private readonly http = new WebhookHttp(MAX_IN_FLIGHT);
  /**
   * The active endpoints as the last dispatch read them, and the endpoints' generation then: while
   * it is current, an event none of them takes waits for the next poll (`published`).
   */
  private subscribers: { generation: number; endpoints: Subscriber[] } | undefined;

  constructor(private readonly options: OutboxOptions) {}

  start(): void {
    this.timer = setInterval(() => this.poll(), this.options.config.webhookPollMs);
    this.timer.unref();
    this.sweepTimer = setInterval(() => this.sweep(), RETENTION_SWEEP_MS);
    this.sweepTimer.unref();
    this.sweep();
    this.nudge();
  }

  /** Every WEBHOOK_POLL: undispatched events (another process's) and due deliveries. */
  private poll(): void {
    this.deliveriesDue = true;
    this.nudge();
  }

  /**
   * A committed event reached this process's bus. Dispatched at once when an endpoint may take it
   * (or when the endpoints are not known as they are now); otherwise it waits for the next poll,
   * which dispatches every waiting event in one transaction, rather than costing a transaction of
   * its own after each write. An endpoint registered in another process since the last dispatch
   * here is found by that poll: its first events come at most WEBHOOK_POLL late, never lost.
   */
  published(event: DomainEvent): void {
    const known = this.subscribers;
    if (known?.generation === endpointsGeneration && !known.endpoints.some((e) => subscribes(e, event)))
      return;
    this.nudge();
  }

  /** Runs the worker soon. */
  nudge(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.loop().finally(() => {
      this.running = undefined;
    });
  }

  /** Aborts requests in flight (their leases expire and another worker retries) and waits for the loop. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    if (this.sweepTimer) clearInterval(this.sweepTimer);
    for (const attempt of this.inFlight) attempt.abort(new Error('gateway shutting down'));
    await Promise.all(this.attempts);
    await this.running;
    await this.sweeping;
    while (this.recording) await this.recording;
    this.http.destroy();
  }

  /** Enforces EVENT_RETENTION and forgets previous secrets whose rotation overlap has ended. */
  private sweep(): void {
    if (this.stopped || this.sweeping) return;
    const { db, clock, config, logger } = this.options;
    const now = clock.now();
    this.sweeping = Promise.all([
      purgeExpired(db, new Date(now.getTime() - config.eventRetentionMs)),
      dropExpiredPreviousSecrets(db, now),
    ])
      .then(([purged]) => {
        if (purged.deliveries + purged.events > 0)
          logger.info({ ...purged }, 'purged webhook deliveries and events past EVENT_RETENTION');
      })
      .catch((e: unknown) => logger.error({ err: e }, 'webhook retention sweep failed'))
      .finally(() => {
        this.sweeping = undefined;
      });
  }

  private async loop(): Promise<void> {
    do {
      this.again = false;
      try {
        const { count: dispatched, deliveries } = await this.dispatchEvents();
        let delivered = 0;
        if (this.deliveriesDue || deliveries > 0) {
          this.deliveriesDue = false;
          delivered = await this.deliverDue().catch((e: unknown) => {
            this.deliveriesDue = true;
            throw e;
          });
        }
        if (delivered > 0 && this.attempts.size < MAX_IN_FLIGHT) this.deliveriesDue = true;
        if (dispatched === DISPATCH_BATCH || this.deliveriesDue) this.again = true;
      } catch (e) {
        if (!this.stopped) this.options.logger.error({ err: e }, 'webhook outbox tick failed');
      }
    } while (this.again && !this.stopped);
  }

  /** Turns undispatched events into deliveries and relays CLI-staged ones. Returns how many events it handled. */
  async dispatch(): Promise<number> {
    return (await this.dispatchEvents()).count;
  }

  /** `dispatch`, also saying how many deliveries it created. */
  private async dispatchEvents(): Promise<{ count: number; deliveries: number }> {
    const { db, clock } = this.options;
    // Looked for outside a transaction first: an idle poll takes no lock (on SQLite, the write lock
    // every transaction takes first, which a request's write or the CLI's would wait behind).
    if (!(await anyRow(db, EventRecord, { dispatchedAt: null }))) return { count: 0, deliveries: 0 };
    const { count, deliveries, relayed } = await db.em().transactional(async (tx) => {
      const qb = tx
        .createQueryBuilder(EventRecord)
        .select(['id', 'type', 'accountId', 'occurredAt', 'payload', 'relay'])
        .where({ dispatchedAt: null })
        .orderBy({ occurredAt: 'asc', id: 'asc' })
        .limit(DISPATCH_BATCH);
      if (db.dialect === 'postgresql') qb.setLockMode(LockMode.PESSIMISTIC_PARTIAL_WRITE);
      // Plain rows: only their values are read, and a batch of up to DISPATCH_BATCH entities cost
      // the ORM's hydration (identity map, change tracking) more than the statement.
      const events = plainEntities(tx, EventRecord, await qb.execute('all'));
      if (events.length === 0) return { count: 0, deliveries: 0, relayed: [] };

      const now = clock.now();
      const endpoints = await this.subscribedEndpoints(tx);
      const rows: Array<RequiredEntityData<WebhookDelivery>> = [];
      for (const event of events) {
        for (const endpoint of endpoints) {
          // Endpoints see no events from before they existed.
          if (!subscribes(endpoint, event) || endpoint.createdAt.getTime() > event.occurredAt.getTime())
            continue;
          rows.push({
            id: randomUUID(),
            endpoint: endpoint.id,
            eventId: event.id,
            eventType: event.type,
            status: WebhookDeliveryStatus.PENDING,
            attempts: 0,
            attemptsAtRedelivery: 0,
            nextAttemptAt: now,
            createdAt: now,
          });
        }
      }
      if (rows.length > 0) await tx.insertMany(WebhookDelivery, rows);
      const marked = await tx.nativeUpdate(
        EventRecord,
        { id: { $in: events.map((e) => e.id) }, dispatchedAt: null },
        { dispatchedAt: now },
      );
      // Another worker got there first: roll back, so nothing is fanned out or relayed twice.
      if (marked !== events.length) throw new Error('outbox dispatch raced another worker; retrying');
      return { count: events.length, deliveries: rows.length, relayed: events.filter((e) => e.relay) };
    });
    if (relayed.length > 0) {
      // Committed, and this worker alone dispatched them: publish once, for live subscribers everywhere.
      await this.options.events.publish(
        relayed.map((e): DomainEvent => ({
          id: e.id,
          type: e.type,
          occurredAt: e.occurredAt,
          accountId: e.accountId ?? null,
          payload: e.payload,
        })),
      );
    }
    return { count, deliveries };
  }

  /**
   * Active endpoints that may receive events: liquidity ones only while the account is Professional+.
   * All the active ones are kept for `published` (a plan may change without this process knowing).
   */
  private async subscribedEndpoints(em: EntityManager): Promise<WebhookEndpoint[]> {
    const generation = endpointsGeneration;
    const endpoints = await em.find(WebhookEndpoint, { status: WebhookEndpointStatus.ACTIVE });
    this.subscribers = {
      generation,
      endpoints: endpoints.map(({ domain, eventTypes, accountId }) => ({ domain, eventTypes, accountId })),
    };
    const liquidityAccounts = [
      ...new Set(endpoints.filter((e) => e.domain === WebhookDomain.LIQUIDITY).map((e) => e.accountId)),
    ];
    if (liquidityAccounts.length === 0) return endpoints;
    const accounts = await em.find(Account, { id: { $in: liquidityAccounts } }, { fields: ['id', 'plan'] });
    const entitled = new Set(accounts.filter((a) => planAtLeast(a.plan, Plan.PROFESSIONAL)).map((a) => a.id));
    return endpoints.filter((e) => e.domain !== WebhookDomain.LIQUIDITY || entitled.has(e.accountId));
  }

  /**
   * Claims due deliveries for the free attempt slots, at most MAX_IN_FLIGHT_PER_ENDPOINT per
   * endpoint counting attempts already leased anywhere, and starts them. Returns how many it claimed.
   */
  async deliverDue(): Promise<number> {
    const { db, clock, config } = this.options;
    const capacity = MAX_IN_FLIGHT - this.attempts.size;
    if (capacity <= 0) return 0;
    // The attempt deadline is measured from here, before the claim is written, so it always ends
    // LEASE_MARGIN_MS before the lease does however long the claim and the DNS lookup take.
    const claimStarted = performance.now();
    const now = clock.now();
    const token = randomUUID();
    const claimable = { $or: [{ leaseUntil: null }, { leaseUntil: { $lt: now } }] };
    // As in `dispatchEvents`: no claim transaction while no delivery is due. The claim's other terms
    // (the endpoint active and below its slots) are left to it: this only says whether to look.
    const dueWhere = { status: WebhookDeliveryStatus.PENDING, nextAttemptAt: { $lte: now }, ...claimable };
    if (!(await anyRow(db, WebhookDelivery, dueWhere))) return 0;
    const claimedAny = await db.em().transactional(async (tx) => {
      const leased = await tx.find(
        WebhookDelivery,
        { status: WebhookDeliveryStatus.PENDING, leaseUntil: { $gte: now } },
        { fields: ['endpoint'] },
      );
      const busy = new Map<string, number>();
      for (const d of leased) busy.set(d.endpoint.id, (busy.get(d.endpoint.id) ?? 0) + 1);
      const saturated = [...busy].filter(([, n]) => n >= MAX_IN_FLIGHT_PER_ENDPOINT).map(([id]) => id);
      const qb = tx
        .createQueryBuilder(WebhookDelivery, 'd')
        .select(['d.id', 'd.endpoint'])
        .join('d.endpoint', 'e')
        .where({
          ...dueWhere,
          endpoint: {
            status: WebhookEndpointStatus.ACTIVE,
            ...(saturated.length > 0 ? { id: { $nin: saturated } } : {}),
          },
        })
        .orderBy({ nextAttemptAt: 'asc' })
        .limit(capacity);
      if (db.dialect === 'postgresql') qb.setLockMode(LockMode.PESSIMISTIC_PARTIAL_WRITE, ['d']);
      const due = await qb.execute<Array<{ id: string; endpoint: string }>>('all');
      const chosen = due.filter((d) => {
        const n = busy.get(d.endpoint) ?? 0;
        if (n >= MAX_IN_FLIGHT_PER_ENDPOINT) return false;
        busy.set(d.endpoint, n + 1);
        return true;
      });
      if (chosen.length === 0) return false;
      await tx.nativeUpdate(
        WebhookDelivery,
        { id: { $in: chosen.map((d) => d.id) }, ...claimable },
        {
          leaseToken: token,
          leaseUntil: new Date(now.getTime() + config.webhookTimeoutMs + LEASE_MARGIN_MS),
        },
      );
      return true;
    });
    if (!claimedAny) return 0;
    const em = db.em();
    const claimed = await em.find(WebhookDelivery, { leaseToken: token }, { populate: ['endpoint'] });
    if (claimed.length === 0) return 0;
    const events = await em.find(EventRecord, { id: { $in: claimed.map((d) => d.eventId) } });
    const byId = new Map(events.map((e) => [e.id, e]));
    const deadline = claimStarted + config.webhookTimeoutMs;
    for (const delivery of claimed) {
      const attempt: Promise<void> = this.attempt(delivery, byId.get(delivery.eventId)!, deadline)
        .then((result) => {
          // Shutting down: record nothing; the lease expires and the attempt is made again.
          if (!this.stopped) this.results.push({ delivery, token, result });
          return this.flushResults();
        })
        .finally(() => {
          this.attempts.delete(attempt);
          // A slot is free: claim what waits for it.
          this.deliveriesDue = true;
          this.nudge();
        });
      this.attempts.add(attempt);
    }
    return claimed.length;
  }

  /**
   * Writes finished attempts in one transaction per turn of the event loop: one commit (one fsync
   * on SQLite) for every attempt that finished meanwhile, instead of one each.
   */
  private flushResults(): Promise<void> {
    this.recording ??= (async () => {
      await new Promise((resolve) => setImmediate(resolve));
      while (this.results.length > 0) {
        const batch = this.results.splice(0);
        try {
          await this.options.db.em().transactional(async (tx) => {
            for (const { delivery, token, result } of batch) await this.record(tx, delivery, token, result);
          });
        } catch (e) {
          // The leases expire and the attempts are made again: at-least-once still holds.
          this.options.logger.error({ err: e }, 'could not record webhook attempts');
        }
      }
    })().finally(() => {
      this.recording = undefined;
      // Attempts that finished after the last batch was taken.
      if (this.results.length > 0) void this.flushResults();
    });
    return this.recording;
  }

  /** One attempt, bounded as a whole (DNS lookup included) by `deadline` (a performance.now() time). */
  private async attempt(
    delivery: WebhookDelivery,
    event: EventRecord,
    deadline: number,
  ): Promise<AttemptResult> {
    const { config, clock, secrets } = this.options;
    const endpoint = delivery.endpoint;
    const attemptedAt = clock.now();
    const started = performance.now();
    const controller = new AbortController();
    const timer = setTimeout(
      () => controller.abort(new Error(`no answer within ${config.webhookTimeoutMs} ms`)),
      Math.max(0, deadline - started),
    );
    this.inFlight.add(controller);
    let answer: Answer;
    try {
      const target = await vetWebhookUrl(endpoint.url, config.webhookAllowPrivate, {
        resolve: this.options.resolve,
        signal: controller.signal,
      });
      const body = webhookBody(event);
      const signedAt = clock.now();
      const signing = signingSecrets(secrets, endpoint, signedAt);
      answer = await this.options.telemetry.delivery(
        event,
        {
          'tidegate.event.type': event.type,
          'tidegate.delivery.id': delivery.id,
          'server.address': target.url.host,
        },
        (traceHeaders) =>
          this.http.post(target, body, controller.signal, {
            'content-type': 'application/json',
            'user-agent': 'tidegate-webhooks/1.0',
            'tidegate-event-id': event.id,
            'tidegate-event-type': event.type,
            'tidegate-delivery-id': delivery.id,
            [SIGNATURE_HEADER]: signatureHeader(signing, body, signedAt),
            ...standardWebhookHeaders(signing, event.id, body, signedAt),
            ...traceHeaders,
          }),
        (answer) => answer.statusCode,
      );
    } catch (e) {
      answer = {
        statusCode: null,
        error: isAppError(e) ? `refused: ${e.message}` : (e as Error).message,
        snippet: null,
      };
    } finally {
      clearTimeout(timer);
      this.inFlight.delete(controller);
    }
    return { ...answer, attemptedAt, durationMs: Math.round(performance.now() - started) };
  }

  private async record(
    tx: EntityManager,
    delivery: WebhookDelivery,
    token: string,
    result: AttemptResult,
  ): Promise<void> {
    const { clock, config } = this.options;
    const endpoint = delivery.endpoint;
    const now = clock.now();
    const attempts = delivery.attempts + 1;
    const inBudget = attempts - delivery.attemptsAtRedelivery;
    const ok = result.statusCode !== null && result.statusCode >= 200 && result.statusCode < 300;
    const error = ok ? null : (result.error ?? `HTTP ${result.statusCode}`).slice(0, 500);
    const exhausted = !ok && inBudget >= config.webhookMaxAttempts;
    const updated = await tx.nativeUpdate(
      WebhookDelivery,
      { id: delivery.id, leaseToken: token },
      {
        attempts,
        lastAttemptAt: now,
        lastStatusCode: result.statusCode,
        lastError: error,
        leaseToken: null,
        leaseUntil: null,
        ...(ok
          ? { status: WebhookDeliveryStatus.DELIVERED, deliveredAt: now, nextAttemptAt: null }
          : exhausted
            ? { status: WebhookDeliveryStatus.FAILED, nextAttemptAt: null }
            : { nextAttemptAt: new Date(now.getTime() + retryDelayMs(config.webhookRetryBaseMs, inBudget)) }),
      },
    );
    // Someone re-claimed the row after its lease expired: their attempt and state win.
    if (updated === 0) return;
    this.options.metrics.deliveryAttempt(ok ? 'delivered' : exhausted ? 'failed' : 'retry');
    await tx.insert(WebhookDeliveryAttempt, {
      id: randomUUID(),
      delivery: delivery.id,
      attempt: attempts,
      attemptedAt: result.attemptedAt,
      statusCode: result.statusCode,
      error,
      durationMs: result.durationMs,
      responseSnippet: result.snippet,
    });
    if (ok) {
      await tx.nativeUpdate(
        WebhookEndpoint,
        { id: endpoint.id, consecutiveFailures: { $gt: 0 } },
        { consecutiveFailures: 0 },
      );
    } else if (exhausted) {
      await tx.nativeUpdate(
        WebhookEndpoint,
        { id: endpoint.id, status: WebhookEndpointStatus.ACTIVE },
        {
          status: WebhookEndpointStatus.DISABLED,
          disabledAt: now,
          disabledReason:
            `Disabled after ${inBudget} failed attempts to deliver event ${delivery.eventId} (${delivery.eventType}); last error: ${error}`.slice(
              0,
              500,
            ),
          consecutiveFailures: raw('consecutive_failures + 1'),
        },
      );
    } else {
      await tx.nativeUpdate(
        WebhookEndpoint,
        { id: endpoint.id },
        { consecutiveFailures: raw('consecutive_failures + 1') },
      );
    }
  }
}

/** The backlog a metrics scrape reports: two indexed counts and two minimums. */
export async function outboxSnapshot(db: Database, clock: Clock): Promise<OutboxSnapshot> {
  const em = db.em();
  const [pending, undispatched, oldestDelivery, oldestEvent] = await Promise.all([
    em.count(WebhookDelivery, { status: WebhookDeliveryStatus.PENDING }),
    em.count(EventRecord, { dispatchedAt: null }),
    em.findOne(
      WebhookDelivery,
      { status: WebhookDeliveryStatus.PENDING },
      { fields: ['createdAt'], orderBy: { createdAt: 'asc' } },
    ),
    em.findOne(
      EventRecord,
      { dispatchedAt: null },
      { fields: ['occurredAt'], orderBy: { occurredAt: 'asc' } },
    ),
  ]);
  const oldest = Math.min(
    oldestDelivery?.createdAt.getTime() ?? Infinity,
    oldestEvent?.occurredAt.getTime() ?? Infinity,
  );
  return {
    pending,
    undispatched,
    oldestAgeSeconds: oldest === Infinity ? 0 : Math.max(0, (clock.now().getTime() - oldest) / 1000),
  };
}
