import type { EntityManager } from '@mikro-orm/knex';
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { preparedJoined } from '../../src/db/prepared.js';
import { checkOpenCall, commitUnderCall, statusChange, type Deps } from '../../src/port-ops/common.js';
import { PortCall, PortCallStatus, StatusChange, StatusSubject } from '../../src/port-ops/entities.js';
import { describeEachDialect } from '../helpers/env.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/*
 * `commitUnderCall` (src/port-ops/common.ts): on PostgreSQL a change under a call reads it unlocked
 * and writes by one statement guarded by the call's status as read; when the call moved in between,
 * nothing is written there and the change runs again in a transaction that locks the call, once,
 * answering as the call now stands. On SQLite it is that transaction from the start.
 */
describeEachDialect('a change under a port call', (dialect) => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ dialect });
  });
  afterAll(() => server?.close());

  const deps = (): Deps => ({
    em: server.database.db.em().fork(),
    clock: server.app.services.clock,
    events: server.app.services.events,
  });

  /** Scheduled calls of one account, each with no history row by `actor` yet. */
  const scheduled = async (): Promise<PortCall[]> =>
    server.database.db.em().fork().find(PortCall, { status: PortCallStatus.SCHEDULED }, { limit: 3 });

  const recorded = (callId: string, actor: string) =>
    server.database.db.em().fork().count(StatusChange, { subjectId: callId, actor });

  /**
   * A change that notes a history row on `call` while it is open; `meanwhile` runs after the
   * unlocked read, before the write (another client moving the call). Returns how it was called.
   */
  const noting = (call: PortCall, actor: string, meanwhile?: () => Promise<void>) => {
    const locks: boolean[] = [];
    const change = async (em: EntityManager, lock: boolean) => {
      locks.push(lock);
      const found = (await preparedJoined(em, PortCall, { id: call.id }, [], lock))!.row;
      checkOpenCall(found, ({ id, status }) => `Port call ${id} is ${status}`);
      if (!lock) await meanwhile?.();
      const at = new Date();
      return {
        call: found,
        result: found.status,
        drafts: [],
        rows: [
          {
            entity: StatusChange,
            items: [
              statusChange(StatusSubject.PORT_CALL, call.id, found.status, found.status, at, actor, at),
            ],
          },
        ],
      };
    };
    return { locks, change };
  };

  it('writes once: guarded on PostgreSQL, in a locking transaction on SQLite', async () => {
    const [call] = await scheduled();
    const { locks, change } = noting(call!, 'once');
    expect(await commitUnderCall(deps(), change)).toBe(PortCallStatus.SCHEDULED);
    expect(locks).toEqual(dialect === 'postgresql' ? [false] : [true]);
    expect(await recorded(call!.id, 'once')).toBe(1);
  });

  it.runIf(dialect === 'postgresql')(
    'on PostgreSQL, runs again locking the call when it moved after the read: written once, as the call now stands, or refused',
    async () => {
      const [, open, closing] = await scheduled();
      const other = new pg.Client({ connectionString: server.database.url });
      await other.connect();
      const move = (call: PortCall, status: PortCallStatus) => () =>
        other
          .query('update port_calls set status = $2 where id = $1', [call.id, status])
          .then(() => undefined);
      try {
        // Moved to another open status: the guard finds it changed, the locking run writes it.
        const arrived = noting(open!, 'arrived meanwhile', move(open!, PortCallStatus.ARRIVED));
        expect(await commitUnderCall(deps(), arrived.change)).toBe(PortCallStatus.ARRIVED);
        expect(arrived.locks).toEqual([false, true]);
        expect(await recorded(open!.id, 'arrived meanwhile')).toBe(1);

        // Departed: the locking run refuses it, and nothing is written.
        const departed = noting(closing!, 'departed meanwhile', move(closing!, PortCallStatus.DEPARTED));
        await expect(commitUnderCall(deps(), departed.change)).rejects.toMatchObject({
          message: `Port call ${closing!.id} is DEPARTED`,
        });
        expect(departed.locks).toEqual([false, true]);
        expect(await recorded(closing!.id, 'departed meanwhile')).toBe(0);
      } finally {
        for (const call of [open!, closing!]) await move(call, PortCallStatus.SCHEDULED)();
        await other.end();
      }
    },
  );
});
