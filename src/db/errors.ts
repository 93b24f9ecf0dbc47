import { UniqueConstraintViolationException } from '@mikro-orm/core';
import { AppError } from '../kernel/errors.js';

/**
 * A write that broke a unique key: the ORM's own exception, or the driver's error when the write
 * went straight through knex (bulk inserts), which the ORM does not translate.
 */
export function isUniqueViolation(error: unknown): boolean {
  if (error instanceof UniqueConstraintViolationException) return true;
  const code = (error as { code?: unknown } | null)?.code;
  // PostgreSQL unique_violation; SQLite's extended codes for a unique index and a primary key.
  return code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}

/**
 * Runs `work`; a unique-key violation it raises becomes `makeError()` (typically a 409 saying who
 * else holds the key), any other error passes through.
 */
export async function conflictOnUnique<T>(work: () => Promise<T>, makeError: () => Error): Promise<T> {
  try {
    return await work();
  } catch (e) {
    if (isUniqueViolation(e)) throw makeError();
    throw e;
  }
}

/** Seconds a client is told to wait (Retry-After) when the database or Redis is unreachable. */
export const OUTAGE_RETRY_AFTER_SECONDS = 5;

/*
 * What an unreachable database or Redis looks like by the time it reaches a request: PostgreSQL's
 * connection-exception class (08…), shutdown and start-up states (57P01–57P03), too many
 * connections (53300) and a database that refuses connections; socket errors; the pool giving
 * up waiting for a free connection; a closed or busy SQLite handle; ioredis refusing a command.
 */
const OUTAGE_SQLSTATES = new Set(['57P01', '57P02', '57P03', '53300']);
const OUTAGE_ERRNOS = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'SQLITE_BUSY',
  'SQLITE_CANTOPEN',
]);
const OUTAGE_MESSAGES = [
  /^Connection terminated/,
  /not queryable/,
  /not currently accepting connections/,
  /^Knex: Timeout acquiring a connection/,
  /^The database connection is not open$/,
  /^Connection is closed\.?$/,
  /enableOfflineQueue options is false/,
  /^Command timed out$/,
];
const OUTAGE_NAMES = new Set(['ConnectionException', 'KnexTimeoutError', 'MaxRetriesPerRequestError']);

function looksLikeOutage(error: object): boolean {
  const { code, sqlState, name, message } = error as {
    code?: unknown;
    sqlState?: unknown;
    name?: unknown;
    message?: unknown;
  };
  const state = typeof sqlState === 'string' ? sqlState : typeof code === 'string' ? code : '';
  return (
    /^08[0-9A-Z]{3}$/.test(state) ||
    OUTAGE_SQLSTATES.has(state) ||
    OUTAGE_ERRNOS.has(state) ||
    (typeof name === 'string' && OUTAGE_NAMES.has(name)) ||
    (typeof message === 'string' && OUTAGE_MESSAGES.some((m) => m.test(message)))
  );
}

/**
 * The 503 an error stands for when it means the database or Redis cannot be reached (the error
 * itself or one of its causes), else undefined. Clients are told to retry: nothing they sent was
 * wrong, and the service recovers by itself once the store answers again.
 */
export function outageError(error: unknown): AppError | undefined {
  let current: unknown = error;
  for (let i = 0; i < 5 && current && typeof current === 'object'; i++) {
    if (looksLikeOutage(current)) {
      return new AppError(
        'SERVICE_UNAVAILABLE',
        'The service cannot reach its data store right now; retry shortly',
        { retryAfterSeconds: OUTAGE_RETRY_AFTER_SECONDS },
        { 'Retry-After': String(OUTAGE_RETRY_AFTER_SECONDS) },
      );
    }
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}
