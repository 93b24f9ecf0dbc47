import { isUniqueViolation } from '../db/errors.js';
import type { EntityManager } from '@mikro-orm/knex';
import { type EntityClass, type EntityName, type FilterQuery, type QueryOrderMap } from '@mikro-orm/core';
import { isUuid } from '../kernel/ids.js';
import {
  guardsWrites,
  preparedGuardedWrite,
  preparedIn,
  preparedInsert,
  preparedJoined,
  preparedPage,
  preparedTransaction,
  preparedUpdate,
  type InsertBatch,
  type JoinedRows,
  type LockJoin,
} from '../db/prepared.js';
import type { Page } from '../gateway/schema/connection.js';
import { eventRecords, stageEvents, type EventDraft, type GuardedUpdate } from '../events/stage.js';
import { EventRecord } from '../events/entities.js';
import { conflict, notFound, type AppError } from '../kernel/errors.js';
import { isAdmin, type Principal } from '../kernel/principal.js';
import { PortCall, PortCallStatus, StatusChange, type StatusSubject } from './entities.js';
import type { ServiceDeps } from '../kernel/deps.js';

/** What a port-ops service needs from the outside world: the one shape of every domain service. */
export type Deps = ServiceDeps;

/** A change run by `commit`: its result, its events, and the rows it leaves to write with them. */
type Change<T> = (
  tx: EntityManager,
) => Promise<{ result: T; drafts: EventDraft[]; rows?: InsertBatch[]; guarded?: GuardedUpdate }>;

/**
 * Runs a change in one transaction with its staged events, then publishes them after commit. The
 * change may leave rows to insert (`rows`: a new order, a history row) and a guarded update
 * (`guarded`: an order's move): they are written with the events, in one round trip on PostgreSQL
 * (`preparedInserts`, `preparedUpdateWithInserts`), the update first, the rows in the order given.
 */
export function commit<T>(deps: Deps, change: Change<T>): Promise<T> {
  return committed(deps, change, (work) => deps.em.transactional(work));
}

/**
 * `commit` for a change that reads and writes by prepared statements alone (src/db/prepared.ts),
 * in a transaction begun on the connection itself (`preparedTransaction`), without the ORM's
 * transaction machinery (about a fifth of a new order's time in process). An ORM query in the
 * change throws, and rolls it back.
 */
export function commitPrepared<T>(deps: Deps, change: Change<T>): Promise<T> {
  return committed(deps, change, (work) => preparedTransaction(deps.em, work));
}

async function committed<T>(
  deps: Deps,
  change: Change<T>,
  transaction: <R>(work: (tx: EntityManager) => Promise<R>) => Promise<R>,
): Promise<T> {
  const { result, events } = await transaction(async (tx) => {
    const { result, drafts, rows, guarded } = await change(tx);
    return { result, events: await stageEvents(tx, deps, drafts, rows, guarded) };
  });
  await deps.events.publish(events);
  return result;
}

/** A change under one port call (`commitUnderCall`): the call as it read it, and what it writes. */
type CallChange<T> = {
  call: Pick<PortCall, 'id' | 'status'>;
  result: T;
  drafts: EventDraft[];
  rows: InsertBatch[];
  guarded?: GuardedUpdate;
};

/**
 * A change that writes under one port call (a new order, an order's move): `change` reads the call
 * (and what it checks), locked when `lock` is set, checks, and returns the call's status as read
 * with its rows and, for a move, its guarded update. On PostgreSQL, outside a transaction, without
 * one: the reads unlocked, then one statement that writes the update, the rows and the events only
 * while the call is still in the status it was read in (and the update's row in its own), holding
 * the call `for share` until it commits (`preparedGuardedWrite`): two round trips instead of four
 * (`BEGIN`, the locked read, the write, `COMMIT`), each of which waits for a turn of the event loop
 * under load. When that writes nothing (the call or the row moved meanwhile), the change runs
 * again in a transaction that locks the call (`commitPrepared`), which answers as they now stand
 * (a 409 for a call that departed, or for a move the order's new status does not allow). Elsewhere
 * (SQLite, whose transaction costs no round trip; inside a transaction) it is that transaction from
 * the start. Events are published after commit either way.
 */
