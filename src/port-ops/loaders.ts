import type { EntityManager } from '@mikro-orm/knex';
import type { EntityClass, FilterQuery } from '@mikro-orm/core';
import { findPlain } from '../db/plain.js';
import type { GatewayContext } from '../gateway/context.js';
import { Port, PortCall, ServiceOrder, StatusChange, StatusSubject, Vendor, Vessel } from './entities.js';

/*
 * Every relation of the port-ops graph goes through a per-request DataLoader: one statement per
 * relation per request, however many parents ask. Keys come from rows the caller could already
 * read (tenancy was applied to the parent), so the loaders need no tenant filter of their own.
 * Loaded rows are only read, so they skip the ORM's hydration (src/db/plain.ts).
 */
function byId<T extends { id: string }>(entity: EntityClass<T>) {
  return async (em: EntityManager, ids: readonly string[]): Promise<Array<T | Error>> => {
    const rows = await findPlain(em, entity, { id: { $in: [...ids] } } as unknown as FilterQuery<T>);
    const found = new Map(rows.map((r) => [r.id, r]));
    return ids.map((id) => found.get(id) ?? new Error(`${String(entity)} ${id} vanished`));
  };
}

function groupBy<T, K extends keyof T>(rows: T[], key: K, keys: readonly T[K][]): T[][] {
  const groups = new Map<T[K], T[]>(keys.map((k) => [k, []]));
  for (const row of rows) groups.get(row[key])?.push(row);
  return keys.map((k) => groups.get(k)!);
}

const vesselById = byId(Vessel);
const portById = byId(Port);
const vendorById = byId(Vendor);
const portCallById = byId(PortCall);

export const loadVessel = (ctx: GatewayContext, id: string) =>
  ctx.loaders.get('port-ops.vessel', vesselById).load(id);
export const loadPort = (ctx: GatewayContext, id: string) =>
  ctx.loaders.get('port-ops.port', portById).load(id);
export const loadVendor = (ctx: GatewayContext, id: string) =>
  ctx.loaders.get('port-ops.vendor', vendorById).load(id);
export const loadPortCall = (ctx: GatewayContext, id: string) =>
  ctx.loaders.get('port-ops.portCall', portCallById).load(id);

export const loadServiceOrders = (ctx: GatewayContext, portCallId: string) =>
  ctx.loaders
    .get<string, ServiceOrder[]>('port-ops.serviceOrdersByCall', async (em, ids) =>
      groupBy(
        await findPlain(
          em,
          ServiceOrder,
          { portCallId: { $in: [...ids] } },
          { orderBy: { createdAt: 'asc', id: 'asc' } },
        ),
        'portCallId',
        ids,
      ),
    )
    .load(portCallId);

export const loadStatusHistory = (ctx: GatewayContext, subjectType: StatusSubject, subjectId: string) =>
  ctx.loaders
    .get<string, StatusChange[]>(`port-ops.history.${subjectType}`, async (em, ids) =>
      groupBy(
        await findPlain(
          em,
          StatusChange,
          { subjectType, subjectId: { $in: [...ids] } },
          { orderBy: { recordedAt: 'asc', id: 'asc' } },
        ),
        'subjectId',
        ids,
      ),
    )
    .load(subjectId);
