import { UniqueConstraintViolationException } from '@mikro-orm/core';

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
