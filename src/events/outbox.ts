import { randomUUID } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import { LockMode, raw, type RequiredEntityData } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/knex';
import type { FastifyBaseLogger } from 'fastify';
import { Account } from '../accounts/entities.js';
import type { Config } from '../config.js';
import type { Database } from '../db/orm.js';
import type { Clock } from '../kernel/clock.js';
import { isAppError } from '../kernel/errors.js';
import { Plan, planAtLeast } from '../kernel/plans.js';
import { WebhookDomain, webhookDomainOf } from './catalog.js';
import {
  EventRecord,
  WebhookDelivery,
  WebhookDeliveryStatus,
  WebhookEndpoint,
  WebhookEndpointStatus,
} from './entities.js';
import { SIGNATURE_HEADER, signatureHeader } from './signature.js';
import { vetWebhookUrl, type VettedTarget } from './ssrf.js';

const DISPATCH_BATCH = 200;
/** Attempts in flight per process; a slow receiver holds one slot, not the whole worker. */
const MAX_IN_FLIGHT = 32;
/** Each retry waits this many times longer than the one before. */
const BACKOFF_FACTOR = 3;
const JITTER = 0.2;

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

interface AttemptResult {
  statusCode: number | null;
  error: string | null;
}

export interface OutboxOptions {
  db: Database;
  clock: Clock;
  config: Config;
  logger: FastifyBaseLogger;
}

/**
 * The webhook outbox worker. Two steps, each safe to run in any number of processes at once:
 *
 * 1. dispatch: committed `events` rows not yet dispatched become one `webhook_deliveries` row per
 *    matching endpoint, and the event is marked dispatched — in one transaction, so an event is
 *    fanned out exactly once (PostgreSQL: `FOR UPDATE SKIP LOCKED`; the unique (endpoint, event)
 *    index backs it up everywhere).
 * 2. deliver: due deliveries are claimed with a lease (token + expiry, taken by a conditional
 *    update); a process that dies mid-flight simply lets its lease expire and the row is retried.
 */
export class WebhookOutbox {
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  private stopped = false;
  private readonly inFlight = new Set<http.ClientRequest>();
  private readonly attempts = new Set<Promise<void>>();
  private results: Array<{ delivery: WebhookDelivery; token: string; result: AttemptResult }> = [];
  private recording: Promise<void> | undefined;
  private readonly httpAgent = new http.Agent({ keepAlive: true, maxSockets: MAX_IN_FLIGHT });
  private readonly httpsAgent = new https.Agent({ keepAlive: true, maxSockets: MAX_IN_FLIGHT });

  constructor(private readonly options: OutboxOptions) {}

  private get leaseMs(): number {
    return this.options.config.webhookTimeoutMs + 5_000;
  }

  start(): void {
    this.timer = setInterval(() => this.nudge(), this.options.config.webhookPollMs);
    this.timer.unref();
    this.nudge();
  }

