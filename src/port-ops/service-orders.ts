import type { EntityManager } from '@mikro-orm/knex';
import type { FilterQuery } from '@mikro-orm/core';
import type { Page } from '../gateway/schema/connection.js';
import { badInput, conflict, notFound } from '../kernel/errors.js';
import { isUuid } from '../kernel/ids.js';
import type { Principal } from '../kernel/principal.js';
import type { EventDraft } from '../events/stage.js';
import { parseDate } from '../kernel/dates.js';
import { parseEnum } from '../kernel/text.js';
import {
  actorOf,
  changedConcurrently,
  checkOpenCall,
  commitOnOpenCall,
  commitUnderCall,
  findOwned,
  findPage,
  guardedUpdate,
  illegalMove,
  statusChange,
  tenant,
  type Deps,
} from './common.js';
import {
  Port,
  PortCall,
  ServiceOrder,
  ServiceOrderStatus,
  ServiceType,
  StatusChange,
  StatusSubject,
  Vendor,
} from './entities.js';
import { parseServiceDetails } from './details.js';
import { preparedIn, preparedInserts, preparedJoined } from '../db/prepared.js';

export const SERVICE_ORDER_TRANSITIONS: Readonly<Record<ServiceOrderStatus, readonly ServiceOrderStatus[]>> =
  {
    REQUESTED: [ServiceOrderStatus.CONFIRMED, ServiceOrderStatus.REJECTED, ServiceOrderStatus.CANCELLED],
    CONFIRMED: [ServiceOrderStatus.IN_PROGRESS, ServiceOrderStatus.CANCELLED],
    IN_PROGRESS: [ServiceOrderStatus.COMPLETED],
    COMPLETED: [],
    CANCELLED: [],
    REJECTED: [],
  };

/**
 * Moves that commit a vendor to work at the port: only while the call is neither DEPARTED nor
 * CANCELLED. Finishing (COMPLETED) or dropping (CANCELLED, REJECTED) an order is always allowed.
 */
const NEEDS_OPEN_CALL: readonly ServiceOrderStatus[] = [
  ServiceOrderStatus.CONFIRMED,
  ServiceOrderStatus.IN_PROGRESS,
];

export interface ServiceOrderInput {
  portCallId: string;
  serviceType: ServiceType;
  vendorId: string;
  details: unknown;
  requestedFor?: Date | string | null;
}

export function serviceOrderSnapshot(order: ServiceOrder): Record<string, unknown> {
  return {
    id: order.id,
    portCallId: order.portCallId,
    serviceType: order.serviceType,
    vendorId: order.vendorId,
    status: order.status,
    details: order.details,
  };
}

