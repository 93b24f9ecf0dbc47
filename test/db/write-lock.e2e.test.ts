import { afterEach, describe, expect, it } from 'vitest';
import { SQLITE_WRITE_LOCK } from '../../src/db/prepared.js';
import { holdSqliteWriteLock } from '../helpers/db.js';
import { rest, startTestServer, type Json, type TestServer } from '../helpers/server.js';

/*
 * Two connections writing one SQLite file (a gateway and the CLI, or two gateways): every
 * transaction the ORM begins takes the write lock first (src/db/orm.ts, `WriteLockFirst`), as does
 * every `preparedTransaction` (src/db/prepared.ts: an order's move, the write here), so one
 * that reads and then writes waits for the other writer's commit instead of failing at its write
 * with SQLITE_BUSY_SNAPSHOT. The other writer here is a worker thread, whose wait (`Atomics.wait`)
 * and commit do not depend on the test's event loop, which the gateway's shares.
 */

/**
 * Another connection that takes the write lock, writes a row the gateway's transaction reads (the
 * order `orderId`), holds the lock for `holdMs` and commits (`holdSqliteWriteLock`).
 */
const otherWriter = (file: string, orderId: string, holdMs: number) =>
  holdSqliteWriteLock(
    file,
    'update service_orders set updated_at = updated_at + 1 where id = ?',
    [orderId],
    holdMs,
  );

describe('SQLite write transactions beside another writer', () => {
  let server: TestServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it('waits for the other connection to commit, then reads what it wrote and writes', async () => {
    const queries: string[] = [];
    server = await startTestServer({ dialect: 'sqlite', onQuery: (sql) => queries.push(sql) });
    const key = server.key('INSTITUTIONAL');
    const listed = await rest(server.url, '/v1/service-orders?status=REQUESTED&limit=1', { key });
    const order = (listed.body.data as Json[])[0]!;
    const { done } = await otherWriter(server.database.url, order.id as string, 300);

    // Reads the order, then writes its move: the other connection commits in between.
    const moved = await rest(server.url, `/v1/service-orders/${order.id}/status`, {
      method: 'POST',
      key,
      body: { status: 'CONFIRMED' },
    });
    await done;
    expect(moved.status, moved.text).toBe(200);
    expect(moved.body.status).toBe('CONFIRMED');
    expect(queries.some((q) => q.includes(SQLITE_WRITE_LOCK))).toBe(true);
  });

  it('serves other requests while a write waits for the lock', async () => {
    server = await startTestServer({ dialect: 'sqlite' });
    const key = server.key('INSTITUTIONAL');
    const listed = await rest(server.url, '/v1/service-orders?status=REQUESTED&limit=1', { key });
    const order = (listed.body.data as Json[])[0]!;
    const { done } = await otherWriter(server.database.url, order.id as string, 600);
    const moving = rest(server.url, `/v1/service-orders/${order.id}/status`, {
      method: 'POST',
      key,
      body: { status: 'CONFIRMED' },
    });
    // The move is waiting for the lock by now; SQLite's busy handler would hold the whole event
    // loop (this one: the gateway runs in the test's process) until the other writer commits.
    await new Promise((resolve) => setTimeout(resolve, 150));
    const health = await rest(server.url, '/healthz');
    const answeredAt = Date.now();
    const committedAt = await done;
    const moved = await moving;
    const movedAt = Date.now();
    expect(health.status).toBe(200);
    expect(answeredAt).toBeLessThan(committedAt);
    // The move did wait for the other writer's commit: the health answer came during that wait.
    expect(movedAt).toBeGreaterThanOrEqual(committedAt);
    expect(moved.status, moved.text).toBe(200);
    expect(moved.body.status).toBe('CONFIRMED');
  });

  it('answers 503 when the other writer holds the lock past busy_timeout, and the next write goes through', async () => {
    server = await startTestServer({ dialect: 'sqlite' });
    const key = server.key('INSTITUTIONAL');
    const listed = await rest(server.url, '/v1/service-orders?status=REQUESTED&limit=1', { key });
    const order = (listed.body.data as Json[])[0]!;
    const move = () =>
      rest(server!.url, `/v1/service-orders/${order.id}/status`, {
        method: 'POST',
        key,
        body: { status: 'CONFIRMED' },
      });
    // busy_timeout is 5 s (src/db/orm.ts): the lock is held a second longer.
    const { done } = await otherWriter(server.database.url, order.id as string, 6_000);
    const refused = await move();
    await done;
    expect(refused.status, refused.text).toBe(503);
    expect(refused.body.error.code).toBe('SERVICE_UNAVAILABLE');
    // The failed lock ended its transaction: the pool's one connection is free again.
    const moved = await move();
    expect(moved.status, moved.text).toBe(200);
    expect(moved.body.status).toBe('CONFIRMED');
  });

  it('lets a transaction that only reads take no write lock', async () => {
    const queries: string[] = [];
    server = await startTestServer({ dialect: 'sqlite', onQuery: (sql) => queries.push(sql) });
    queries.length = 0;
    // The liquidity read model loads its snapshot, on its first read, in a reading transaction.
    expect((await rest(server.url, '/v1/market', { key: server.key('INSTITUTIONAL') })).status).toBe(200);
    const load = queries.findIndex((q) => q.includes('from `liquidity_protocols`'));
    const began = queries.slice(0, load).findLastIndex((q) => /^\[query\] begin\b/.test(q));
    expect(began, queries.join('\n')).toBeGreaterThanOrEqual(0);
    expect(queries.slice(began, load)).not.toContainEqual(expect.stringContaining(SQLITE_WRITE_LOCK));
  });
});
