import type { EntityManager } from '@mikro-orm/knex';
import type { FilterQuery } from '@mikro-orm/core';
import type { Page } from '../gateway/schema/connection.js';
import { badInput, conflict } from '../kernel/errors.js';
import type { Principal } from '../kernel/principal.js';
import { checkDate, parseDate } from '../kernel/dates.js';
import { optionalText, parseEnum, requireText } from '../kernel/text.js';
import {
  actorOf,
  commit,
  commitPrepared,
  findOwned,
  findPage,
  guardedUpdate,
  illegalMove,
  isFinishedCall,
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
  StatusChange,
  StatusSubject,
  Vessel,
} from './entities.js';
import { pageOfModel, type CallTerms, type CallsModel } from './account-calls.js';
import { portByLocode, vesselByImo } from './reference-data.js';
import { cancelOrdersOfCall } from './service-orders.js';
import { preparedIn, preparedTransaction } from '../db/prepared.js';

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
    // The row before its history row: the history's version trigger finds the account through it
    // (one it cannot find moves the shared version, which would stale every account's answers).
    await tx.persist(call).flush();
    await recordChange(tx, StatusSubject.PORT_CALL, call.id, null, call.status, now, actorOf(principal), now);
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
  return preparedTransaction(deps.em, async (tx) => {
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
  }).catch((error: unknown) => {
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
  return commitPrepared(deps, async (tx) => {
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
    await recordChange(tx, StatusSubject.PORT_CALL, id, from, target, at, actor, now);
    const orderDrafts =
      target === PortCallStatus.CANCELLED ? await cancelOrdersOfCall(tx, call, now, actor) : [];
    const [[vessel], [port]] = await Promise.all([
      preparedIn(tx, Vessel, 'id', [call.vesselId]),
      preparedIn(tx, Port, 'id', [call.portId]),
    ]);
    if (!vessel || !port) throw new Error(`vessel or port of port call ${id} vanished`);
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
  /** The properties the caller reads of each call (every one when absent). */
  props?: readonly string[],
  /** The principal's account's calls in memory (account-calls.ts; never an admin's), when held. */
  model?: CallsModel,
) {
  const terms: CallTerms = {};
  if (filter.status) terms.status = parseEnum(PortCallStatus, filter.status, 'status');
  if (filter.portLocode) terms.portId = (await portByLocode(em, filter.portLocode)).id;
  if (filter.vesselImo) terms.vesselId = (await vesselByImo(em, filter.vesselImo)).id;
  if (filter.etaFrom) terms.etaFrom = checkDate(filter.etaFrom, 'etaFrom');
  if (filter.etaTo) terms.etaTo = checkDate(filter.etaTo, 'etaTo');
  // Upcoming calls first for SCHEDULED; otherwise most recent first. The id breaks ties so pages are
  // stable, in the same direction, so one index (…, eta, id) serves both orders.
  const direction = terms.status === PortCallStatus.SCHEDULED ? 'asc' : 'desc';
  if (model) return pageOfModel(model, terms, direction, page);
  const where: FilterQuery<PortCall> = { ...tenant(principal) };
  if (terms.status) where.status = terms.status;
  if (terms.portId) where.portId = terms.portId;
  if (terms.vesselId) where.vesselId = terms.vesselId;
  if (terms.etaFrom || terms.etaTo) {
    where.eta = {
      ...(terms.etaFrom ? { $gte: terms.etaFrom } : {}),
      ...(terms.etaTo ? { $lt: terms.etaTo } : {}),
    };
  }
  return findPage(em, PortCall, where, { eta: direction, id: direction }, page, props);
}
