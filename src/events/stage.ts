import type { EntityManager } from '@mikro-orm/knex';
import type { Database } from '../db/orm.js';
import type { Clock } from '../kernel/clock.js';
import type { DomainEvent } from '../gateway/context.js';
import { EventRecord } from './entities.js';

export interface EventDraft {
  type: string;
  /** Tenant the event belongs to (port-ops); omit for market-wide liquidity events. */
  accountId?: string | null;
  payload: Record<string, unknown>;
}

/**
 * Databases (ORM configurations) through which a running server stages events: that server
 * publishes them to its live bus after commit. Events staged through any other connection — the
 * CLI, scripts — have no bus to go to, so they are marked `relay` and the outbox worker that
 * dispatches them publishes them instead (see `WebhookOutbox.dispatch`).
 */
const publishingLive = new WeakSet<object>();

/** Called by the events module when it installs a live bus for the server using `db`. */
export function publishesLive(db: Database): void {
  publishingLive.add(db.orm.config);
}

/**
 * Adds events to the current unit of work so they commit (or roll back) with the change.
 * Call inside the transaction; after it commits, hand the returned events to
 * `services.events.publish(...)` for live delivery.
 *
 *   const events = await em.transactional(async (tx) => { ...change...; return stageEvents(tx, clock, drafts); });
 *   await services.events.publish(events);
 */
export function stageEvents(em: EntityManager, clock: Clock, drafts: EventDraft[]): DomainEvent[] {
  const occurredAt = clock.now();
  const relay = !publishingLive.has(em.config);
  return drafts.map((draft) => {
    const record = em.create(EventRecord, {
      type: draft.type,
      occurredAt,
      accountId: draft.accountId ?? null,
      payload: draft.payload,
      relay,
    });
    em.persist(record);
    return {
      id: record.id,
      type: record.type,
      occurredAt,
      accountId: record.accountId ?? null,
      payload: record.payload,
    };
  });
}
