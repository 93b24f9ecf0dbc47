const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** True for the canonical 8-4-4-4-12 hex form; checked before a lookup so PostgreSQL never sees a malformed uuid. */
export function isUuid(value: string): boolean {
  return UUID.test(value);
}
