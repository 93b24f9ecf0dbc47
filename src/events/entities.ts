import { randomUUID } from 'node:crypto';
import { DateTimeType, Entity, Enum, Index, ManyToOne, PrimaryKey, Property, Unique } from '@mikro-orm/core';
import { Field, ID, Int, ObjectType, registerEnumType } from 'type-graphql';
import { WebhookDomain } from './catalog.js';

/**
 * The durable record of a domain event, written in the same transaction as the change that
 * caused it. This table is the webhook outbox: the dispatcher turns each row into one delivery
 * per matching endpoint, so a committed change is never without its webhooks; the live bus is
 * fed after commit.
 */
@Entity({ tableName: 'events' })
@Index({ properties: ['accountId', 'occurredAt'] })
export class EventRecord {
  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  /** e.g. `tier_change`, `port_call.status_changed`. */
  @Property({ type: 'string', length: 64 })
  type!: string;

  @Property({ type: DateTimeType, index: true })
  occurredAt!: Date;

  /** The tenant the event belongs to; null for market-wide events (liquidity scores). */
  @Property({ type: 'uuid', nullable: true })
  accountId?: string | null;

  @Property({ type: 'json' })
  payload!: Record<string, unknown>;

  /** When the outbox dispatcher created this event's webhook deliveries; null = not yet. */
  @Property({ type: DateTimeType, nullable: true, index: true })
  dispatchedAt?: Date | null;

  /**
   * Staged by a process with no live bus (the CLI): the outbox worker that dispatches the event
   * also publishes it to the bus, so subscribers on running servers see it. See `stage.ts`.
   */
  @Property({ type: 'boolean' })
  relay = false;

  /** W3C `traceparent` of the span that staged the event (tracing on only): deliveries continue that trace. */
  @Property({ type: 'string', length: 55, nullable: true })
  traceparent?: string | null;
}

export enum WebhookEndpointStatus {
  ACTIVE = 'ACTIVE',
  DISABLED = 'DISABLED',
}
registerEnumType(WebhookEndpointStatus, { name: 'WebhookEndpointStatus' });

export enum WebhookDeliveryStatus {
  PENDING = 'PENDING',
  DELIVERED = 'DELIVERED',
  FAILED = 'FAILED',
}
registerEnumType(WebhookDeliveryStatus, {
  name: 'WebhookDeliveryStatus',
  description: 'PENDING (queued or retrying), DELIVERED (a 2xx answer), FAILED (every attempt failed).',
});

@ObjectType({ description: 'A URL that receives signed webhook deliveries for chosen event types.' })
@Entity({ tableName: 'webhook_endpoints' })
@Index({ properties: ['accountId', 'domain'] })
export class WebhookEndpoint {
  @Field(() => ID)
  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @Property({ type: 'uuid' })
  accountId!: string;

  @Field(() => WebhookDomain)
  @Enum({ items: () => WebhookDomain })
  domain!: WebhookDomain;

  @Field(() => String)
  @Property({ type: 'string', length: 2048 })
  url!: string;

  @Field(() => String, { nullable: true })
  @Property({ type: 'string', length: 200, nullable: true })
  description?: string | null;

  @Field(() => [String])
  @Property({ type: 'json' })
  eventTypes: string[] = [];

  /**
   * The signing secret, sealed with the secret box (`sb1.…`): every delivery must compute an HMAC
   * with it, so it cannot be a hash. Never returned after creation. See `secrets.ts`.
   */
  @Property({ type: 'string', length: 128, hidden: true })
  secret!: string;

  /** The secret before the last rotation (sealed), still signed with until previousSecretExpiresAt. */
  @Property({ type: 'string', length: 255, nullable: true, hidden: true })
  previousSecret?: string | null;

  @Field(() => Date, {
    nullable: true,
    description:
      'Until then deliveries carry a second v1 signature made with the secret before the last rotation.',
  })
  @Property({ type: DateTimeType, nullable: true })
  previousSecretExpiresAt?: Date | null;

  @Field(() => String, { description: 'The first characters of the signing secret, to tell secrets apart.' })
  @Property({ type: 'string', length: 16 })
  secretPrefix!: string;

  @Field(() => WebhookEndpointStatus)
  @Enum({ items: () => WebhookEndpointStatus })
  status: WebhookEndpointStatus = WebhookEndpointStatus.ACTIVE;

  @Field(() => String, {
    nullable: true,
    description: 'Why the endpoint was disabled (set by the deliverer).',
  })
  @Property({ type: 'string', length: 500, nullable: true })
  disabledReason?: string | null;