export async function commitUnderCall<T>(
  deps: Deps,
  change: (em: EntityManager, lock: boolean) => Promise<CallChange<T>>,
): Promise<T> {
  const locked = () => commitPrepared(deps, (tx) => change(tx, true));
  if (!guardsWrites(deps.em)) return locked();
  const { call, result, drafts, rows, guarded } = await change(deps.em, false);
  const { records, events } = eventRecords(deps, drafts);
  const written = await preparedGuardedWrite(
    deps.em,
    { entity: PortCall, where: { id: call.id, status: call.status } },
    [...rows, { entity: EventRecord, items: records }],
    guarded?.update,
  );
  if (!written) return locked();
  await deps.events.publish(events);
  return result;
}

/**
 * A change that only adds rows under an open call of the principal (a new order, its history row),
 * by `commitUnderCall`: the call read with `joins` as `lockPortCall` reads them (unlocked on the
 * guarded path), checked to be open, then `addition` builds the rows.
 */
export function commitOnOpenCall<T, const J extends readonly LockJoin[]>(
  deps: Deps,
  principal: Principal,
  callId: string,
  refusal: (call: Pick<PortCall, 'id' | 'status'>) => string,
  joins: J,
  addition: (call: PortCall, joined: JoinedRows<J>) => Omit<CallChange<T>, 'call'>,
): Promise<T> {
  return commitUnderCall(deps, async (em, lock) => {
    const { call, joined } = await readPortCall(em, callId, lock, principal, joins);
    checkOpenCall(call, refusal);
    return { call, ...addition(call, joined) };
  });
}

/** Writes one status-history row in the transaction (its subject's row must be written first). */
export async function recordChange(
  tx: EntityManager,
  ...row: Parameters<typeof statusChange>
): Promise<void> {
  await preparedInsert(tx, StatusChange, [statusChange(...row)]);
}

/** One status-history row, not yet written (`recordChange` writes it; `commit` takes it as a row). */
export function statusChange(
  subjectType: StatusSubject,
  subjectId: string,
  from: string | null,
  to: string,
  at: Date,
  actor: string,
  recordedAt: Date,
): StatusChange {
  return Object.assign(new StatusChange(), { subjectType, subjectId, from, to, at, actor, recordedAt });
}

/** The 409 for a move a state machine does not allow, naming both states and the legal ones. */
export function illegalMove(what: string, from: string, to: string, allowed: readonly string[]): AppError {
  return conflict(
    `${what} cannot go from ${from} to ${to}${allowed.length ? ` (from ${from} it may go to ${allowed.join(' or ')})` : ` (${from} is final)`}`,
    { from, to, allowed },
  );
}

/** How a change is attributed in status history and events. */
export function actorOf(principal: Principal): string {
  if (principal.userId) return `user:${principal.userId}`;
  if (principal.credential.kind === 'oauth_token' && principal.clientId)
    return `client:${principal.clientId}`;
  return `${principal.credential.kind}:${principal.credential.id}`;
}

/** The tenancy filter: an account sees its own rows; `admin` sees every account's. */
export function tenant(principal: Principal): { accountId?: string } {
  return isAdmin(principal) ? {} : { accountId: principal.accountId };
}

/**
 * Loads one tenant-owned row or throws 404. Another account's id is indistinguishable from an
 * unknown one, so ids leak nothing across tenants. With `disableIdentityMap`, the row is a plain
 * snapshot read by one prepared statement (src/db/plain.ts), outside the identity map: inside a
 * transaction, the guarded writes below are then the only writes and nothing is flushed behind
 * their back.
 */
export async function findOwned<T extends object>(
  em: EntityManager,
  entity: EntityClass<T>,
  label: string,
  principal: Principal,
  id: string,
  options: { disableIdentityMap?: boolean } = {},
): Promise<T> {
  if (!isUuid(id)) throw notFound(label, id);
  const row = options.disableIdentityMap
    ? (await preparedIn(em, entity, 'id', [id], {}, tenant(principal)))[0]
    : await em.findOne(entity, { id, ...tenant(principal) } as FilterQuery<T>);
  if (!row) throw notFound(label, id);
  return row;
}

/**
 * Check-then-act under concurrency: writes only if the row still matches what the caller read
 * (`expected`, e.g. its status), and holds the row lock until commit. Zero affected rows means
 * another request changed it in between, which is a 409 the client resolves by reloading.
 * Writing `values` equal to `expected` is the "lock and verify" form: nothing changes, but a
 * concurrent writer must now wait for this transaction.
 */