  /** Runs the worker soon; called when this process publishes webhook-worthy events. */
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
    for (const request of this.inFlight) request.destroy(new Error('gateway shutting down'));
    await Promise.all(this.attempts);
    await this.running;
    while (this.recording) await this.recording;
    this.httpAgent.destroy();
    this.httpsAgent.destroy();
  }

  private async loop(): Promise<void> {
    do {
      this.again = false;
      try {
        const dispatched = await this.dispatch();
        const delivered = await this.deliverDue();
        if (dispatched === DISPATCH_BATCH || (delivered > 0 && this.attempts.size < MAX_IN_FLIGHT))
          this.again = true;
      } catch (e) {
        if (!this.stopped) this.options.logger.error({ err: e }, 'webhook outbox tick failed');
      }
    } while (this.again && !this.stopped);
  }

  /** Turns undispatched events into deliveries. Returns how many events it handled. */
  async dispatch(): Promise<number> {
    const { db, clock } = this.options;
    return db.em().transactional(async (tx) => {
      const qb = tx
        .createQueryBuilder(EventRecord)
        .select(['id', 'type', 'accountId', 'occurredAt'])
        .where({ dispatchedAt: null })
        .orderBy({ occurredAt: 'asc', id: 'asc' })
        .limit(DISPATCH_BATCH);
      if (db.dialect === 'postgresql') qb.setLockMode(LockMode.PESSIMISTIC_PARTIAL_WRITE);
      const events = await qb.getResult();
      if (events.length === 0) return 0;

      const now = clock.now();
      const endpoints = await this.subscribedEndpoints(tx);
      const rows: Array<RequiredEntityData<WebhookDelivery>> = [];
      for (const event of events) {
        const domain = webhookDomainOf(event.type);
        if (!domain) continue;
        for (const endpoint of endpoints) {
          if (endpoint.domain !== domain || !endpoint.eventTypes.includes(event.type)) continue;
          // Port-ops events go to their tenant only; endpoints see no events from before they existed.
          if (domain === WebhookDomain.PORT_OPS && endpoint.accountId !== event.accountId) continue;
          if (endpoint.createdAt.getTime() > event.occurredAt.getTime()) continue;
          rows.push({
            id: randomUUID(),
            endpoint: endpoint.id,
            eventId: event.id,
            eventType: event.type,
            status: WebhookDeliveryStatus.PENDING,
            attempts: 0,
            nextAttemptAt: now,
            createdAt: now,
          });
        }
      }
      if (rows.length > 0) await tx.insertMany(WebhookDelivery, rows);
      await tx.nativeUpdate(EventRecord, { id: { $in: events.map((e) => e.id) } }, { dispatchedAt: now });
      return events.length;
    });
  }

  /** Active endpoints that may receive events: liquidity ones only while the account is Professional+. */
  private async subscribedEndpoints(em: EntityManager): Promise<WebhookEndpoint[]> {
    const endpoints = await em.find(WebhookEndpoint, { status: WebhookEndpointStatus.ACTIVE });
    const liquidityAccounts = [
      ...new Set(endpoints.filter((e) => e.domain === WebhookDomain.LIQUIDITY).map((e) => e.accountId)),
    ];
    if (liquidityAccounts.length === 0) return endpoints;
    const accounts = await em.find(Account, { id: { $in: liquidityAccounts } }, { fields: ['id', 'plan'] });
    const entitled = new Set(accounts.filter((a) => planAtLeast(a.plan, Plan.PROFESSIONAL)).map((a) => a.id));
    return endpoints.filter((e) => e.domain !== WebhookDomain.LIQUIDITY || entitled.has(e.accountId));
  }

  /** Claims due deliveries for the free attempt slots and starts them. Returns how many it claimed. */
  async deliverDue(): Promise<number> {
    const { db, clock } = this.options;
    const capacity = MAX_IN_FLIGHT - this.attempts.size;
    if (capacity <= 0) return 0;
    const now = clock.now();
    const token = randomUUID();
    const claimable = { $or: [{ leaseUntil: null }, { leaseUntil: { $lt: now } }] };
    await db.em().transactional(async (tx) => {
      const qb = tx
        .createQueryBuilder(WebhookDelivery, 'd')
        .select('d.id')
        .join('d.endpoint', 'e')
        .where({
          status: WebhookDeliveryStatus.PENDING,
          nextAttemptAt: { $lte: now },
          ...claimable,
          endpoint: { status: WebhookEndpointStatus.ACTIVE },
        })
        .orderBy({ nextAttemptAt: 'asc' })
        .limit(capacity);
      if (db.dialect === 'postgresql') qb.setLockMode(LockMode.PESSIMISTIC_PARTIAL_WRITE, ['d']);
      const due = await qb.getResult();
      if (due.length === 0) return;
      await tx.nativeUpdate(
        WebhookDelivery,
        { id: { $in: due.map((d) => d.id) }, ...claimable },
        { leaseToken: token, leaseUntil: new Date(now.getTime() + this.leaseMs) },
      );
    });
    const em = db.em();
    const claimed = await em.find(WebhookDelivery, { leaseToken: token }, { populate: ['endpoint'] });
    if (claimed.length === 0) return 0;
    const events = await em.find(EventRecord, { id: { $in: claimed.map((d) => d.eventId) } });
    const byId = new Map(events.map((e) => [e.id, e]));
    for (const delivery of claimed) {
      const attempt: Promise<void> = this.attempt(delivery, byId.get(delivery.eventId)!)
        .then((result) => {
          // Shutting down: record nothing; the lease expires and the attempt is made again.
          if (!this.stopped) this.results.push({ delivery, token, result });
          return this.flushResults();
        })
        .finally(() => {
          this.attempts.delete(attempt);
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

  private async attempt(delivery: WebhookDelivery, event: EventRecord): Promise<AttemptResult> {
    const { config, clock } = this.options;
    const endpoint = delivery.endpoint;
    try {
      const target = await vetWebhookUrl(endpoint.url, config.webhookAllowPrivate);
      const body = webhookBody(event);
      return await this.post(target, body, {
        'content-type': 'application/json',
        'user-agent': 'tidegate-webhooks/1.0',
        'tidegate-event-id': event.id,
        'tidegate-event-type': event.type,
        'tidegate-delivery-id': delivery.id,
        [SIGNATURE_HEADER]: signatureHeader(endpoint.secret, body, clock.now()),
      });
    } catch (e) {
      return { statusCode: null, error: isAppError(e) ? `refused: ${e.message}` : (e as Error).message };
    }
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
    const ok = result.statusCode !== null && result.statusCode >= 200 && result.statusCode < 300;
    const error = ok ? null : (result.error ?? `HTTP ${result.statusCode}`).slice(0, 500);
    const exhausted = !ok && attempts >= config.webhookMaxAttempts;
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
            : { nextAttemptAt: new Date(now.getTime() + retryDelayMs(config.webhookRetryBaseMs, attempts)) }),
      },
    );
    // Someone redelivered or re-claimed the row meanwhile: their state wins.
    if (updated === 0) return;
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
            `Disabled after ${attempts} failed attempts to deliver event ${delivery.eventId} (${delivery.eventType}); last error: ${error}`.slice(
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

  /** POSTs to the vetted address (never a fresh DNS answer); any answer within the timeout counts. */
  private post(target: VettedTarget, body: string, headers: Record<string, string>): Promise<AttemptResult> {
    const timeoutMs = this.options.config.webhookTimeoutMs;
    const pinned: LookupFunction = (_hostname, options, callback) => {
      if (options.all) callback(null, [{ address: target.address, family: target.family }]);
      else callback(null, target.address, target.family);
    };
    const https_ = target.url.protocol === 'https:';
    return new Promise((resolve) => {
      const request = (https_ ? https : http).request(target.url, {
        method: 'POST',
        headers: { ...headers, 'content-length': Buffer.byteLength(body) },
        lookup: pinned,
        agent: https_ ? this.httpsAgent : this.httpAgent,
      });
      this.inFlight.add(request);
      const timer = setTimeout(
        () => request.destroy(new Error(`no answer within ${timeoutMs} ms`)),
        timeoutMs,
      );
      const done = (result: AttemptResult) => {
        clearTimeout(timer);
        this.inFlight.delete(request);
        resolve(result);
      };
      request.on('response', (response) => {
        // The body is not read: receivers are told only the status code matters.
        response.resume();
        done({ statusCode: response.statusCode ?? null, error: null });
      });
      request.on('error', (e) => done({ statusCode: null, error: e.message }));
      request.end(body);
    });
  }
}
