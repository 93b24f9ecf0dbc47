import type { EntityManager } from '@mikro-orm/knex';
import type { FilterQuery } from '@mikro-orm/core';
import type { Page } from '../gateway/schema/connection.js';
import { badInput, conflict, notFound } from '../kernel/errors.js';
import type { Principal } from '../kernel/principal.js';
import type { EventDraft } from '../events/stage.js';
import {
  actorOf,
  commit,
  findOwned,
  findPage,
  guardedUpdate,
  illegalMove,
  lockPortCall,
  recordChange,
  tenant,
  uniqueConflict,
  type Deps,
} from './common.js';
import {
  AttachmentType,
  Document,
  Port,
  PortCall,
  PortCallStatus,
  ServiceOrder,
  ServiceOrderStatus,
  ServiceType,
  StatusChange,
  StatusSubject,
  Vendor,
  Vessel,
  VesselType,
} from './entities.js';
import { parseServiceDetails } from './details.js';
import { checkDate, parseDate } from '../kernel/dates.js';
import { optionalText, parseEnum, requireText } from '../kernel/text.js';
import { parseCountryCode, parseEmail, parseImo, parseLocode, parseTimeZone } from './validation.js';
import type { ServiceDeps } from '../kernel/deps.js';

// ---------------------------------------------------------------- reference data (admin-only writes)

export interface VesselInput {
  imo: string;
  name: string;
  flag: string;
  type: VesselType;
  grossTonnage: number;
  deadweight: number;
  yearBuilt: number;
}

export async function createVessel(
  { em, clock }: Pick<ServiceDeps, 'em' | 'clock'>,
  input: VesselInput,
): Promise<Vessel> {
  const imo = parseImo(input.imo);
  const values = {
    imo,
    name: requireText(input.name, 'name', 200),
    flag: parseCountryCode(input.flag),
    type: parseEnum(VesselType, input.type, 'type'),
    grossTonnage: positiveInt(input.grossTonnage, 'grossTonnage'),
    deadweight: positiveInt(input.deadweight, 'deadweight'),
    yearBuilt: positiveInt(input.yearBuilt, 'yearBuilt'),
  };
  if (values.yearBuilt < 1900 || values.yearBuilt > clock.now().getUTCFullYear() + 3) {
    throw badInput('yearBuilt', `must be between 1900 and ${clock.now().getUTCFullYear() + 3}`);
  }
  const vessel = em.create(Vessel, { ...values, createdAt: clock.now() });
  await em.persistAndFlush(vessel).catch((error: unknown) => {
    throw uniqueConflict(error, {
      imo: () => conflict(`A vessel with IMO ${imo} already exists`, { field: 'imo' }),
    });
  });
  return vessel;
}

function positiveInt(value: number, field: string): number {
  if (!Number.isInteger(value) || value <= 0)
    throw badInput(field, `must be a positive integer (got ${value})`);
  return value;
}

export interface PortInput {
  locode: string;
  name: string;
  timeZone: string;
}

export async function createPort(
  { em, clock }: Pick<ServiceDeps, 'em' | 'clock'>,
  input: PortInput,
): Promise<Port> {
  const locode = parseLocode(input.locode, 'locode');
  const values = {
    locode,
    name: requireText(input.name, 'name', 200),
    country: locode.slice(0, 2),
    timeZone: parseTimeZone(input.timeZone),
  };
  const port = em.create(Port, { ...values, createdAt: clock.now() });
  await em.persistAndFlush(port).catch((error: unknown) => {
    throw uniqueConflict(error, {
      locode: () => conflict(`A port with UN/LOCODE ${locode} already exists`, { field: 'locode' }),
    });
  });
  return port;
}

export async function vesselByImo(em: EntityManager, raw: string, field = 'vesselImo'): Promise<Vessel> {
  const imo = parseImo(raw, field);
  const vessel = await em.findOne(Vessel, { imo });
  if (!vessel) throw notFound('Vessel', imo);
  return vessel;
}

