import type { EntityManager } from '@mikro-orm/knex';
import type { FilterQuery } from '@mikro-orm/core';
import { Account } from '../accounts/entities.js';
import type { Config } from '../config.js';
import type { Dialect } from '../db/orm.js';
import type { Clock } from '../kernel/clock.js';
import { checkDate } from '../kernel/dates.js';
import { badInput, missingScopes, notFound } from '../kernel/errors.js';
import { isUuid } from '../kernel/ids.js';
import type { Plan } from '../kernel/plans.js';
import { isAdmin, type Principal } from '../kernel/principal.js';
import { AuditRecord } from './entities.js';

/**
 * What an account may read of its own calls: usage figures and the request log, both from the
 * audit log. Every query names one account, the caller's; an admin may name another explicitly.
 */

const DAY_MS = 86_400_000;
export const MAX_USAGE_DAYS = 90;
/** The busiest operations a usage report lists; the rest are summed in the day series only. */
export const MAX_USAGE_OPERATIONS = 50;

export enum CallOutcome {
  SUCCESS = 'SUCCESS',
  CLIENT_ERROR = 'CLIENT_ERROR',
  SERVER_ERROR = 'SERVER_ERROR',
}

export function outcomeOf(status: number): CallOutcome {
  return status >= 500
    ? CallOutcome.SERVER_ERROR
    : status >= 400
      ? CallOutcome.CLIENT_ERROR
      : CallOutcome.SUCCESS;
}

const STATUS_RANGES: Record<CallOutcome, { $gte?: number; $lt?: number }> = {
  [CallOutcome.SUCCESS]: { $lt: 400 },
  [CallOutcome.CLIENT_ERROR]: { $gte: 400, $lt: 500 },
  [CallOutcome.SERVER_ERROR]: { $gte: 500 },
};

/**
 * The account a read is about: the caller's own unless an admin names another. Naming another
 * account without `admin` is refused like any missing scope, never silently narrowed.
 */
export function accountOf(principal: Principal, requested: string | null | undefined): string {
  if (!requested || requested === principal.accountId) return principal.accountId;
  if (!isUuid(requested)) throw badInput('accountId', 'must be a UUID');
  if (!isAdmin(principal))
    throw missingScopes(['admin'], ' (to read another account’s calls)', { field: 'accountId' });
  return requested;
}

/** Calls of one kind: all of them, then split by outcome. */
export interface CallCounts {
  calls: number;
  successful: number;
  clientErrors: number;
  serverErrors: number;
}

export interface UsageDay extends CallCounts {
  /** `YYYY-MM-DD`, UTC. */
  date: string;
}

export interface UsageByOperation extends CallCounts {
  operation: string;
}

export interface UsageByOutcome {
  outcome: CallOutcome;
  status: number;
  code: string | null;
  calls: number;
}

export interface UsageReport extends CallCounts {
  accountId: string;
  plan: Plan;
  since: Date;
  until: Date;
  perMinute: number;
  perMonth: number | null;
  portOperationsPerMinute: number;
  callsThisMonth: number;
  days: UsageDay[];
  byOperation: UsageByOperation[];
  byOutcome: UsageByOutcome[];
}

const noCalls = (): CallCounts => ({ calls: 0, successful: 0, clientErrors: 0, serverErrors: 0 });

function add(counts: CallCounts, status: number, calls: number): void {
  counts.calls += calls;
  const outcome = outcomeOf(status);
  if (outcome === CallOutcome.SUCCESS) counts.successful += calls;
  else if (outcome === CallOutcome.CLIENT_ERROR) counts.clientErrors += calls;
  else counts.serverErrors += calls;
}

/** The UTC day number of `at` in SQL: SQLite stores epoch milliseconds, PostgreSQL timestamptz. */
function dayExpression(dialect: Dialect): string {
  return dialect === 'postgresql'
    ? 'cast(floor(extract(epoch from at) / 86400) as integer)'
    : `cast(at / ${DAY_MS} as integer)`;
}

interface Counted {
  calls: number | string;
}

/**
 * Calls per UTC day over the last `days` days (today included), split by outcome, by operation
 * and by status and code, with the plan's limits beside them. Three grouped reads on the
 * (account_id, at) index, whatever the number of calls.
 */
