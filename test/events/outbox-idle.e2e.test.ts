import { randomUUID } from 'node:crypto';
import { Worker } from 'node:worker_threads';
import { afterEach, describe, expect, it } from 'vitest';
import { EventRecord } from '../../src/events/entities.js';
import { WebhookOutbox } from '../../src/events/outbox.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/*
 * An idle outbox takes no lock: each poll looks for undispatched events and due deliveries outside
 * a transaction and opens one (on SQLite, taking the write lock first) only when there is work. The
 * other writer is a worker thread holding SQLite's write lock, as in test/db/write-lock.e2e.test.ts:
 * its wait does not depend on the test's event loop, which the gateway's shares.
 */

/**
 * Another connection that takes the write lock, writes an undispatched event (seen by others only
 * once it commits), holds the lock for `holdMs` and commits. Resolves once it holds the lock; `done`
 * resolves with the time of its commit by the worker's clock.
 */
async function lockHolder(file: string, eventId: string, holdMs: number): Promise<{ done: Promise<number> }> {
  const worker = new Worker(
    `
    const { workerData, parentPort } = require('node:worker_threads');
    const Database = require('better-sqlite3');
    const db = new Database(workerData.file, { timeout: 5000 });
    db.exec('begin immediate');
    db.prepare("insert into events (id, type, occurred_at, account_id, payload, relay) values (?, 'tier_change', ?, null, '{}', 0)")
      .run(workerData.eventId, Date.now());
    parentPort.postMessage('locked');
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, workerData.holdMs);
    db.exec('commit');
    const committedAt = Date.now();
    db.close();
    parentPort.postMessage('committed ' + committedAt);
    `,
    { eval: true, workerData: { file, eventId, holdMs } },
  );
  const messages: string[] = [];
  const done = new Promise<number>((resolve, reject) => {
    worker.on('message', (m: string) => messages.push(m));
    worker.on('error', reject);
    worker.on('exit', (code) => {
      const committed = messages.find((m) => m.startsWith('committed '));
      if (code === 0 && committed) resolve(Number(committed.slice('committed '.length)));
      else reject(new Error(`lock holder exited ${code}`));
    });
  });
  await new Promise<void>((resolve, reject) => {
    worker.once('message', () => resolve());
    worker.once('error', reject);
  });
  return { done };
}

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
    const { done } = await lockHolder(server.database.url, eventId, 2_000);
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