export async function portByLocode(em: EntityManager, raw: string, field = 'portLocode'): Promise<Port> {
  const locode = parseLocode(raw, field);
  const port = await em.findOne(Port, { locode });
  if (!port) throw notFound('Port', locode);
  return port;
}

// ---------------------------------------------------------------- port calls

/** The port-call state machine: every legal move, and nothing else. */
export const PORT_CALL_TRANSITIONS: Readonly<Record<PortCallStatus, readonly PortCallStatus[]>> = {
  SCHEDULED: [PortCallStatus.ARRIVED, PortCallStatus.CANCELLED],
  ARRIVED: [PortCallStatus.BERTHED, PortCallStatus.CANCELLED],
  BERTHED: [PortCallStatus.DEPARTED],
  DEPARTED: [],
  CANCELLED: [],
};

/** The actual-time field each transition stamps. */
const ACTUAL_OF: Partial<Record<PortCallStatus, 'ata' | 'atb' | 'atd'>> = {
  ARRIVED: 'ata',
  BERTHED: 'atb',
  DEPARTED: 'atd',
};

/** A call that has departed or been cancelled takes no new work and no further changes. */
const isFinishedCall = (status: PortCallStatus): boolean =>
  status === PortCallStatus.DEPARTED || status === PortCallStatus.CANCELLED;

export interface PortCallInput {
  vesselImo: string;
  portLocode: string;
  voyageReference: string;
  agent?: string | null;
  eta: Date | string;
  etb?: Date | string | null;
  etd?: Date | string | null;
}

export interface PortCallPatch {
  voyageReference?: string | null;
  agent?: string | null;
  eta?: Date | string | null;
  etb?: Date | string | null;
  etd?: Date | string | null;
}

const PATCHABLE = ['voyageReference', 'agent', 'eta', 'etb', 'etd'] as const;

function checkEstimates(eta: Date, etb: Date | null, etd: Date | null): void {
  if (etb && etb < eta) throw badInput('etb', 'must not be before eta');
  if (etd && etd < (etb ?? eta)) throw badInput('etd', `must not be before ${etb ? 'etb' : 'eta'}`);
}

/** The unique index (account, voyage reference) decides; this names the clash instead of a 500. */
const voyageTaken = (error: unknown, voyageReference: string) =>
  uniqueConflict(error, {
    voyage_reference: () =>
      conflict(`Voyage reference '${voyageReference}' is already used by another port call of this account`, {
        field: 'voyageReference',
      }),
  });

export function portCallSnapshot(call: PortCall, vessel: Vessel, port: Port): Record<string, unknown> {
  return {
    id: call.id,
    status: call.status,
    vesselImo: vessel.imo,
    portLocode: port.locode,
    voyageReference: call.voyageReference,
    eta: call.eta.toISOString(),
    etb: call.etb?.toISOString() ?? null,
    etd: call.etd?.toISOString() ?? null,
  };
}

export async function createPortCall(
  deps: Deps,
  principal: Principal,
  input: PortCallInput,
): Promise<PortCall> {
  const voyageReference = requireText(input.voyageReference, 'voyageReference', 64);
  const agent = optionalText(input.agent, 'agent', 200);
  const eta = parseDate(input.eta, 'eta');
  if (!eta) throw badInput('eta', 'is required');
  const etb = parseDate(input.etb, 'etb');
  const etd = parseDate(input.etd, 'etd');
  checkEstimates(eta, etb, etd);
  const vessel = await vesselByImo(deps.em, input.vesselImo);
  const port = await portByLocode(deps.em, input.portLocode);
  return commit(deps, async (tx) => {
    const now = deps.clock.now();
    const call = tx.create(PortCall, {
      accountId: principal.accountId,
      vesselId: vessel.id,
      portId: port.id,
      voyageReference,
      agent,
      status: PortCallStatus.SCHEDULED,
      eta,
      etb,
      etd,
      createdAt: now,
      updatedAt: now,
    });
    tx.persist(call);
    recordChange(tx, StatusSubject.PORT_CALL, call.id, null, call.status, now, actorOf(principal), now);
    return {
      result: call,
      drafts: [
        {
          type: 'port_call.created',
          accountId: call.accountId,
          payload: { portCall: portCallSnapshot(call, vessel, port) },
        },
      ],
    };
  }).catch((error: unknown) => {
    throw voyageTaken(error, voyageReference);
  });
}

