import type { EntityManager } from '@mikro-orm/knex';
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
 * Adds events to the current unit of work so they commit (or roll back) with the change.
 * Call inside the transaction; after it commits, hand the returned events to
 * `services.events.publish(...)` for live delivery.
 *
 *   const events = await em.transactional(async (tx) => { ...change...; return stageEvents(tx, clock, drafts); });
 *   await services.events.publish(events);
 */
export function stageEvents(em: EntityManager, clock: Clock, drafts: EventDraft[]): DomainEvent[] {
  const occurredAt = clock.now();
  return drafts.map((draft) => {
    const record = em.create(EventRecord, {
      type: draft.type,
      occurredAt,
      accountId: draft.accountId ?? null,
      payload: draft.payload,
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
