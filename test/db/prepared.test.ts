import type { EntityManager } from '@mikro-orm/knex';
import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { isUniqueViolation } from '../../src/db/errors.js';
import {
  preparedGuardedWrite,
  preparedIn,
  preparedInJoined,
  preparedInsert,
  preparedInserts,
  preparedJoined,
  preparedLock,
  preparedLockJoined,
  preparedPage,
  preparedRows,
  preparedTransaction,
  preparedUpdate,
  preparedUpdateWithInserts,
} from '../../src/db/prepared.js';
import {
  Port,
  PortCall,
  PortCallStatus,
  ServiceOrder,
  ServiceOrderStatus,
  ServiceType,
  StatusChange,
  StatusSubject,
  Vendor,
} from '../../src/port-ops/entities.js';
import { describeEachDialect } from '../helpers/env.js';
import { startTestServer, type TestServer } from '../helpers/server.js';

/*
 * Prepared reads map rows themselves (rows as arrays, one pass; SQLite and PostgreSQL hand over
 * dates, booleans and JSON differently), on a pooled connection or on a transaction's: every path
 * must give what the ORM would hydrate, dates, booleans, nullable columns and JSON included. Prepared
 * writes must store what the ORM would store, and commit or roll back with their transaction.
 */
describeEachDialect('prepared reads', (dialect) => {
  let server: TestServer;
  /** The server's statements, as its query log shows them. */
  const statements: string[] = [];
  beforeAll(async () => {
    server = await startTestServer({ dialect, onQuery: (sql) => statements.push(sql) });
  });
  afterAll(() => server?.close());

  /**
   * The logged writes to the tables these tests write. The server's background work (the webhook
   * outbox's poll, credentials' last use, audit rows) logs its own statements into the same log.
   */
  const ownWrites = (logged: readonly string[]): string[] =>
    logged.filter((s) => /"(vendors|service_orders|status_changes)"/.test(s));

  /** A bunkering vendor of `accountId`, not yet written. */
  const newVendor = (accountId: string, name: string): Vendor =>
    Object.assign(new Vendor(), {
      accountId,
      name,
      services: [ServiceType.BUNKERING],
      ports: ['NLRTM'],
      createdAt: new Date('2026-03-04T05:06:07.089Z'),
    });

  const byId = (a: { id: string }, b: { id: string }) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
  const plain = (rows: object[]) => rows.map((r) => ({ ...r }) as { id: string }).sort(byId);

  /** What the ORM hydrates, read before any transaction (SQLite's one connection is then free). */
  async function expected() {
    const em = server.database.db.em();
    const vendors = await em.find(Vendor, {}, { orderBy: { name: 'asc', id: 'asc' }, limit: 7, offset: 2 });
    const calls = await em.find(PortCall, {}, { orderBy: { eta: 'desc', id: 'desc' }, limit: 20 });
    const ids = calls.map((c) => c.id);
    const orders = await em.find(ServiceOrder, { portCallId: { $in: ids } });
    const orderVendors = await em.find(Vendor, { id: { $in: [...new Set(orders.map((o) => o.vendorId))] } });
    return { vendors, vendorCount: await em.count(Vendor, {}), calls, ids, orders, orderVendors };
  }

  async function expectSameAsOrm(em: EntityManager, orm: Awaited<ReturnType<typeof expected>>) {
    const page = await preparedPage(em, Vendor, {}, { name: 'asc', id: 'asc' }, { limit: 7, offset: 2 });
    expect(page.total).toBe(orm.vendorCount);
    expect(page.items.map((v) => v.id)).toEqual(orm.vendors.map((v) => v.id));
    expect(page.items.every((v) => v instanceof Vendor)).toBe(true);
    expect(plain(page.items)).toEqual(plain(orm.vendors));
    expect(typeof page.items[0]!.active).toBe('boolean');
    // Plain data properties, not the ORM's change-tracking accessors (which a row built by assigning
    // to an object that already has the entity's prototype would get, with a wrapper each).
    for (const prop of ['name', 'active', 'services', 'createdAt'])
      expect(Object.getOwnPropertyDescriptor(page.items[0], prop), prop).toHaveProperty('value');
    expect(Array.isArray(page.items[0]!.services)).toBe(true);

    expect(orm.orders.length).toBeGreaterThan(5);
    const orders = await preparedIn(em, ServiceOrder, 'portCallId', orm.ids);
    expect(plain(orders)).toEqual(plain(orm.orders));
    expect(orders.some((o) => o.completedAt === null)).toBe(true);
    expect(orders.every((o) => o.createdAt instanceof Date && typeof o.details === 'object')).toBe(true);
    expect(plain(await preparedIn(em, PortCall, 'id', orm.ids))).toEqual(plain(orm.calls));

    // The orders with their vendors in one statement: the same orders, and each vendor once.
    const joined = await preparedInJoined(em, ServiceOrder, 'portCallId', orm.ids, {
      entity: Vendor,
      on: 'vendorId',
    });
    expect(plain(joined.items)).toEqual(plain(orm.orders));
    expect(orm.orderVendors.length).toBeGreaterThan(1);
    expect(joined.joined).toHaveLength(orm.orderVendors.length);
    expect(plain(joined.joined)).toEqual(plain(orm.orderVendors));
    expect(joined.joined.every((v) => v instanceof Vendor && Array.isArray(v.ports))).toBe(true);
    expect(typeof joined.joined[0]!.active).toBe('boolean');
  }

  it('give the rows the ORM hydrates, outside a transaction', async () =>
    expectSameAsOrm(server.database.db.em(), await expected()));

  it('give the same inside a transaction, which they join', async () => {
    const orm = await expected();
    await server.database.db.em().transactional((tx) => expectSameAsOrm(tx as EntityManager, orm));
  });

  it('count past the end of a list, and an empty filter', async () => {
    const em = server.database.db.em();
    const total = await em.count(Vendor, {});
    const order = { name: 'asc', id: 'asc' } as const;
    expect(await preparedPage(em, Vendor, {}, order, { limit: 5, offset: total + 3 })).toEqual({
      items: [],
      total,
    });
    expect(
      await preparedPage(em, Vendor, { name: 'no such vendor' }, order, { limit: 5, offset: 0 }),
    ).toEqual({
      items: [],
      total: 0,
    });
  });

  it('write the page size into the text and bind the offset, refusing a size that is not a whole number', async () => {
    const em = server.database.db.em();
    const order = { name: 'asc', id: 'asc' } as const;
    const orm = await em.find(Vendor, {}, { orderBy: order, limit: 3, offset: 2 });
    statements.length = 0;
    const page = await preparedPage(em, Vendor, {}, order, { limit: 3, offset: 2 });
    expect(page.items.map((v) => v.id)).toEqual(orm.map((v) => v.id));
    // Only the vendors' statements: the server's background work logs its own meanwhile.
    expect(statements.filter((s) => /"vendors"/.test(s))).toEqual([
      expect.stringMatching(/page_total .* limit 3 offset \? \[/),
    ]);
    for (const limit of [1.5, -1, Number.NaN])
      await expect(preparedPage(em, Vendor, {}, order, { limit, offset: 0 })).rejects.toThrow(
        /a page limit is a whole number/,
      );
  });

  it("read only the properties asked for, and always the joined entity's key", async () => {
    const em = server.database.db.em();
    const orm = await expected();
    const orders = await preparedIn(em, ServiceOrder, 'portCallId', orm.ids, {}, {}, ['id', 'status']);
    expect(orders).toHaveLength(orm.orders.length);
    expect(orders.every((o) => o instanceof ServiceOrder)).toBe(true);
    expect(plain(orders)).toEqual(orm.orders.map(({ id, status }) => ({ id, status })).sort(byId));
    const joined = await preparedInJoined(
      em,
      ServiceOrder,
      'portCallId',
      orm.ids,
      { entity: Vendor, on: 'vendorId' },
      { own: ['id', 'vendorId'], joined: ['name'] },
    );
    expect(plain(joined.items)).toEqual(orm.orders.map(({ id, vendorId }) => ({ id, vendorId })).sort(byId));
    expect(plain(joined.joined)).toEqual(orm.orderVendors.map(({ id, name }) => ({ id, name })).sort(byId));
  });

  it('lock one row and read it in one statement that writes nothing, only inside a transaction', async () => {
    const orm = await expected();
    const call = orm.calls[0]!;
    const db = server.database.db;
    await expect(preparedLock(db.em(), PortCall, { id: call.id })).rejects.toThrow(/outside a transaction/);
    const order: string[] = [];
    let concurrent: Promise<unknown> | undefined;
    const version = async () =>
      (await db
        .em()
        .getConnection()
        .execute('select version from read_model_versions where name = ?', [
          `port-ops:${call.accountId}`,
        ])) as Array<{ version: number }>;
    const before = await version();
    await db.em().transactional(async (tx) => {
      statements.length = 0;
      const locked = await preparedLock(tx as EntityManager, PortCall, {
        id: call.id,
        accountId: call.accountId,
      });
      expect(statements.filter((s) => /port_calls/.test(s))).toHaveLength(1);
      // PostgreSQL: the row's lock, as an update of a non-key column takes it; SQLite: the
      // transaction began by taking the database's write lock.
      expect(statements.find((s) => /port_calls/.test(s))).toMatch(
        dialect === 'postgresql'
          ? /select e\.\* from "port_calls" e where .* for no key update of e \[/i
          : /select e\.\* from "port_calls" e where [^[]*\[/i,
      );
      expect(locked).toBeInstanceOf(PortCall);
      expect(plain([locked!])).toEqual(plain([call]));
      expect(
        await preparedLock(tx as EntityManager, PortCall, {
          id: call.id,
          accountId: '00000000-0000-4000-8000-000000000000',
        }),
      ).toBeUndefined();
      await expect(preparedLock(tx as EntityManager, PortCall, {})).rejects.toThrow(/without a condition/);
      // Another writer of the row waits for this transaction to end (PostgreSQL: the row's lock; on
      // SQLite every writer waits for the one connection, so there the order holds by construction).
      concurrent = db
        .em()
        .nativeUpdate(PortCall, { id: call.id }, { status: call.status })
        .then(() => order.push('concurrent write'));
      await new Promise((resolve) => setTimeout(resolve, 150));
      order.push('commit');
    });
    await concurrent;
    expect(order).toEqual(['commit', 'concurrent write']);
    // The lock wrote nothing: only the concurrent write moved the account's version.
    const after = await version();
    expect(Number(after[0]!.version) - Number(before[0]!.version)).toBe(1);
  });

  it('lock one row and read the rows a write checks against in the same statement, locking only the one', async () => {
    const orm = await expected();
    const call = orm.calls[0]!;
    const vendor = orm.orderVendors[0]!;
    const db = server.database.db;
    const joins = [
      { entity: Vendor, where: { id: vendor.id, accountId: vendor.accountId } },
      { entity: Port, on: 'portId' },
    ] as const;
    await expect(preparedLockJoined(db.em(), PortCall, { id: call.id }, joins)).rejects.toThrow(
      /outside a transaction/,
    );
    const port = await db.em().fork().findOneOrFail(Port, { id: call.portId });
    await db.em().transactional(async (tx) => {
      statements.length = 0;
      const locked = await preparedLockJoined(tx as EntityManager, PortCall, { id: call.id }, joins);
      expect(statements.filter((s) => /port_calls/.test(s))).toHaveLength(1);
      expect(statements.find((s) => /port_calls/.test(s))).toMatch(
        dialect === 'postgresql' ? / for no key update of e \[/ : /left join "ports" j1 on [^[]*\[/,
      );
      expect(plain([locked!.row])).toEqual(plain([call]));
      const [joinedVendor, joinedPort] = locked!.joined;
      expect(joinedVendor).toBeInstanceOf(Vendor);
      expect(plain([joinedVendor!])).toEqual(plain([vendor]));
      expect(Array.isArray(joinedVendor!.services)).toBe(true);
      expect(typeof joinedVendor!.active).toBe('boolean');
      expect(joinedPort).toBeInstanceOf(Port);
      expect(plain([joinedPort!])).toEqual(plain([port]));

      // A joined row that does not match is undefined; the locked row is still read.
      const elsewhere = await preparedLockJoined(tx as EntityManager, PortCall, { id: call.id }, [
        { entity: Vendor, where: { id: vendor.id, accountId: '00000000-0000-4000-8000-000000000000' } },
      ]);
      expect(elsewhere?.row.id).toBe(call.id);
      expect(elsewhere?.joined).toEqual([undefined]);
      // No locked row, no joined rows.
      expect(
        await preparedLockJoined(tx as EntityManager, PortCall, { id: vendor.id }, joins),
      ).toBeUndefined();
    });
    if (dialect !== 'postgresql') return;
    // Only the call is locked: the vendor it read can be written meanwhile, the call cannot.
    const order: string[] = [];
    let callWrite: Promise<unknown> | undefined;
    await db.em().transactional(async (tx) => {
      await preparedLockJoined(tx as EntityManager, PortCall, { id: call.id }, joins);
      await db.em().fork().nativeUpdate(Vendor, { id: vendor.id }, { name: vendor.name });
      order.push('vendor written');
      callWrite = db
        .em()
        .fork()
        .nativeUpdate(PortCall, { id: call.id }, { status: call.status })
        .then(() => order.push('call written'));
      await new Promise((resolve) => setTimeout(resolve, 150));
      order.push('commit');
    });
    await callWrite;
    expect(order).toEqual(['vendor written', 'commit', 'call written']);
  });

  it('lock a joined row instead of the one read: an order read by its id, its call locked', async () => {
    const orm = await expected();
    const anOrder = orm.orders[0]!;
    const db = server.database.db;
    const joins = [{ entity: PortCall, on: 'portCallId', lock: true }] as const;
    const order: string[] = [];
    let callWrite: Promise<unknown> | undefined;
    await db.em().transactional(async (tx) => {
      statements.length = 0;
      const locked = await preparedLockJoined(tx as EntityManager, ServiceOrder, { id: anOrder.id }, joins);
      expect(locked?.row.id).toBe(anOrder.id);
      expect(locked?.joined[0]).toBeInstanceOf(PortCall);
      expect(locked?.joined[0]?.id).toBe(anOrder.portCallId);
      const sql = statements.find((s) => /from "service_orders" e /.test(s));
      expect(sql).toMatch(
        dialect === 'postgresql'
          ? / join "port_calls" j0 on j0\."id" = e\."port_call_id" where .* for no key update of j0 \[/
          : / join "port_calls" j0 on j0\."id" = e\."port_call_id" where [^[]*\[/,
      );
      expect(sql).not.toMatch(/left join "port_calls"/);
      await expect(
        preparedLockJoined(tx as EntityManager, ServiceOrder, { id: anOrder.id }, [...joins, ...joins]),
      ).rejects.toThrow(/one row is locked, not several/);
      // The read that locks nothing refuses a row marked to lock, rather than reading it unlocked.
      await expect(
        preparedJoined(tx as EntityManager, ServiceOrder, { id: anOrder.id }, joins),
      ).rejects.toThrow(/preparedJoined: a joined row marked to lock, in a read that locks none/);
      if (dialect !== 'postgresql') return;
      // The order it read can be written meanwhile; its call waits for this transaction.
      await db.em().fork().nativeUpdate(ServiceOrder, { id: anOrder.id }, { status: anOrder.status });
      order.push('order written');
      callWrite = db
        .em()
        .fork()
        .nativeUpdate(
          PortCall,
          { id: anOrder.portCallId },
          { status: orm.calls.find((c) => c.id === anOrder.portCallId)!.status },
        )
        .then(() => order.push('call written'));
      await new Promise((resolve) => setTimeout(resolve, 150));
      order.push('commit');
    });
    if (dialect !== 'postgresql') return;
    await callWrite;
    expect(order).toEqual(['order written', 'commit', 'call written']);
  });

  it('insert and update rows as the ORM writes them, only inside a transaction, committing or rolling back with it', async () => {
    const db = server.database.db;
    const orm = await expected();
    const call = orm.calls[0]!;
    const vendor = (): Vendor =>
      Object.assign(new Vendor(), {
        accountId: call.accountId,
        name: 'Prepared Bunkers',
        services: [ServiceType.BUNKERING, ServiceType.TOWAGE],
        ports: ['NLRTM'],
        contactEmail: null,
        active: false,
        createdAt: new Date('2026-03-04T05:06:07.089Z'),
      });
    const order = (vendorId: string): ServiceOrder =>
      Object.assign(new ServiceOrder(), {
        accountId: call.accountId,
        portCallId: call.id,
        vendorId,
        serviceType: ServiceType.BUNKERING,
        details: { quantity: 12.5, unit: 'MT', fuelType: 'VLSFO', notes: ['a', 1, null] },
        requestedFor: null,
        createdAt: new Date('2026-03-04T05:06:07.089Z'),
        updatedAt: new Date('2026-03-04T05:06:07.089Z'),
      });
    await expect(preparedInsert(db.em(), Vendor, [vendor()])).rejects.toThrow(/outside a transaction/);
    await expect(preparedUpdate(db.em(), Vendor, { id: call.id }, { active: true })).rejects.toThrow(
      /outside a transaction/,
    );

    // The ORM writes one of each, the prepared insert the same values under another id.
    const byOrm = { vendor: vendor(), order: undefined as ServiceOrder | undefined };
    const byPrepared = { vendor: vendor(), order: undefined as ServiceOrder | undefined };
    byOrm.order = order(byOrm.vendor.id);
    byPrepared.order = order(byPrepared.vendor.id);
    await db.em().transactional(async (tx) => {
      // The order after its vendor (the ORM sees no relation between their plain id columns).
      await tx.persist(byOrm.vendor).flush();
      await tx.persist(byOrm.order!).flush();
      statements.length = 0;
      await preparedInsert(tx as EntityManager, Vendor, [byPrepared.vendor]);
      await preparedInsert(tx as EntityManager, ServiceOrder, [byPrepared.order!]);
      // One statement each, values bound (`?`), not inlined into the text.
      expect(
        ownWrites(statements).filter((s) => /insert into "\w+" \(.*\) values \(\?(, \?)*\)/.test(s)),
      ).toHaveLength(2);
      // A read inside the transaction sees its own writes.
      expect((await preparedIn(tx as EntityManager, Vendor, 'id', [byPrepared.vendor.id]))[0]?.name).toBe(
        'Prepared Bunkers',
      );
    });
    const read = db.em();
    const stored = async (id: string) => ({ ...(await read.fork().findOneOrFail(Vendor, { id })), id: '' });
    expect(await stored(byPrepared.vendor.id)).toEqual(await stored(byOrm.vendor.id));
    const storedOrder = async (id: string) => ({
      ...(await read.fork().findOneOrFail(ServiceOrder, { id })),
      id: '',
      vendorId: '',
    });
    expect(await storedOrder(byPrepared.order.id)).toEqual(await storedOrder(byOrm.order.id));
    expect((await storedOrder(byPrepared.order.id)).status).toBe(ServiceOrderStatus.REQUESTED); // the class's default

    // An update sets what it is given and counts the rows its condition matched.
    const completedAt = new Date('2026-03-05T00:00:00.000Z');
    await db.em().transactional(async (tx) => {
      const t = tx as EntityManager;
      const set = { status: ServiceOrderStatus.COMPLETED, completedAt, details: { quantity: 1 } };
      expect(
        await preparedUpdate(t, ServiceOrder, { id: byPrepared.order!.id, status: 'REQUESTED' }, set),
      ).toBe(1);
      expect(
        await preparedUpdate(t, ServiceOrder, { id: byPrepared.order!.id, status: 'REQUESTED' }, set),
      ).toBe(0);
      await expect(preparedUpdate(t, ServiceOrder, {}, set)).rejects.toThrow(/without a condition/);
      await expect(preparedUpdate(t, ServiceOrder, { id: call.id }, { colour: 'red' })).rejects.toThrow(
        /no column for 'colour'/,
      );
    });
    const updated = await read.fork().findOneOrFail(ServiceOrder, { id: byPrepared.order.id });
    expect(updated.completedAt).toEqual(completedAt);
    expect(updated.details).toEqual({ quantity: 1 });

    // A duplicate key fails as the ORM's own write would, and the transaction's writes are undone.
    const again = vendor();
    await expect(
      db.em().transactional(async (tx) => {
        await preparedInsert(tx as EntityManager, Vendor, [again]);
        await preparedInsert(tx as EntityManager, Vendor, [
          Object.assign(vendor(), { id: byPrepared.vendor.id }),
        ]);
      }),
    ).rejects.toSatisfy(isUniqueViolation);
    expect(await read.fork().findOne(Vendor, { id: again.id })).toBeNull();
  });

  it('insert the rows of several entities in order, in one statement on PostgreSQL, all or none', async () => {
    const db = server.database.db;
    const [call] = (await expected()).calls;
    const vendor = (name: string): Vendor => newVendor(call!.accountId, name);
    const history = (subjectId: string): StatusChange =>
      Object.assign(new StatusChange(), {
        subjectType: StatusSubject.SERVICE_ORDER,
        subjectId,
        from: null,
        to: 'REQUESTED',
        at: new Date('2026-03-04T05:06:07.089Z'),
        actor: 'test',
        recordedAt: new Date('2026-03-04T05:06:07.089Z'),
      });
    const vendors = [vendor('First Bunkers'), vendor('Second Bunkers')];
    const order = Object.assign(new ServiceOrder(), {
      accountId: call!.accountId,
      portCallId: call!.id,
      vendorId: vendors[0]!.id,
      serviceType: ServiceType.BUNKERING,
      details: { quantity: 1, unit: 'MT', fuelType: 'VLSFO' },
      createdAt: new Date('2026-03-04T05:06:07.089Z'),
      updatedAt: new Date('2026-03-04T05:06:07.089Z'),
    });
    const changes = [history(order.id)];
    await expect(preparedInserts(db.em(), [{ entity: Vendor, items: vendors }])).rejects.toThrow(
      /outside a transaction/,
    );
    await db.em().transactional(async (tx) => {
      statements.length = 0;
      await preparedInserts(tx as EntityManager, [
        { entity: Vendor, items: vendors },
        { entity: ServiceOrder, items: [order] },
        { entity: StatusChange, items: changes },
        { entity: Vendor, items: [] },
      ]);
      const inserts = ownWrites(statements).filter((s) => /\binsert into\b/.test(s));
      if (dialect === 'postgresql') {
        expect(inserts).toHaveLength(1);
        expect(inserts[0]).toMatch(
          /with w0 as \(insert into "vendors" .*\), w1 as \(insert into "vendors" .*\), w2 as \(insert into "service_orders" .*\)\) insert into "status_changes" /,
        );
      } else {
        expect(inserts.map((s) => /insert into "(\w+)"/.exec(s)![1])).toEqual([
          'vendors',
          'vendors',
          'service_orders',
          'status_changes',
        ]);
      }
    });
    const read = db.em().fork();
    expect((await read.find(Vendor, { id: vendors.map((v) => v.id) })).map((v) => v.name).sort()).toEqual([
      'First Bunkers',
      'Second Bunkers',
    ]);
    expect((await read.findOneOrFail(ServiceOrder, { id: order.id })).details).toEqual(order.details);
    expect(await read.findOneOrFail(StatusChange, { id: changes[0]!.id })).toMatchObject({
      subjectId: order.id,
      from: null,
      to: 'REQUESTED',
    });

    // Many rows go in statements of at most 16 rows on PostgreSQL (33: 16, 16 and a plain insert).
    const many = Array.from({ length: 33 }, () => history(order.id));
    await db.em().transactional(async (tx) => {
      statements.length = 0;
      await preparedInserts(tx as EntityManager, [{ entity: StatusChange, items: many }]);
      const inserts = ownWrites(statements).filter((s) => /\binsert into\b/.test(s));
      expect(inserts.map((s) => s.match(/insert into/g)!.length)).toEqual(
        dialect === 'postgresql' ? [16, 16, 1] : Array.from({ length: 33 }, () => 1),
      );
    });
    expect(
      await db
        .em()
        .fork()
        .count(StatusChange, { id: many.map((c) => c.id) }),
    ).toBe(33);

    // A guarded update with rows to insert: one statement on PostgreSQL answering the rows it matched.
    const guard = {
      entity: ServiceOrder,
      where: { id: order.id, status: ServiceOrderStatus.REQUESTED },
      values: { status: ServiceOrderStatus.CONFIRMED },
    };
    const moved = history(order.id);
    await db.em().transactional(async (tx) => {
      statements.length = 0;
      expect(
        await preparedUpdateWithInserts(tx as EntityManager, guard, [
          { entity: StatusChange, items: [moved] },
        ]),
      ).toBe(1);
      const writes = ownWrites(statements).filter((s) => /\b(update|insert into) "/.test(s));
      expect(writes).toHaveLength(dialect === 'postgresql' ? 1 : 2);
      if (dialect === 'postgresql')
        expect(writes[0]).toMatch(
          /with u as \(update "service_orders" .* returning 1\), w0 as \(insert into "status_changes" .*\) select count\(\*\) as changed from u/,
        );
    });
    expect((await db.em().fork().findOneOrFail(ServiceOrder, { id: order.id })).status).toBe('CONFIRMED');
    expect(await db.em().fork().count(StatusChange, { id: moved.id })).toBe(1);
    // Matching nothing (the row moved meanwhile) answers 0; SQLite then writes no row either.
    const late = history(order.id);
    await db.em().transactional(async (tx) => {
      expect(
        await preparedUpdateWithInserts(tx as EntityManager, guard, [
          { entity: StatusChange, items: [late] },
        ]),
      ).toBe(0);
      if (dialect === 'sqlite')
        expect(await preparedIn(tx as EntityManager, StatusChange, 'id', [late.id])).toEqual([]);
    });

    // A duplicate key in the last row fails the whole write: the rows before it are not there either.
    const more = [vendor('Third Bunkers')];
    await expect(
      db.em().transactional(async (tx) => {
        await preparedInserts(tx as EntityManager, [
          { entity: Vendor, items: more },
          { entity: StatusChange, items: [Object.assign(history(order.id), { id: changes[0]!.id })] },
        ]);
      }),
    ).rejects.toSatisfy(isUniqueViolation);
    expect(await db.em().fork().findOne(Vendor, { id: more[0]!.id })).toBeNull();
  });

  it('insert rows under a guarded row in one statement on PostgreSQL, outside a transaction: only while the row is as read, waiting for a change of it', async () => {
    const db = server.database.db;
    const call = (
      await db.em().fork().find(PortCall, { status: PortCallStatus.SCHEDULED }, { limit: 1 })
    )[0]!;
    const newVendors = (...names: string[]) => [
      { entity: Vendor, items: names.map((n) => newVendor(call.accountId, n)) },
    ];
    const guard = { entity: PortCall, where: { id: call.id, status: call.status } };
    if (dialect === 'sqlite') {
      await expect(preparedGuardedWrite(db.em(), guard, newVendors('Nowhere'))).rejects.toThrow(
        /runs on PostgreSQL, outside a transaction/,
      );
      return;
    }
    await expect(
      db.em().transactional((tx) => preparedGuardedWrite(tx as EntityManager, guard, newVendors('Inside'))),
    ).rejects.toThrow(/outside a transaction/);
    const named = async (...names: string[]) =>
      (await db.em().fork().find(Vendor, { name: names })).map((v) => v.name).sort();

    // The row as read: written, in one statement.
    statements.length = 0;
    expect(await preparedGuardedWrite(db.em(), guard, newVendors('Guarded One', 'Guarded Two'))).toBe(true);
    expect(ownWrites(statements).filter((s) => /\binsert into\b/.test(s))).toHaveLength(1);
    expect(await named('Guarded One', 'Guarded Two')).toEqual(['Guarded One', 'Guarded Two']);
    // The row no longer as read (another status): nothing written.
    expect(
      await preparedGuardedWrite(
        db.em(),
        { ...guard, where: { ...guard.where, status: PortCallStatus.ARRIVED } },
        newVendors('Stale'),
      ),
    ).toBe(false);
    expect(await named('Stale')).toEqual([]);

    // A transaction that holds the row to change it (a departure): the write waits for it, then
    // finds the row changed and writes nothing; once the row is back as read, it writes.
    const other = new pg.Client({ connectionString: server.database.url });
    await other.connect();
    try {
      await other.query('begin');
      await other.query('select 1 from port_calls where id = $1 for no key update', [call.id]);
      await other.query("update port_calls set status = 'DEPARTED' where id = $1", [call.id]);
      let settled = false;
      const racing = preparedGuardedWrite(db.em(), guard, newVendors('Raced')).finally(
        () => (settled = true),
      );
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(settled).toBe(false);
      await other.query('commit');
      expect(await racing).toBe(false);
      expect(await named('Raced')).toEqual([]);
    } finally {
      await other.query('rollback').catch(() => undefined);
      await other.query('update port_calls set status = $2 where id = $1', [call.id, call.status]);
      await other.end();
    }
    expect(await preparedGuardedWrite(db.em(), guard, newVendors('After'))).toBe(true);
    expect(await named('After')).toEqual(['After']);
  });

  it('move a row and insert rows under a guarded row in one statement on PostgreSQL: only while both are as read, waiting for a change of either', async () => {
    const db = server.database.db;
    const em = db.em().fork();
    const open = await em.find(PortCall, { status: PortCallStatus.SCHEDULED });
    const order = await em.findOneOrFail(ServiceOrder, {
      portCallId: open.map((c) => c.id),
      status: ServiceOrderStatus.REQUESTED,
    });
    const call = open.find((c) => c.id === order.portCallId)!;
    const guard = { entity: PortCall, where: { id: call.id, status: call.status } };
    const at = new Date('2026-03-04T05:06:07.089Z');
    const move = (status = ServiceOrderStatus.REQUESTED) => ({
      entity: ServiceOrder,
      where: { id: order.id, status },
      values: { status: ServiceOrderStatus.CONFIRMED, updatedAt: at },
    });
    const history = (actor: string) => [
      {
        entity: StatusChange,
        items: [
          Object.assign(new StatusChange(), {
            subjectType: StatusSubject.SERVICE_ORDER,
            subjectId: order.id,
            from: ServiceOrderStatus.REQUESTED,
            to: ServiceOrderStatus.CONFIRMED,
            at,
            actor,
            recordedAt: at,
          }),
        ],
      },
    ];
    if (dialect === 'sqlite') {
      await expect(preparedGuardedWrite(db.em(), guard, history('nowhere'), move())).rejects.toThrow(
        /runs on PostgreSQL, outside a transaction/,
      );
      return;
    }
    const status = async () => (await db.em().fork().findOneOrFail(ServiceOrder, { id: order.id })).status;
    const recorded = async (actor: string) =>
      db.em().fork().count(StatusChange, { subjectId: order.id, actor });

    // The order no longer as read, or the call: nothing moved, nothing inserted.
    expect(
      await preparedGuardedWrite(db.em(), guard, history('stale order'), move(ServiceOrderStatus.CONFIRMED)),
    ).toBe(false);
    const departed = { ...guard, where: { ...guard.where, status: PortCallStatus.DEPARTED } };
    expect(await preparedGuardedWrite(db.em(), departed, history('stale call'), move())).toBe(false);
    expect(await status()).toBe(ServiceOrderStatus.REQUESTED);
    expect(await recorded('stale order')).toBe(0);
    expect(await recorded('stale call')).toBe(0);

    // Another transaction moving the call, then one moving the order: the write waits for each,
    // finds it changed, and writes nothing.
    const other = new pg.Client({ connectionString: server.database.url });
    await other.connect();
    const raced = async (change: string[], actor: string) => {
      await other.query('begin');
      for (const sql of change) await other.query(sql, [sql.includes('port_calls') ? call.id : order.id]);
      let settled = false;
      const racing = preparedGuardedWrite(db.em(), guard, history(actor), move()).finally(
        () => (settled = true),
      );
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(settled, actor).toBe(false);
      await other.query('commit');
      expect(await racing, actor).toBe(false);
      expect(await recorded(actor), actor).toBe(0);
    };
    try {
      await raced(
        [
          'select 1 from port_calls where id = $1 for no key update',
          "update port_calls set status = 'DEPARTED' where id = $1",
        ],
        'raced call',
      );
      expect(await status()).toBe(ServiceOrderStatus.REQUESTED);
      await other.query('update port_calls set status = $2 where id = $1', [call.id, call.status]);
      await raced(["update service_orders set status = 'CANCELLED' where id = $1"], 'raced order');
      expect(await status()).toBe(ServiceOrderStatus.CANCELLED);
    } finally {
      await other.query('rollback').catch(() => undefined);
      await other.query('update port_calls set status = $2 where id = $1', [call.id, call.status]);
      await other.query('update service_orders set status = $2 where id = $1', [order.id, order.status]);
      await other.end();
    }

    // Both as read: the move and its history row, in one statement.
    statements.length = 0;
    expect(await preparedGuardedWrite(db.em(), guard, history('guarded'), move())).toBe(true);
    const writes = ownWrites(statements).filter((s) => /\b(update|insert into) "/.test(s));
    expect(writes).toHaveLength(1);
    expect(writes[0]).toMatch(
      /^\[query\] with g as \(select 1 from "port_calls" e where .* for share of e\), u as \(update "service_orders" set .* and exists \(select 1 from g\) returning 1\) insert into "status_changes" .* where exists \(select 1 from u\)/,
    );
    expect(await status()).toBe(ServiceOrderStatus.CONFIRMED);
    expect(await recorded('guarded')).toBe(1);
  });

  it('run a transaction of their own: committed together, rolled back on any error, refusing the ORM inside it', async () => {
    const db = server.database.db;
    const [call] = (await expected()).calls;
    const vendor = (name: string): Vendor => newVendor(call!.accountId, name);
    const stored = (v: Vendor) => db.em().fork().findOne(Vendor, { id: v.id });

    // Committed: BEGIN and COMMIT on the connection (SQLite takes its write lock first), and a read
    // inside sees the transaction's own write.
    const kept = vendor('Own Transaction Bunkers');
    statements.length = 0;
    const answer = await preparedTransaction(db.em(), async (tx) => {
      await preparedInserts(tx, [{ entity: Vendor, items: [kept] }]);
      return (await preparedIn(tx, Vendor, 'id', [kept.id]))[0]?.name;
    });
    expect(answer).toBe('Own Transaction Bunkers');
    expect((await stored(kept))?.name).toBe('Own Transaction Bunkers');
    // The server's background work logs its statements too (see `ownWrites`), so the transaction's
    // BEGIN is the last one before its insert and its COMMIT the first one after.
    const logged = statements.map((s) => s.replace(/^\[query\] /, ''));
    const insert = logged.findIndex((s) => /^insert into "vendors"/.test(s));
    const begin = logged.findLastIndex((s, i) => i < insert && /^begin\b/.test(s));
    const commit = logged.findIndex((s, i) => i > insert && /^commit\b/.test(s));
    expect(insert, logged.join('\n')).toBeGreaterThanOrEqual(0);
    expect(begin, logged.join('\n')).toBeGreaterThanOrEqual(0);
    expect(commit, logged.join('\n')).toBeGreaterThan(insert);
    if (dialect === 'sqlite')
      expect(logged[begin + 1]).toMatch(/^update "schema_migrations" set "id" = "id" where 0/);

    // An error of the work's own: the caller gets it, and the row written before it is gone.
    const thrown = vendor('Thrown Bunkers');
    await expect(
      preparedTransaction(db.em(), async (tx) => {
        await preparedInserts(tx, [{ entity: Vendor, items: [thrown] }]);
        throw new Error('changed my mind');
      }),
    ).rejects.toThrow('changed my mind');
    expect(await stored(thrown)).toBeNull();

    // A failing statement: the database's error converted as the ORM converts it, all rolled back.
    const first = vendor('First Of Two');
    await expect(
      preparedTransaction(db.em(), async (tx) => {
        await preparedInserts(tx, [{ entity: Vendor, items: [first] }]);
        await preparedInserts(tx, [
          { entity: Vendor, items: [Object.assign(vendor('Twin'), { id: kept.id })] },
        ]);
      }),
    ).rejects.toSatisfy(isUniqueViolation);
    expect(await stored(first)).toBeNull();

    // The ORM cannot run a query in it (it would run outside the transaction): refused, rolled back.
    const beforeOrm = vendor('Before The ORM');
    await expect(
      preparedTransaction(db.em(), async (tx) => {
        await preparedInserts(tx, [{ entity: Vendor, items: [beforeOrm] }]);
        await tx.find(Vendor, { id: kept.id });
      }),
    ).rejects.toThrow(/the ORM was asked to run a query inside preparedTransaction/);
    expect(await stored(beforeOrm)).toBeNull();

    // Nor is an entity persisted for a flush that never comes dropped silently.
    const persisted = vendor('Persisted Only');
    await expect(
      preparedTransaction(db.em(), async (tx) => {
        tx.persist(persisted);
      }),
    ).rejects.toThrow(/persisted inside preparedTransaction/);
    expect(await stored(persisted)).toBeNull();

    // After all of those the connection went back to the pool with no transaction open.
    const after = vendor('After The Errors');
    await preparedTransaction(db.em(), (tx) => preparedInserts(tx, [{ entity: Vendor, items: [after] }]));
    expect((await stored(after))?.name).toBe('After The Errors');
    // Had a transaction been left open, that commit would have committed its rows too.
    for (const gone of [thrown, first, beforeOrm, persisted]) expect(await stored(gone)).toBeNull();
    await expect(preparedInserts(db.em(), [{ entity: Vendor, items: [vendor('Outside')] }])).rejects.toThrow(
      /outside a transaction/,
    );
  });

  if (dialect === 'postgresql')
    it("give up a connection lost inside their own transaction: the error is the caller's, and the pool hands out a live one next", async () => {
      const db = server.database.db;
      const [call] = (await expected()).calls;
      const lost = newVendor(call!.accountId, 'Lost Connection Bunkers');
      await expect(
        preparedTransaction(db.em(), async (tx) => {
          await preparedInserts(tx, [{ entity: Vendor, items: [lost] }]);
          const [own] = (await preparedRows(tx, 'select pg_backend_pid() as pid', [])) as Array<{
            pid: number;
          }>;
          await db.em().getConnection().execute('select pg_terminate_backend(?)', [own!.pid]);
          await preparedRows(tx, 'select 1 as one', []);
        }),
      ).rejects.toThrow();
      expect(await db.em().fork().findOne(Vendor, { id: lost.id })).toBeNull();
      for (let i = 0; i < 3; i++) {
        const row = await preparedTransaction(
          db.em(),
          async (tx) => (await preparedRows(tx, 'select 1 as one', []))[0],
        );
        expect(row).toEqual({ one: 1 });
      }
    });
});
