import type { EntityManager } from '@mikro-orm/knex';
import {
  preparedInserts,
  preparedUpdateWithInserts,
  type InsertBatch,
  type UpdateStep,
} from '../db/prepared.js';
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
 * Writes the events in the caller's transaction (by prepared statement, `preparedInserts` in
 * src/db/prepared.ts), so they commit (or roll back) with the change. Call inside the transaction;
 * after it commits, hand the returned events to `services.events.publish(...)` for live delivery.
 * `rows`, the change's own rows not yet written (a new order and its history row), are written
 * first, in the same round trip where the database allows (`preparedInserts`), and so is
 * `guarded`, the change's own guarded update (an order's move), before them
 * (`preparedUpdateWithInserts`).
 *
 *   const events = await em.transactional(async (tx) => { ...change...; return stageEvents(tx, deps, drafts); });
 *   await deps.events.publish(events);
 */
export async function stageEvents(
  em: EntityManager,
  deps: { clock: Clock; events: EventPublisher },
  drafts: EventDraft[],
  rows: readonly InsertBatch[] = [],
  guarded?: GuardedUpdate,
): Promise<DomainEvent[]> {
  if (drafts.length === 0) {
    await writeRows(em, rows, guarded);
    return [];
  }
  const { records, events } = eventRecords(deps, drafts);
  await writeRows(em, [...rows, { entity: EventRecord, items: records }], guarded);
  return events;
}

/**
 * The rows of `drafts` as `stageEvents` writes them, not yet written, and the events to publish once
 * they have committed: for a change that writes its rows itself (`commitUnderCall`).
 */
export function eventRecords(
  deps: { clock: Clock; events: EventPublisher },
  drafts: readonly EventDraft[],
): { records: EventRecord[]; events: DomainEvent[] } {
  const occurredAt = deps.clock.now();
  // A live publisher publishes these after commit; otherwise (the CLI) the outbox worker relays them.
  const relay = !deps.events.live;
  // The trace of the staging request, kept with the event for whichever process delivers it.
  // Tracing off, no span is ever active: the lookup finds none and the column stays null.
  const traceparent = traceparentOf();
  const records = drafts.map((draft) =>
    Object.assign(new EventRecord(), {
      type: draft.type,
      occurredAt,
      accountId: draft.accountId ?? null,
      payload: draft.payload,
      relay,
      traceparent,
    }),
  );
  const events = records.map((record) => ({
    id: record.id,
    type: record.type,
    occurredAt,
    accountId: record.accountId ?? null,
    payload: record.payload,
  }));
  return { records, events };
}

/** An update a change expects to match exactly one row, and the error when it matches none. */
export interface GuardedUpdate {
  update: UpdateStep;
  refused: () => Error;
}

async function writeRows(
  em: EntityManager,
  rows: readonly InsertBatch[],
  guarded: GuardedUpdate | undefined,
): Promise<void> {
  if (!guarded) return preparedInserts(em, rows);
  if ((await preparedUpdateWithInserts(em, guarded.update, rows)) !== 1) throw guarded.refused();
}
