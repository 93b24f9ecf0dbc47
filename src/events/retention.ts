import type { Database } from '../db/orm.js';
import { EventRecord, WebhookDelivery, WebhookDeliveryStatus, WebhookEndpoint } from './entities.js';

/** Rows deleted per statement, so a large backlog never holds a long lock. */
const PURGE_BATCH = 1000;

const FINISHED = [WebhookDeliveryStatus.DELIVERED, WebhookDeliveryStatus.FAILED];

export interface PurgeResult {
  cutoff: Date;
  deliveries: number;
  events: number;
}

/**
 * Deletes what is older than `cutoff` and finished with:
 * - deliveries that are DELIVERED or FAILED and whose last attempt was before the cutoff (their
 *   attempt log goes with them);
 * - events dispatched before the cutoff that no delivery refers to any more.
 * A PENDING delivery (queued, retrying, or waiting for its endpoint to be enabled) is never
 * deleted, and neither is its event nor an event not yet dispatched. Safe to run in several
 * processes at once: each delete repeats its conditions.
 */
export async function purgeExpired(db: Database, cutoff: Date): Promise<PurgeResult> {
  const em = db.em();
  const finishedBefore = { status: { $in: FINISHED }, lastAttemptAt: { $lt: cutoff } };
  let deliveries = 0;
  for (;;) {
    const batch = await em.find(WebhookDelivery, finishedBefore, { fields: ['id'], limit: PURGE_BATCH });
    if (batch.length === 0) break;
    deliveries += await em.nativeDelete(WebhookDelivery, {
      id: { $in: batch.map((d) => d.id) },
      ...finishedBefore,
    });
    if (batch.length < PURGE_BATCH) break;
  }

  let events = 0;
  for (;;) {
    const batch = await em
      .createQueryBuilder(EventRecord, 'e')
      .select('e.id')
      .where({ occurredAt: { $lt: cutoff }, dispatchedAt: { $ne: null } })
      .andWhere('not exists (select 1 from webhook_deliveries d where d.event_id = e.id)')
      .limit(PURGE_BATCH)
      .getResult();
    if (batch.length === 0) break;
    // A dispatched event gets no new deliveries, so "no delivery refers to it" still holds here.
    events += await em.nativeDelete(EventRecord, { id: { $in: batch.map((e) => e.id) } });
    if (batch.length < PURGE_BATCH) break;
  }
  return { cutoff, deliveries, events };
}

/** Forgets previous signing secrets whose rotation overlap has ended (they are no longer used to sign). */
export async function dropExpiredPreviousSecrets(db: Database, now: Date): Promise<number> {
  return db
    .em()
    .nativeUpdate(
      WebhookEndpoint,
      { previousSecretExpiresAt: { $lte: now } },
      { previousSecret: null, previousSecretExpiresAt: null },
    );
}
