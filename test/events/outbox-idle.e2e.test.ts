import { randomUUID } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { EventRecord } from '../../src/events/entities.js';
import { WebhookOutbox } from '../../src/events/outbox.js';
import { holdSqliteWriteLock } from '../helpers/db.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/*
 * An idle outbox takes no lock: each poll looks for undispatched events and due deliveries outside
 * a transaction and opens one (on SQLite, taking the write lock first) only when there is work. The
 * other writer holds SQLite's write lock from a worker thread (`holdSqliteWriteLock`).
 */

describe('an idle webhook outbox on SQLite', () => {
  let server: TestServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it('polls without waiting for the write lock another connection holds, and dispatches what it committed', async () => {
    // The server's own outbox polls only at start: the event below is left to the outbox under test.
    server = await startTestServer({ dialect: 'sqlite', env: { WEBHOOK_POLL: '1h' } });
    const outbox = new WebhookOutbox({ ...server.app.services });
    // Whatever the start left waiting, dispatched first: the outbox is idle from here.
    while ((await outbox.dispatch()) > 0);

    const eventId = randomUUID();
    // Another connection takes the write lock, writes an event (seen by others once it commits)
    // and holds the lock for 2 s.
    const { done } = await holdSqliteWriteLock(
      server.database.url,
      "insert into events (id, type, occurred_at, account_id, payload, relay) values (?, 'tier_change', ?, null, '{}', 0)",
      [eventId, Date.now()],
      2_000,
    );
    const dispatched = await outbox.dispatch();
    const claimed = await outbox.deliverDue();
    const pollEndedAt = Date.now();
    const committedAt = await done;
    // Nothing was waiting that this connection could see: the poll ended while the lock was held,
    // where a transaction would have waited for the commit.
    expect({ dispatched, claimed }).toEqual({ dispatched: 0, claimed: 0 });
    expect(pollEndedAt).toBeLessThan(committedAt);

    // Committed, the event is found and dispatched by the next poll.
    expect(await outbox.dispatch()).toBe(1);
    const event = await server.database.db.em().findOneOrFail(EventRecord, { id: eventId });
    expect(event.dispatchedAt).toBeInstanceOf(Date);
  });
});
