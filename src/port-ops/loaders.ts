import type { EntityManager } from '@mikro-orm/knex';
import type { EntityClass } from '@mikro-orm/core';
import { isObjectType, type GraphQLResolveInfo, type OperationDefinitionNode } from 'graphql';
import { preparedIn, preparedInJoined } from '../db/prepared.js';
import type { GatewayContext } from '../gateway/schema/context.js';
import { fieldsSelectedOn } from '../gateway/schema/selection.js';
import type { MaybePromise } from '../kernel/maybe-async.js';
import { PortCall, ServiceOrder, StatusChange, StatusSubject, Vendor } from './entities.js';

/*
 * Every relation of the port-ops graph goes through a per-request DataLoader: one statement per
 * relation per request, however many parents ask. Keys come from rows the caller could already
 * read (tenancy was applied to the parent), so the loaders need no tenant filter of their own.
 * Loaded rows are only read, so they skip the ORM's hydration, and their SQL is written once per
 * batch size (src/db/prepared.ts).
 */
function byId<T extends { id: string }>(entity: EntityClass<T>) {
  return async (em: EntityManager, ids: readonly string[]): Promise<Array<T | Error>> => {
    const rows = await preparedIn(em, entity, 'id', ids);
    const found = new Map(rows.map((r) => [r.id, r]));
    return ids.map((id) => found.get(id) ?? new Error(`${String(entity)} ${id} vanished`));
  };
}

function groupBy<T, K extends keyof T>(rows: T[], key: K, keys: readonly T[K][]): T[][] {
  const groups = new Map<T[K], T[]>(keys.map((k) => [k, []]));
  for (const row of rows) groups.get(row[key])?.push(row);
  return keys.map((k) => groups.get(k)!);
}

/**
 * Oldest first, ties by id. The batches are sorted here, per parent, rather than by the database:
 * an `in (…)` over several parents can only be ordered by sorting every row the batch reads (a
 * temporary B-tree on SQLite), while the few rows of one parent usually come off the index
 * (parent, time, id) already in order.
 */
function chronological<T extends { id: string }>(groups: T[][], at: (row: T) => Date): T[][] {
  const order = (a: T, b: T) => at(a).getTime() - at(b).getTime() || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
  for (const group of groups) {
    for (let i = 1; i < group.length; i++) {
      if (order(group[i - 1]!, group[i]!) > 0) {
        group.sort(order);
        break;
      }
    }
  }
  return groups;
}

/** Every batch here is prepared reads only: the request forks no entity manager for them. */
const PREPARED = { prepared: true };

const vendorById = byId(Vendor);
const portCallById = byId(PortCall);

// Vessels and ports, shared reference data, come from the rows kept per data version.
export { loadPort, loadVessel } from './reference-rows.js';
/**
 * What a request has already read for a list it is answering (`readServiceOrders`): service orders
 * by call and vendors by id, answered at once, without a statement, a DataLoader or a promise.
 */
const readAhead = (ctx: GatewayContext) =>
  ctx.loaders.once('port-ops.readAhead', () => ({
    orders: new Map<string, readonly ServiceOrder[]>(),
    vendors: new Map<string, Vendor>(),
  }));

export const loadVendor = (ctx: GatewayContext, id: string): MaybePromise<Vendor> =>
  readAhead(ctx).vendors.get(id) ?? ctx.loaders.get('port-ops.vendor', vendorById, PREPARED).load(id);
export const loadPortCall = (ctx: GatewayContext, id: string) =>
  ctx.loaders.get('port-ops.portCall', portCallById, PREPARED).load(id);

export const loadServiceOrders = (
  ctx: GatewayContext,
  portCallId: string,
): MaybePromise<readonly ServiceOrder[]> =>
  readAhead(ctx).orders.get(portCallId) ??
  ctx.loaders
    .get<string, ServiceOrder[]>('port-ops.serviceOrdersByCall', (em, ids) => ordersByCall(em, ids), PREPARED)
    .load(portCallId);

/** The service orders of each of `portCallIds`, oldest first, in one statement. */
export async function ordersByCall(
  em: EntityManager,
  portCallIds: readonly string[],
): Promise<ServiceOrder[][]> {
  return chronological(
    groupBy(await preparedIn(em, ServiceOrder, 'portCallId', portCallIds), 'portCallId', portCallIds),
    (o) => o.createdAt,
  );
}

/**
 * What the fields of a type that have a resolver read off their row: the resolvers of
 * port-calls-resolvers.ts and service-orders-resolvers.ts, beside the loaders they call. A field with a resolver that is not
 * listed here makes a read-ahead read every property.
 */
const RESOLVERS_READ: Record<string, Record<string, readonly string[]>> = {
  PortCall: {
    vessel: ['vesselId'],
    port: ['portId'],
    vesselImo: ['vesselId'],
    portLocode: ['portId'],
    serviceOrders: ['id'],
    statusHistory: ['id'],
  },
  ServiceOrder: { vendor: ['vendorId'], portCall: ['portCallId'], statusHistory: ['id'] },
  Vendor: {},
};

/**
 * The properties of `entity` that the operation's fields on `typeName` read, with `always` (what
 * the read itself needs), or undefined for every property: a field this cannot account for (a
 * resolver not in RESOLVERS_READ, a getter, a field named apart from its property). Worked out
 * once per operation.
 */