  @Field(() => Date, { nullable: true })
  @Property({ type: DateTimeType, nullable: true })
  disabledAt?: Date | null;

  @Field(() => Int, { description: 'Failed attempts since the last successful delivery.' })
  @Property({ type: 'integer' })
  consecutiveFailures = 0;

  @Field(() => Date)
  @Property({ type: DateTimeType })
  createdAt!: Date;
}

@ObjectType({
  description: 'One event on its way to one endpoint: the delivery log entry, with its retries.',
})
@Entity({ tableName: 'webhook_deliveries' })
@Unique({ properties: ['endpoint', 'eventId'] })
@Index({ properties: ['status', 'nextAttemptAt'] })
@Index({ properties: ['status', 'lastAttemptAt'] })
@Index({ properties: ['leaseUntil'] })
export class WebhookDelivery {
  @Field(() => ID)
  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @ManyToOne({ entity: () => WebhookEndpoint, deleteRule: 'cascade' })
  endpoint!: WebhookEndpoint;

  @Field(() => ID, {
    description: 'The event id: the `id` of the payload, stable across retries and redeliveries.',
  })
  @Property({ type: 'uuid' })
  eventId!: string;

  @Field(() => String)
  @Property({ type: 'string', length: 64 })
  eventType!: string;

  @Field(() => WebhookDeliveryStatus)
  @Enum({ items: () => WebhookDeliveryStatus })
  status: WebhookDeliveryStatus = WebhookDeliveryStatus.PENDING;

  @Field(() => Int, { description: 'Attempts made so far, redeliveries included (see attemptLog).' })
  @Property({ type: 'integer' })
  attempts = 0;

  /** `attempts` when the delivery was last redelivered: the current attempt budget counts from here. */
  @Property({ type: 'integer' })
  attemptsAtRedelivery = 0;

  @Field(() => Date, { nullable: true, description: 'When the next attempt is due (PENDING only).' })
  @Property({ type: DateTimeType, nullable: true })
  nextAttemptAt?: Date | null;

  @Field(() => Date, { nullable: true })
  @Property({ type: DateTimeType, nullable: true })
  lastAttemptAt?: Date | null;

  @Field(() => Int, {
    nullable: true,
    description: 'HTTP status of the last attempt; null when no answer came.',
  })
  @Property({ type: 'integer', nullable: true })
  lastStatusCode?: number | null;

  @Field(() => String, { nullable: true })
  @Property({ type: 'string', length: 500, nullable: true })
  lastError?: string | null;

  @Field(() => Date, { nullable: true })
  @Property({ type: DateTimeType, nullable: true })
  deliveredAt?: Date | null;

  /** A worker's claim: only the holder of this token delivers until leaseUntil. */
  @Property({ type: 'uuid', nullable: true })
  leaseToken?: string | null;

  @Property({ type: DateTimeType, nullable: true })
  leaseUntil?: Date | null;

  @Field(() => Date)
  @Property({ type: DateTimeType })
  createdAt!: Date;
}

/** How much of a receiver's response body is kept; the rest is never read. */
export const RESPONSE_SNIPPET_BYTES = 1024;

@ObjectType({ description: 'One HTTP attempt of a delivery, kept for the delivery log.' })
@Entity({ tableName: 'webhook_delivery_attempts' })
@Unique({ properties: ['delivery', 'attempt'] })
export class WebhookDeliveryAttempt {
  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @ManyToOne({ entity: () => WebhookDelivery, deleteRule: 'cascade' })
  delivery!: WebhookDelivery;

  @Field(() => Int, { description: '1 for the first attempt; redeliveries continue the count.' })
  @Property({ type: 'integer' })
  attempt!: number;

  @Field(() => Date)
  @Property({ type: DateTimeType })
  attemptedAt!: Date;

  @Field(() => Int, { nullable: true, description: 'HTTP status; null when no answer came.' })
  @Property({ type: 'integer', nullable: true })
  statusCode?: number | null;

  @Field(() => String, { nullable: true, description: 'Why the attempt failed; null when it succeeded.' })
  @Property({ type: 'string', length: 500, nullable: true })
  error?: string | null;

  @Field(() => Int, { description: 'From the start of the attempt (DNS lookup included) to its answer.' })
  @Property({ type: 'integer' })
  durationMs!: number;

  @Field(() => String, {
    nullable: true,
    description: `The start of the response body (at most ${RESPONSE_SNIPPET_BYTES} bytes).`,
  })
  @Property({ type: 'text', nullable: true })
  responseSnippet?: string | null;
}

export const eventEntities = [EventRecord, WebhookEndpoint, WebhookDelivery, WebhookDeliveryAttempt];