export async function createServiceOrder(
  deps: Deps,
  principal: Principal,
  input: ServiceOrderInput,
): Promise<ServiceOrder> {
  if (typeof input.portCallId !== 'string' || !input.portCallId) throw badInput('portCallId', 'is required');
  if (typeof input.vendorId !== 'string' || !input.vendorId) throw badInput('vendorId', 'is required');
  const serviceType = parseEnum(ServiceType, input.serviceType, 'serviceType');
  const details = parseServiceDetails(serviceType, input.details);
  const requestedFor = parseDate(input.requestedFor, 'requestedFor');
  const vendorId = input.vendorId;
  // The call (locked, or guarded on PostgreSQL: `commitOnOpenCall`), the vendor and the call's port
  // read in one statement; an id that is no UUID matches no vendor (and is not sent), and is
  // refused after the call's checks as before.
  return commitOnOpenCall(
    deps,
    principal,
    input.portCallId,
    ({ id, status }) =>
      `Port call ${id} is ${status}; services can only be ordered for calls that have not departed or been cancelled`,
    [
      { entity: Vendor, where: isUuid(vendorId) ? { id: vendorId, ...tenant(principal) } : { id: null } },
      { entity: Port, on: 'portId' },
    ],
    (call, [vendor, port]) => {
      if (!vendor) throw notFound('Vendor', vendorId);
      if (!port) throw new Error(`port ${call.portId} of port call ${call.id} vanished`);
      if (!vendor.active)
        throw conflict(`Vendor ${vendor.name} is inactive and takes no new orders`, { field: 'vendorId' });
      if (!vendor.services.includes(serviceType)) {
        throw badInput(
          'vendorId',
          `vendor ${vendor.name} does not offer ${serviceType} (offers ${vendor.services.join(', ')})`,
          { rule: 'VENDOR_SERVICE' },
        );
      }
      if (!vendor.ports.includes(port.locode)) {
        throw badInput(
          'vendorId',
          `vendor ${vendor.name} does not serve ${port.locode} (serves ${vendor.ports.join(', ')})`,
          { rule: 'VENDOR_PORT' },
        );
      }
      const now = deps.clock.now();
      const order = Object.assign(new ServiceOrder(), {
        accountId: call.accountId,
        portCallId: call.id,
        vendorId: vendor.id,
        serviceType,
        details,
        status: ServiceOrderStatus.REQUESTED,
        requestedFor: requestedFor ?? call.etb ?? call.eta,
        createdAt: now,
        updatedAt: now,
      });
      // The row before its history row: the history's version trigger finds the account through it
      // (one it cannot find moves the shared version, which would stale every account's answers).
      // Both are written with the event, in one round trip on PostgreSQL (`commitOnOpenCall`).
      const change = statusChange(
        StatusSubject.SERVICE_ORDER,
        order.id,
        null,
        order.status,
        now,
        actorOf(principal),
        now,
      );
      return {
        result: order,
        drafts: [
          {
            type: 'service_order.created',
            accountId: order.accountId,
            payload: { serviceOrder: serviceOrderSnapshot(order) },
          },
        ],
        rows: [
          { entity: ServiceOrder, items: [order] },
          { entity: StatusChange, items: [change] },
        ],
      };
    },
  );
}

/**
 * One guarded order move inside a transaction: the write, then its history row and its event for
 * the caller to write (with the other rows of its transaction, in one round trip on PostgreSQL).
 */
async function moveOrder(
  tx: EntityManager,
  order: ServiceOrder,
  to: ServiceOrderStatus,
  now: Date,
  actor: string,
): Promise<{ change: StatusChange; draft: EventDraft }> {
  const move = orderMove(order, to, now, actor);
  await guardedUpdate(tx, ServiceOrder, 'Service order', order.id, { status: move.from }, move.values);
  Object.assign(order, move.values);
  return move;
}

/** What moving `order` to `to` writes: its new values, its history row and its event. */
function orderMove(order: ServiceOrder, to: ServiceOrderStatus, now: Date, actor: string) {
  const from = order.status;
  const values = {
    status: to,
    updatedAt: now,
    ...(to === ServiceOrderStatus.COMPLETED ? { completedAt: now } : {}),
  };
  const change = statusChange(StatusSubject.SERVICE_ORDER, order.id, from, to, now, actor, now);
  const draft: EventDraft = {
    type: 'service_order.status_changed',
    accountId: order.accountId,
    payload: {
      serviceOrderId: order.id,
      portCallId: order.portCallId,
      from,
      to,
      at: now.toISOString(),
      actor,
    },
  };
  return { from, values, change, draft };
}