export function propertiesRead(
  info: GraphQLResolveInfo,
  em: EntityManager,
  entity: EntityClass<object>,
  typeName: string,
  always: readonly string[],
): readonly string[] | undefined {
  let reads = propertiesReadBy.get(info.operation);
  if (!reads) propertiesReadBy.set(info.operation, (reads = new Map()));
  const key = `${typeName}|${always.join(',')}`;
  if (!reads.has(key)) reads.set(key, workOutPropertiesRead(info, em, entity, typeName, always));
  return reads.get(key);
}
/** What `propertiesRead` worked out, per operation (a parsed document's, kept with it). */
const propertiesReadBy = new WeakMap<OperationDefinitionNode, Map<string, readonly string[] | undefined>>();

function workOutPropertiesRead(
  info: GraphQLResolveInfo,
  em: EntityManager,
  entity: EntityClass<object>,
  typeName: string,
  always: readonly string[],
): readonly string[] | undefined {
  const type = info.schema.getType(typeName);
  if (!isObjectType(type)) return undefined;
  const fields = type.getFields();
  const columns = new Set(
    em
      .getMetadata()
      .get(entity.name)
      .props.filter((p) => p.fieldNames?.length === 1)
      .map((p) => p.name),
  );
  const props = new Set(always);
  for (const name of fieldsSelectedOn(info, typeName)) {
    if (name.startsWith('__')) continue; // __typename: nothing of the row
    const field = fields[name];
    const reads = field?.resolve ? RESOLVERS_READ[typeName]?.[name] : columns.has(name) ? [name] : undefined;
    if (!reads) return undefined;
    for (const prop of reads) props.add(prop);
  }
  return [...props];
}

/**
 * Reads the service orders of a page of calls in one statement, with their vendors in the same
 * statement when `withVendors`, before the page's fields resolve: each call's `serviceOrders` and
 * each order's `vendor` are then answered at once. A list of calls whose query reads their orders
 * calls it (fifty calls' orders through a DataLoader were fifty promises, and as many again for
 * their vendors).
 *
 * Only the properties some field of the operation reads are read (every field on `ServiceOrder`
 * and `Vendor` anywhere in it, since these rows answer every order and vendor of the request): the
 * dashboard's orders and vendors without the columns it never shows. Each column read costs a
 * value made by the driver (about 0.1 µs on SQLite) and, for dates and JSON, one made here.
 */
export async function readServiceOrders(
  ctx: GatewayContext,
  portCallIds: readonly string[],
  withVendors: boolean,
  info: GraphQLResolveInfo,
): Promise<void> {
  const ahead = readAhead(ctx);
  const ids = portCallIds.filter((id) => !ahead.orders.has(id));
  if (ids.length === 0) return;
  // Grouped by call and ordered by time and id (chronological) here; the vendor joins on vendorId.
  const own = propertiesRead(info, ctx.reads, ServiceOrder, 'ServiceOrder', [
    'id',
    'portCallId',
    'createdAt',
    ...(withVendors ? ['vendorId'] : []),
  ]);
  let orders: ServiceOrder[];
  if (withVendors) {
    const read = await preparedInJoined(
      ctx.reads,
      ServiceOrder,
      'portCallId',
      ids,
      { entity: Vendor, on: 'vendorId' },
      { own, joined: propertiesRead(info, ctx.reads, Vendor, 'Vendor', ['id']) },
    );
    orders = read.items;
    for (const vendor of read.joined) if (!ahead.vendors.has(vendor.id)) ahead.vendors.set(vendor.id, vendor);
  } else {
    orders = await preparedIn(ctx.reads, ServiceOrder, 'portCallId', ids, {}, {}, own);
  }
  const groups = chronological(groupBy(orders, 'portCallId', ids), (o) => o.createdAt);
  ids.forEach((id, i) => {
    if (!ahead.orders.has(id)) ahead.orders.set(id, groups[i]!);
  });
}

/**
 * What `readServiceOrders` reads, taken from the port-call read model instead (account-calls.ts):
 * each call's orders and their vendors, for a page of calls the model answered.
 */
export function readServiceOrdersFrom(
  ctx: GatewayContext,
  calls: readonly { id: string }[],
  model: { orders: ReadonlyMap<string, readonly ServiceOrder[]>; vendors: ReadonlyMap<string, Vendor> },
): void {
  const ahead = readAhead(ctx);
  for (const call of calls) {
    if (ahead.orders.has(call.id)) continue;
    const orders = model.orders.get(call.id) ?? NO_ORDERS;
    ahead.orders.set(call.id, orders);
    for (const order of orders) {
      const vendor = model.vendors.get(order.vendorId);
      if (vendor && !ahead.vendors.has(vendor.id)) ahead.vendors.set(vendor.id, vendor);
    }
  }
}
const NO_ORDERS: readonly ServiceOrder[] = Object.freeze([]);

export const loadStatusHistory = (ctx: GatewayContext, subjectType: StatusSubject, subjectId: string) =>
  ctx.loaders
    .get<string, StatusChange[]>(
      `port-ops.history.${subjectType}`,
      async (em, ids) =>
        chronological(
          groupBy(
            await preparedIn(em, StatusChange, 'subjectId', ids, {}, { subjectType }),
            'subjectId',
            ids,
          ),
          (c) => c.recordedAt,
        ),
      PREPARED,
    )
    .load(subjectId);