export async function usageReport(
  em: EntityManager,
  deps: { config: Pick<Config, 'planLimits' | 'portOpsPerMinute'>; clock: Clock; dialect: Dialect },
  accountId: string,
  days = 30,
): Promise<UsageReport> {
  if (!Number.isInteger(days) || days < 1 || days > MAX_USAGE_DAYS)
    throw badInput('days', `must be between 1 and ${MAX_USAGE_DAYS} (got ${days})`);
  const account = await em.findOne(Account, { id: accountId });
  if (!account) throw notFound('account', accountId);
  const now = deps.clock.now();
  const firstDay = Math.floor(now.getTime() / DAY_MS) - (days - 1);
  const since = new Date(firstDay * DAY_MS);
  const monthStart = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
  const platform = em.getPlatform();
  const connection = em.getConnection();
  const table = platform.quoteIdentifier(em.getMetadata().get(AuditRecord.name).tableName);
  const window = [accountId, platform.processDateProperty(since), platform.processDateProperty(now)];
  const where = 'where account_id = ? and at >= ? and at <= ?';
  const [perDay, perOperation, month] = await Promise.all([
    connection.execute<Array<Counted & { day: number | string; status: number }>>(
      `select ${dayExpression(deps.dialect)} as day, status, count(*) as calls from ${table} ${where} group by 1, 2`,
      window,
    ),
    connection.execute<Array<Counted & { operation: string; status: number; error_code: string | null }>>(
      `select operation, status, error_code, count(*) as calls from ${table} ${where} group by operation, status, error_code`,
      window,
    ),
    connection.execute<Counted[]>(`select count(*) as calls from ${table} ${where}`, [
      accountId,
      platform.processDateProperty(monthStart),
      platform.processDateProperty(now),
    ]),
  ]);

  const dayCounts = Array.from({ length: days }, (_, i) => ({
    date: new Date((firstDay + i) * DAY_MS).toISOString().slice(0, 10),
    ...noCalls(),
  }));
  for (const row of perDay) {
    const day = dayCounts[Number(row.day) - firstDay];
    if (day) add(day, Number(row.status), Number(row.calls));
  }
  const total = noCalls();
  const operations = new Map<string, UsageByOperation>();
  const outcomes = new Map<string, UsageByOutcome>();
  for (const row of perOperation) {
    const status = Number(row.status);
    const calls = Number(row.calls);
    add(total, status, calls);
    let operation = operations.get(row.operation);
    if (!operation) operations.set(row.operation, (operation = { operation: row.operation, ...noCalls() }));
    add(operation, status, calls);
    const code = status >= 400 ? (row.error_code ?? null) : null;
    const key = `${status} ${code ?? ''}`;
    const outcome = outcomes.get(key);
    if (outcome) outcome.calls += calls;
    else outcomes.set(key, { outcome: outcomeOf(status), status, code, calls });
  }
  const limits = deps.config.planLimits[account.plan];
  return {
    accountId,
    plan: account.plan,
    since,
    until: now,
    perMinute: limits.perMinute,
    perMonth: limits.perMonth,
    portOperationsPerMinute: deps.config.portOpsPerMinute,
    callsThisMonth: Number(month[0]?.calls ?? 0),
    ...total,
    days: dayCounts,
    byOperation: [...operations.values()]
      .sort((a, b) => b.calls - a.calls || a.operation.localeCompare(b.operation))
      .slice(0, MAX_USAGE_OPERATIONS),
    byOutcome: [...outcomes.values()].sort(
      (a, b) => a.status - b.status || (a.code ?? '').localeCompare(b.code ?? ''),
    ),
  };
}

export interface RequestLogFilter {
  outcome?: CallOutcome | null;
  status?: number | null;
  operation?: string | null;
  since?: Date | null;
  until?: Date | null;
}

/** One account's calls matching the filter; every bad value is refused naming its argument. */
export function requestLogFilter(accountId: string, filter: RequestLogFilter): FilterQuery<AuditRecord> {
  const { outcome, status, operation, since, until } = filter;
  if (status !== null && status !== undefined && (!Number.isInteger(status) || status < 100 || status > 599))
    throw badInput('status', `must be an HTTP status between 100 and 599 (got ${status})`);
  if (operation !== null && operation !== undefined && (operation.length === 0 || operation.length > 200))
    throw badInput('operation', 'must be 1 to 200 characters');
  if (since && until && since >= until) throw badInput('since', 'must be before until');
  const at: Record<string, Date> = {};
  if (since) at.$gte = checkDate(since, 'since');
  if (until) at.$lt = checkDate(until, 'until');
  const conditions: Array<FilterQuery<AuditRecord>> = [{ accountId }];
  if (outcome) conditions.push({ status: STATUS_RANGES[outcome] });
  if (status !== null && status !== undefined) conditions.push({ status });
  if (operation) conditions.push({ operation });
  if (Object.keys(at).length > 0) conditions.push({ at });
  return { $and: conditions } as FilterQuery<AuditRecord>;
}

/** The call a request id names, within the account: another account's call is not found. */
export async function requestLogEntry(
  em: EntityManager,
  accountId: string,
  requestId: string,
): Promise<AuditRecord> {
  if (requestId.length === 0 || requestId.length > 64)
    throw badInput('requestId', 'must be 1 to 64 characters');
  const found = await em.findOne(
    AuditRecord,
    { accountId, requestId },
    { orderBy: { at: 'desc', id: 'desc' } },
  );
  if (!found) throw notFound('request', requestId);
  return found;
}
