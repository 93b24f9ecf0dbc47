import type { EntityManager } from '@mikro-orm/knex';
import type { Clock } from '../kernel/clock.js';
import { traceparentOf } from '../kernel/trace-context.js';
import type { DomainEvent, EventPublisher } from '../kernel/events.js';
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
 *   const events = await em.transactional(async (tx) => { ...change...; return stageEvents(tx, deps, drafts); });
 *   await deps.events.publish(events);
 */
export function stageEvents(
  em: EntityManager,
  deps: { clock: Clock; events: EventPublisher },
  drafts: EventDraft[],
): DomainEvent[] {
  const occurredAt = deps.clock.now();
  // A live publisher publishes these after commit; otherwise (the CLI) the outbox worker relays them.
  const relay = !deps.events.live;
  // The trace of the staging request, kept with the event for whichever process delivers it.
  // Tracing off, no span is ever active: the lookup finds none and the column stays null.
  const traceparent = traceparentOf();
  return drafts.map((draft) => {
    const record = em.create(EventRecord, {
      type: draft.type,
      occurredAt,
      accountId: draft.accountId ?? null,
      payload: draft.payload,
      relay,
      traceparent,
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