/**
 * Changes estimates, agent or voyage reference. An empty patch is a 400 (nothing to update);
 * a patch that changes nothing writes nothing, so `updatedAt` moves only on a real change.
 */
export async function updatePortCall(
  deps: Deps,
  principal: Principal,
  id: string,
  patch: PortCallPatch,
): Promise<PortCall> {
  if (PATCHABLE.every((field) => patch[field] === undefined))
    throw badInput('patch', `nothing to update; give at least one of ${PATCHABLE.join(', ')}`);
  const voyageReference =
    patch.voyageReference === undefined || patch.voyageReference === null
      ? undefined
      : requireText(patch.voyageReference, 'voyageReference', 64);
  return deps.em
    .transactional(async (tx) => {
      const call = await findOwned(tx, PortCall, 'PortCall', principal, id, { disableIdentityMap: true });
      if (isFinishedCall(call.status))
        throw conflict(`Port call ${id} is ${call.status} and can no longer be changed`, {
          status: call.status,
        });
      const eta = patch.eta === undefined ? call.eta : parseDate(patch.eta, 'eta');
      if (!eta) throw badInput('eta', 'cannot be cleared');
      const next = {
        eta,
        etb: patch.etb === undefined ? (call.etb ?? null) : parseDate(patch.etb, 'etb'),
        etd: patch.etd === undefined ? (call.etd ?? null) : parseDate(patch.etd, 'etd'),
        voyageReference: voyageReference ?? call.voyageReference,
        agent: patch.agent === undefined ? (call.agent ?? null) : optionalText(patch.agent, 'agent', 200),
      };
      checkEstimates(next.eta, next.etb, next.etd);
      const same = (a: unknown, b: unknown) =>
        a instanceof Date || b instanceof Date
          ? (a as Date | null)?.getTime() === (b as Date | null)?.getTime()
          : a === b;
      const changed = PATCHABLE.some((field) => !same(next[field], call[field] ?? null));
      if (!changed) return call;
      const values = { ...next, updatedAt: deps.clock.now() };
      await guardedUpdate(
        tx,
        PortCall,
        'Port call',
        id,
        { status: call.status, updatedAt: call.updatedAt },
        values,
      );
      return Object.assign(call, values);
    })
    .catch((error: unknown) => {
      throw voyageTaken(error, voyageReference ?? '');
    });
}

/**
 * Moves a call along its state machine. The read, the checks and the guarded write run in one
 * transaction, so two concurrent moves cannot both succeed. Cancelling also cancels the call's
 * REQUESTED and CONFIRMED service orders, and is refused while any order is IN_PROGRESS.
 */
