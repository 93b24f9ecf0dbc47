import { badInput } from './errors.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** True for the canonical 8-4-4-4-12 hex form; checked before a lookup so PostgreSQL never sees a malformed uuid. */
export function isUuid(value: string): boolean {
  return UUID.test(value);
}

/** `value` if it is a UUID, else a 400 naming `field` (for filters, where "not found" would mislead). */
export function requireUuid(value: string, field: string): string {
  if (!isUuid(value))
    throw badInput(field, `must be a UUID (got '${value.slice(0, 60)}')`, { rule: 'UUID_FORMAT' });
  return value;
}