export async function transitionServiceOrder(
  deps: Deps,
  principal: Principal,
  id: string,
  to: ServiceOrderStatus,
): Promise<ServiceOrder> {
  const target = parseEnum(ServiceOrderStatus, to, 'status');
  const actor = actorOf(principal);
  if (!isUuid(id)) throw notFound('ServiceOrder', id);
  // The order read with its call, the call locked (or, on PostgreSQL, the move written only while the
  // call and the order are as read: `commitUnderCall`): no move of the call can come between the
  // check that it still takes work and the order's move.
  return commitUnderCall(deps, async (em, lock) => {
    const found = await preparedJoined(
      em,
      ServiceOrder,
      { id, ...tenant(principal) },
      [{ entity: PortCall, on: 'portCallId', lock }],
      lock,
    );
    // Every order has its call (a foreign key); the locked one is inner-joined.
    const call = found?.joined[0];
    if (!found || !call) throw notFound('ServiceOrder', id);
    const order = found.row;
    const allowed = SERVICE_ORDER_TRANSITIONS[order.status];
    if (!allowed.includes(target)) throw illegalMove('Service order', order.status, target, allowed);
    if (NEEDS_OPEN_CALL.includes(target))
      checkOpenCall(
        call,
        ({ id: callId, status }) =>
          `Service order ${id} cannot go to ${target}: its port call ${callId} is ${status} (an order of a departed or cancelled call may only be completed, cancelled or rejected)`,
      );
    // The guarded move is written with its history row and event, in one round trip on PostgreSQL.
    const { from, values, change, draft } = orderMove(order, target, deps.clock.now(), actor);
    return {
      call,
      result: Object.assign(order, values),
      drafts: [draft],
      rows: [{ entity: StatusChange, items: [change] }],
      guarded: {
        update: { entity: ServiceOrder, where: { id: order.id, status: from }, values },
        refused: () => changedConcurrently('Service order', order.id),
      },
    };
  });
}

/** Orders still to be worked when their call is cancelled: they are cancelled with it. */
const CANCELLED_WITH_CALL: readonly ServiceOrderStatus[] = [
  ServiceOrderStatus.REQUESTED,
  ServiceOrderStatus.CONFIRMED,
];

export async function cancelOrdersOfCall(
  tx: EntityManager,
  call: PortCall,
  now: Date,
  actor: string,
): Promise<EventDraft[]> {
  // The call's orders by prepared statement (a call has a few), those still open kept here.
  const open: readonly ServiceOrderStatus[] = [...CANCELLED_WITH_CALL, ServiceOrderStatus.IN_PROGRESS];
  const orders = (
    await preparedIn(tx, ServiceOrder, 'portCallId', [call.id], { createdAt: 'asc', id: 'asc' })
  ).filter((order) => open.includes(order.status));
  const working = orders.filter((o) => o.status === ServiceOrderStatus.IN_PROGRESS);
  if (working.length) {
    throw conflict(
      `Port call ${call.id} cannot be cancelled while service order(s) ${working.map((o) => o.id).join(', ')} are IN_PROGRESS; complete them first`,
      { serviceOrders: working.map((o) => o.id) },
    );
  }
  const moves = [];
  for (const order of orders)
    moves.push(await moveOrder(tx, order, ServiceOrderStatus.CANCELLED, now, actor));
  await preparedInserts(tx, [{ entity: StatusChange, items: moves.map((m) => m.change) }]);
  return moves.map((m) => m.draft);
}

export interface ServiceOrderFilter {
  portCallId?: string | null;
  vendorId?: string | null;
  status?: ServiceOrderStatus | null;
  serviceType?: ServiceType | null;
}

export async function listServiceOrders(
  em: EntityManager,
  principal: Principal,
  filter: ServiceOrderFilter,
  page: Page,
) {
  const where: FilterQuery<ServiceOrder> = { ...tenant(principal) };
  if (filter.portCallId)
    where.portCallId = (await findOwned(em, PortCall, 'PortCall', principal, filter.portCallId)).id;
  if (filter.vendorId)
    where.vendorId = (await findOwned(em, Vendor, 'Vendor', principal, filter.vendorId)).id;
  if (filter.status) where.status = parseEnum(ServiceOrderStatus, filter.status, 'status');
  if (filter.serviceType) where.serviceType = parseEnum(ServiceType, filter.serviceType, 'serviceType');
  // Newest first; ties by id in the same direction, so the (…, created_at, id) index serves it backwards.
  return findPage(em, ServiceOrder, where, { createdAt: 'desc', id: 'desc' }, page);
}
