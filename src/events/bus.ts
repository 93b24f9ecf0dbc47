import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../config.js';
import type { DomainEvent, EventBus, EventListener } from '../kernel/events.js';

export type { EventBus, EventListener } from '../kernel/events.js';

/** Delivers to the listeners of this process only. */
export class LocalEventBus implements EventBus {
  readonly live = true;
  private readonly listeners = new Set<EventListener>();

  constructor(private readonly logger?: FastifyBaseLogger) {}

  async publish(events: DomainEvent[]): Promise<void> {
    this.deliverLocally(events);
  }

  /** Runs every listener for every event; a failing listener never stops the others. */
  deliverLocally(events: DomainEvent[]): void {
    for (const event of events) {
      for (const listener of this.listeners) {
        try {
          listener(event);
        } catch (e) {
          this.logger?.error({ err: e, eventType: event.type }, 'event listener failed');
        }
      }
    }
  }

  subscribe(listener: EventListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  get listenerCount(): number {
    return this.listeners.size;
  }

  async close(): Promise<void> {
    this.listeners.clear();
  }
}

/** How long a PUBLISH may go unanswered before it is logged as failed (Redis down or unreachable). */
const PUBLISH_TIMEOUT_MS = 2_000;

interface WireMessage {
  origin: string;
  events: Array<Omit<DomainEvent, 'occurredAt'> & { occurredAt: string }>;
}

/**
 * Redis pub/sub fan-out. Local listeners get events at once (no round trip, and still when Redis
 * is briefly down); other processes get them through the channel and skip their own messages.
 * Pub/sub is fire-and-forget: live feeds may miss events while a process is disconnected, which
 * is why webhooks work from the durable `events` table, not from the bus. `publish` never waits for
 * Redis; a PUBLISH refused or not answered within PUBLISH_TIMEOUT_MS is logged.
 */
export class RedisEventBus implements EventBus {
  readonly live = true;
  private readonly local: LocalEventBus;
  private readonly origin = randomUUID();
  private readonly publisher: Redis;
  private readonly subscriber: Redis;
  private readonly channel: string;

  private constructor(
    url: string,
    prefix: string,
    private readonly logger: FastifyBaseLogger,
  ) {
    this.local = new LocalEventBus(logger);
    this.channel = `${prefix}:events`;
    this.publisher = new Redis(url, {
      lazyConnect: true,
      maxRetriesPerRequest: 2,
      commandTimeout: PUBLISH_TIMEOUT_MS,
    });
    this.subscriber = new Redis(url, { lazyConnect: true });
    for (const client of [this.publisher, this.subscriber]) {
      client.on('error', (e: Error) => logger.warn({ err: e }, 'redis event bus connection error'));
    }
    this.subscriber.on('message', (_channel: string, raw: string) => this.receive(raw));
  }

  static async connect(url: string, prefix: string, logger: FastifyBaseLogger): Promise<RedisEventBus> {
    const bus = new RedisEventBus(url, prefix, logger);
    await bus.publisher.connect();
    await bus.subscriber.connect();
    await bus.subscriber.subscribe(bus.channel);
    return bus;
  }

  async publish(events: DomainEvent[]): Promise<void> {
    if (events.length === 0) return;
    this.local.deliverLocally(events);
    const message: WireMessage = {
      origin: this.origin,
      events: events.map((e) => ({ ...e, occurredAt: e.occurredAt.toISOString() })),
    };
    // Not awaited: the change is committed and its webhooks are in the outbox, so the request that
    // made it must not wait on Redis (during an outage ioredis queues commands, and every response
    // that publishes would wait with them). One connection keeps the commands in order.
    this.publisher.publish(this.channel, JSON.stringify(message)).catch((e: unknown) => {
      // A timed-out PUBLISH may still go out once Redis answers again; a refused one never does.
      this.logger.error(
        { err: e, eventIds: events.map((event) => event.id) },
        "could not publish events to redis; other processes' live feeds may miss them",
      );
    });
  }

  private receive(raw: string): void {
    let message: WireMessage;
    try {
      message = JSON.parse(raw) as WireMessage;
    } catch {
      return;
    }
    if (message.origin === this.origin || !Array.isArray(message.events)) return;
    this.local.deliverLocally(message.events.map((e) => ({ ...e, occurredAt: new Date(e.occurredAt) })));
  }

  subscribe(listener: EventListener): () => void {
    return this.local.subscribe(listener);
  }

  deliverLocally(events: DomainEvent[]): void {
    this.local.deliverLocally(events);
  }

  get listenerCount(): number {
    return this.local.listenerCount;
  }

  async close(): Promise<void> {
    await this.local.close();
    this.subscriber.disconnect();
    await this.publisher.quit().catch(() => this.publisher.disconnect());
  }
}

/** The bus of one gateway process: across processes through Redis when `REDIS_URL` is set. */
export async function createEventBus(
  config: Pick<Config, 'redisUrl' | 'redisPrefix'>,
  logger: FastifyBaseLogger,
): Promise<EventBus> {
  const { redisUrl, redisPrefix } = config;
  return redisUrl ? RedisEventBus.connect(redisUrl, redisPrefix, logger) : new LocalEventBus(logger);
}