export async function transitionPortCall(
  deps: Deps,
  principal: Principal,
  id: string,
  to: PortCallStatus,
  atInput?: Date | string | null,
): Promise<PortCall> {
  const target = parseEnum(PortCallStatus, to, 'status');
  const now = deps.clock.now();
  const at = parseDate(atInput, 'at') ?? now;
  if (at > now) throw badInput('at', 'an actual time cannot be in the future');
  const actor = actorOf(principal);
  return commit(deps, async (tx) => {
    const call = await findOwned(tx, PortCall, 'PortCall', principal, id, { disableIdentityMap: true });
    const from = call.status;
    if (!PORT_CALL_TRANSITIONS[from].includes(target))
      throw illegalMove('Port call', from, target, PORT_CALL_TRANSITIONS[from]);
    const field = ACTUAL_OF[target];
    const previous = call.atb ?? call.ata;
    if (field && previous && at < previous)
      throw badInput('at', `must not be before the previous actual time ${previous.toISOString()}`);
    const values = { status: target, ...(field ? { [field]: at } : {}), updatedAt: now };
    // The call's row is locked from here on, so no order can be created or confirmed meanwhile.
    await guardedUpdate(tx, PortCall, 'Port call', id, { status: from }, values);
    recordChange(tx, StatusSubject.PORT_CALL, id, from, target, at, actor, now);
    const orderDrafts =
      target === PortCallStatus.CANCELLED ? await cancelOpenOrders(tx, call, now, actor) : [];
    const [vessel, port] = await Promise.all([
      tx.findOneOrFail(Vessel, call.vesselId),
      tx.findOneOrFail(Port, call.portId),
    ]);
    return {
      result: Object.assign(call, values),
      drafts: [
        {
          type: 'port_call.status_changed',
          accountId: call.accountId,
          payload: {
            portCallId: id,
            from,
            to: target,
            at: at.toISOString(),
            actor,
            vesselImo: vessel.imo,
            portLocode: port.locode,
          },
        },
        ...orderDrafts,
      ],
    };
  });
}

/** Orders still to be worked when their call is cancelled: they are cancelled with it. */
const CANCELLED_WITH_CALL: readonly ServiceOrderStatus[] = [
  ServiceOrderStatus.REQUESTED,
  ServiceOrderStatus.CONFIRMED,
];

async function cancelOpenOrders(
  tx: EntityManager,
  call: PortCall,
  now: Date,
  actor: string,
): Promise<EventDraft[]> {
  const orders = await tx.find(
    ServiceOrder,
    {
      portCallId: call.id,
      status: { $in: [...CANCELLED_WITH_CALL, ServiceOrderStatus.IN_PROGRESS] },
    },
    { disableIdentityMap: true, orderBy: { createdAt: 'asc', id: 'asc' } },
  );
  const working = orders.filter((o) => o.status === ServiceOrderStatus.IN_PROGRESS);
  if (working.length) {
    throw conflict(
      `Port call ${call.id} cannot be cancelled while service order(s) ${working.map((o) => o.id).join(', ')} are IN_PROGRESS; complete them first`,
      { serviceOrders: working.map((o) => o.id) },
    );
  }
  const drafts: EventDraft[] = [];
  for (const order of orders)
    drafts.push(await moveOrder(tx, order, ServiceOrderStatus.CANCELLED, now, actor));
  return drafts;
}

/**
 * Deleting is for mistakes: a call that has service orders or documents has history worth
 * keeping and must be CANCELLED instead. The call is locked first, so an order or document
 * created concurrently either sees it gone or is counted here.
 */
export async function deletePortCall(deps: Deps, principal: Principal, id: string): Promise<string> {
  await deps.em.transactional(async (tx) => {
    await lockPortCall(tx, id, principal);
    const [orders, documents] = await Promise.all([
      tx.count(ServiceOrder, { portCallId: id }),
      tx.count(Document, { attachedType: AttachmentType.PORT_CALL, attachedId: id }),
    ]);
    if (orders > 0 || documents > 0) {
      throw conflict(
        `Port call ${id} has ${orders} service order(s) and ${documents} document(s); cancel it instead of deleting it`,
        { serviceOrders: orders, documents },
      );
    }
    await tx.nativeDelete(StatusChange, { subjectType: StatusSubject.PORT_CALL, subjectId: id });
    await tx.nativeDelete(PortCall, { id });
  });
  return id;
}