export async function guardedUpdate<T extends object>(
  tx: EntityManager,
  entity: EntityClass<T>,
  label: string,
  id: string,
  expected: Partial<Record<keyof T & string, unknown>>,
  values: Partial<Record<keyof T & string, unknown>>,
): Promise<void> {
  const affected = await preparedUpdate(tx, entity, { ...expected, id }, values);
  if (affected !== 1) throw changedConcurrently(label, id);
}

/** The 409 of a guarded write whose row another request changed in between. */
export function changedConcurrently(label: string, id: string): AppError {
  return conflict(`${label} ${id} was changed concurrently; reload and retry`, { id, reason: 'CONCURRENT' });
}

/**
 * Locks a port call's row until commit and reads it, in one statement (src/db/prepared.ts,
 * `preparedLockJoined`), so it cannot be moved or deleted between the caller's checks and writes,
 * with the rows of `joins` the caller checks against (a new order's vendor, the call's port) read
 * in the same statement. With a principal, the call must be theirs (404 otherwise); without one,
 * `id` comes from a row the caller was already allowed to read. The call is a plain snapshot,
 * outside the identity map.
 */
export async function lockPortCall<const J extends readonly LockJoin[] = []>(
  tx: EntityManager,
  id: string,
  principal?: Principal,
  joins?: J,
): Promise<{ call: PortCall; joined: JoinedRows<J> }> {
  return readPortCall(tx, id, true, principal, joins);
}

/**
 * The call (the principal's, when given) with `joins`, locked or not (`preparedJoined`), or its
 * 404; an id that is no UUID is not sent.
 */
async function readPortCall<const J extends readonly LockJoin[]>(
  em: EntityManager,
  id: string,
  lock: boolean,
  principal?: Principal,
  joins?: J,
): Promise<{ call: PortCall; joined: JoinedRows<J> }> {
  if (!isUuid(id)) throw notFound('PortCall', id);
  const found = await preparedJoined(
    em,
    PortCall,
    { id, ...(principal ? tenant(principal) : {}) },
    joins ?? ([] as unknown as J),
    lock,
  );
  if (!found) throw notFound('PortCall', id);
  return { call: found.row, joined: found.joined };
}

/** A call that has departed or been cancelled takes no new work and no further changes. */
export const isFinishedCall = (status: PortCallStatus): boolean =>
  status === PortCallStatus.DEPARTED || status === PortCallStatus.CANCELLED;

/** The 409 `refusal` words when `call` has departed or been cancelled, naming its status and id. */
export function checkOpenCall(
  call: Pick<PortCall, 'id' | 'status'>,
  refusal: (call: Pick<PortCall, 'id' | 'status'>) => string,
): void {
  if (isFinishedCall(call.status))
    throw conflict(refusal(call), { status: call.status, portCallId: call.id });
}

/**
 * Turns a unique-constraint violation into the 409 that names the field. `columns` maps a
 * column name (as it appears in SQLite's and PostgreSQL's messages) to the error to raise.
 */
export function uniqueConflict(error: unknown, columns: Record<string, () => AppError>): unknown {
  if (!isUniqueViolation(error)) return error;
  const message = error instanceof Error ? error.message : String(error);
  const match = Object.entries(columns).find(([column]) => message.includes(column));
  return match ? match[1]() : error;
}

/** For `thing(id)` queries, where an unknown (or foreign) id is null rather than an error. */
export async function findOwnedOrNull<T extends object>(
  em: EntityManager,
  entity: EntityName<T>,
  principal: Principal,
  id: string,
): Promise<T | null> {
  if (!isUuid(id)) return null;
  return em.findOne(entity, { id, ...tenant(principal) } as FilterQuery<T>);
}

/**
 * One page and the total in ONE statement: the count is an uncorrelated scalar subquery, which
 * the database evaluates once (a `count(*) over ()` window would materialise and sort every
 * matching row first — ten times slower on the demo data). A page past the end needs no count.
 */
export function findPage<T extends object>(
  em: EntityManager,
  entity: EntityClass<T>,
  where: FilterQuery<T>,
  orderBy: QueryOrderMap<T>,
  page: Page,
  props?: readonly string[],
): Promise<{ items: T[]; total: number }> {
  return preparedPage(
    em,
    entity,
    where as Record<string, unknown>,
    orderBy as Record<string, 'asc' | 'desc'>,
    page,
    props,
  );
}