/** Locks the call (the principal's, when given) for the rest of the transaction, then checks it still takes work. */
async function lockOpenCall(
  tx: EntityManager,
  callId: string,
  refusal: (call: PortCall) => string,
  principal?: Principal,
): Promise<PortCall> {
  const call = await lockPortCall(tx, callId, principal);
  if (isFinishedCall(call.status))
    throw conflict(refusal(call), { status: call.status, portCallId: call.id });
  return call;
}

export interface PortCallFilter {
  status?: PortCallStatus | null;
  portLocode?: string | null;
  vesselImo?: string | null;
  etaFrom?: Date | null;
  etaTo?: Date | null;
}

export async function listPortCalls(
  em: EntityManager,
  principal: Principal,
  filter: PortCallFilter,
  page: Page,
) {
  const where: FilterQuery<PortCall> = { ...tenant(principal) };
  if (filter.status) where.status = parseEnum(PortCallStatus, filter.status, 'status');
  if (filter.portLocode) where.portId = (await portByLocode(em, filter.portLocode)).id;
  if (filter.vesselImo) where.vesselId = (await vesselByImo(em, filter.vesselImo)).id;
  if (filter.etaFrom || filter.etaTo) {
    where.eta = {
      ...(filter.etaFrom ? { $gte: checkDate(filter.etaFrom, 'etaFrom') } : {}),
      ...(filter.etaTo ? { $lt: checkDate(filter.etaTo, 'etaTo') } : {}),
    };
  }
  // Upcoming calls first for SCHEDULED; otherwise most recent first. The id breaks ties so pages are
  // stable, in the same direction, so one index (…, eta, id) serves both orders.
  const direction = filter.status === PortCallStatus.SCHEDULED ? 'asc' : 'desc';
  return findPage(em, PortCall, where, { eta: direction, id: direction }, page);
}

// ---------------------------------------------------------------- vendors

export interface VendorInput {
  name: string;
  services: ServiceType[];
  ports: string[];
  contactEmail?: string | null;
  contactPhone?: string | null;
  active?: boolean | null;
}

async function vendorValues(em: EntityManager, input: Partial<VendorInput>) {
  const values: Partial<Vendor> = {};
  if (input.name !== undefined) values.name = requireText(input.name, 'name', 200);
  if (input.services !== undefined) {
    if (input.services.length === 0) throw badInput('services', 'must name at least one service type');
    values.services = [...new Set(input.services.map((s, i) => parseEnum(ServiceType, s, `services[${i}]`)))];
  }
  if (input.ports !== undefined) {
    if (input.ports.length === 0) throw badInput('ports', 'must name at least one port');
    const locodes = [...new Set(input.ports.map((p, i) => parseLocode(p, `ports[${i}]`)))];
    const known = new Set((await em.find(Port, { locode: { $in: locodes } })).map((p) => p.locode));
    const unknown = locodes.filter((l) => !known.has(l));
    if (unknown.length)
      throw badInput('ports', `unknown port(s): ${unknown.join(', ')}`, { rule: 'UNKNOWN_PORT' });
    values.ports = locodes;
  }
  if (input.contactEmail !== undefined) values.contactEmail = parseEmail(input.contactEmail);
  if (input.contactPhone !== undefined)
    values.contactPhone = optionalText(input.contactPhone, 'contactPhone', 40);
  if (input.active !== undefined && input.active !== null) values.active = input.active;
  return values;
}

export async function createVendor(deps: Deps, principal: Principal, input: VendorInput): Promise<Vendor> {
  const values = await vendorValues(deps.em, input);
  const vendor = deps.em.create(Vendor, {
    ...values,
    name: values.name!,
    services: values.services!,
    ports: values.ports!,
    active: values.active ?? true,
    accountId: principal.accountId,
    createdAt: deps.clock.now(),
  });
  await deps.em.persistAndFlush(vendor);
  return vendor;
}

export async function updateVendor(
  deps: Deps,
  principal: Principal,
  id: string,
  patch: Partial<VendorInput>,
): Promise<Vendor> {
  const vendor = await findOwned(deps.em, Vendor, 'Vendor', principal, id);
  Object.assign(vendor, await vendorValues(deps.em, patch));
  await deps.em.flush();
  return vendor;
}

export interface VendorFilter {
  portLocode?: string | null;
  serviceType?: ServiceType | null;
  active?: boolean | null;
}

/** Vendors are few per account; the JSON-array filters run in code over the account's list. */
export async function listVendors(em: EntityManager, principal: Principal, filter: VendorFilter, page: Page) {
  const where: FilterQuery<Vendor> = { ...tenant(principal) };
  if (filter.active !== undefined && filter.active !== null) where.active = filter.active;
  const locode = filter.portLocode ? parseLocode(filter.portLocode) : null;
  const service = filter.serviceType ? parseEnum(ServiceType, filter.serviceType, 'serviceType') : null;
  if (!locode && !service) return findPage(em, Vendor, where, { name: 'asc', id: 'asc' }, page);
  const all = (await em.find(Vendor, where, { orderBy: { name: 'asc', id: 'asc' } })).filter(
    (v) => (!locode || v.ports.includes(locode)) && (!service || v.services.includes(service)),
  );
  return { items: all.slice(page.offset, page.offset + page.limit), total: all.length };
}

// ---------------------------------------------------------------- service orders

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
  return commit(deps, async (tx) => {
    const call = await lockOpenCall(
      tx,
      input.portCallId,
      ({ id, status }) =>
        `Port call ${id} is ${status}; services can only be ordered for calls that have not departed or been cancelled`,
      principal,
    );
    const vendor = await findOwned(tx, Vendor, 'Vendor', principal, input.vendorId);
    const port = await tx.findOneOrFail(Port, call.portId);
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
    const order = tx.create(ServiceOrder, {
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
    tx.persist(order);
    recordChange(tx, StatusSubject.SERVICE_ORDER, order.id, null, order.status, now, actorOf(principal), now);
    return {
      result: order,
      drafts: [
        {
          type: 'service_order.created',
          accountId: order.accountId,
          payload: { serviceOrder: serviceOrderSnapshot(order) },
        },
      ],
    };
  });
}

/** One guarded order move inside a transaction: the write, its history row and its event. */
async function moveOrder(
  tx: EntityManager,
  order: ServiceOrder,
  to: ServiceOrderStatus,
  now: Date,
  actor: string,
): Promise<EventDraft> {
  const from = order.status;
  const values = {
    status: to,
    updatedAt: now,
    ...(to === ServiceOrderStatus.COMPLETED ? { completedAt: now } : {}),
  };
  await guardedUpdate(tx, ServiceOrder, 'Service order', order.id, { status: from }, values);
  recordChange(tx, StatusSubject.SERVICE_ORDER, order.id, from, to, now, actor, now);
  Object.assign(order, values);
  return {
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
}

export async function transitionServiceOrder(
  deps: Deps,
  principal: Principal,
  id: string,
  to: ServiceOrderStatus,
): Promise<ServiceOrder> {
  const target = parseEnum(ServiceOrderStatus, to, 'status');
  const actor = actorOf(principal);
  return commit(deps, async (tx) => {
    const order = await findOwned(tx, ServiceOrder, 'ServiceOrder', principal, id, {
      disableIdentityMap: true,
    });
    const allowed = SERVICE_ORDER_TRANSITIONS[order.status];
    if (!allowed.includes(target)) throw illegalMove('Service order', order.status, target, allowed);
    if (NEEDS_OPEN_CALL.includes(target)) {
      await lockOpenCall(
        tx,
        order.portCallId,
        ({ status }) =>
          `Service order ${id} cannot go to ${target}: its port call ${order.portCallId} is ${status} (an order of a departed or cancelled call may only be completed, cancelled or rejected)`,
      );
    }
    const draft = await moveOrder(tx, order, target, deps.clock.now(), actor);
    return { result: order, drafts: [draft] };
  });
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
