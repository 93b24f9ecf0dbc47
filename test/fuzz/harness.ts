import fc from 'fast-check';
import { expect } from 'vitest';
import { ALL_SCOPES, SESSION_ONLY_SCOPES } from '../../src/kernel/scopes.js';
import { createKey, rest, startTestServer, type TestServer } from '../helpers/server.js';

/**
 * What the REST and GraphQL fuzz suites share: the hostile values, a server whose budgets do not
 * stop a few thousand calls a minute, real ids to aim at, and the "nothing written" snapshot.
 */

/** One seed for every run, so a failure replays; fast-check prints it with the counterexample. */
export const FUZZ_SEED = 15_2026;

export interface FuzzTarget {
  server: TestServer;
  key: string;
  ids: Record<'portCall' | 'serviceOrder' | 'vendor' | 'invoice' | 'document' | 'profile', string[]> & {
    slug: string[];
    webhook: string[];
    subscription: string[];
  };
}

export async function startFuzzTarget(dialect: 'sqlite' | 'postgresql'): Promise<FuzzTarget> {
  const server = await startTestServer({
    dialect,
    env: {
      LIMIT_INSTITUTIONAL_PER_MINUTE: '1000000',
      PORT_OPS_PER_MINUTE: '1000000',
      GRAPHQL_MAX_COST: '100000',
    },
  });
  // Every scope a key can hold: the session-only ones are refused on a key (the console's mutations
  // then answer 403, which the fuzz counts as a refusal like any other).
  const keyScopes = ALL_SCOPES.filter((s) => !SESSION_ONLY_SCOPES.includes(s));
  const { secret: key } = await createKey(server, { plan: 'INSTITUTIONAL', scopes: keyScopes.join(' ') });
  const list = async (path: string, field = 'id'): Promise<string[]> => {
    const res = await rest(server.url, path, { key });
    const rows = (Array.isArray(res.body) ? res.body : res.body?.data) as Array<Record<string, string>>;
    return (rows ?? []).slice(0, 3).map((r) => r[field]!);
  };
  const created = async (path: string, body: unknown): Promise<string[]> => {
    const res = await rest(server.url, path, { key, method: 'POST', body });
    return res.status < 300 ? [res.body.id ?? res.body.endpoint?.id] : [];
  };
  const hook = { url: 'http://127.0.0.1:9/fuzz', event_types: ['score_change'] };
  return {
    server,
    key,
    ids: {
      portCall: await list('/v1/port-calls?limit=3'),
      serviceOrder: await list('/v1/service-orders?limit=3'),
      vendor: await list('/v1/vendors?limit=3'),
      invoice: await list('/v1/invoices?limit=3'),
      document: await list('/v1/documents?limit=3'),
      slug: await list('/v1/protocols?limit=3', 'slug'),
      profile: await created('/v1/scoring-profiles', { name: 'fuzz', weights: { aum: 0.2 } }),
      webhook: await created('/v1/webhooks', hook),
      subscription: await created('/v1/webhook-subscriptions', {
        url: hook.url,
        eventTypes: ['port_call.created'],
      }),
    },
  };
}

/* ---------- hostile values ---------- */

const C0 = Array.from({ length: 32 }, (_, i) => String.fromCharCode(i)).filter((c) => c !== '\n');

/** Text an attacker sends: control characters, lone surrogates, huge, prototype keys, SQL. */
export const hostileString: fc.Arbitrary<string> = fc.oneof(
  { arbitrary: fc.constantFrom(...C0, '\u007f').map((c) => `a${c}b`), weight: 3 },
  { arbitrary: fc.constantFrom('\ud800', '\udfff', 'x\ud83dy', '\ude00z'), weight: 2 },
  fc.constantFrom('', ' ', '__proto__', 'constructor', "'; drop table port_calls; --", '%00', '\u202e'),
  fc.constantFrom(300, 100_000).map((n) => 'x'.repeat(n)),
  fc.constantFrom(
    '0000-01-01T00:00:00Z',
    '+275760-09-13T00:00:00Z',
    '-000001-01-01T00:00:00.000Z',
    '1899-12-31T23:59:59Z',
    '2201-01-01T00:00:00Z',
    '9999-12-31',
    '2026-13-45',
  ),
  fc.constantFrom('not-a-uuid', '00000000-0000-0000-0000-00000000000g', '1 OR 1=1', '../../etc/passwd'),
  fc.string({ unit: 'binary', maxLength: 40 }),
);

export const hostileNumber: fc.Arbitrary<number> = fc.oneof(
  fc.constantFrom(0, -1, -0.5, 1e308, -1e308, 2 ** 53 + 1, 1e-300, 2 ** 31, -(2 ** 31) - 1, 8.64e15 + 1),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.integer(),
);

/** `depth` arrays inside each other around a value: `[[[…1…]]]`. */
export function nested(depth: number, inner: unknown = 1): unknown {
  let value = inner;
  for (let i = 0; i < depth; i++) value = [value];
  return value;
}

/** JSON text sent as is: nesting too deep for JSON.stringify to write. */
export class RawJson {
  constructor(readonly text: string) {}
}

export const DEEP_BODY = new RawJson('['.repeat(20_000) + ']'.repeat(20_000));

/** Objects with a `__proto__` or `constructor` own key, as JSON.parse makes them. */
const prototypeKeys = fc.constantFrom(
  JSON.parse('{"__proto__": {"admin": true}}') as unknown,
  JSON.parse('{"constructor": {"prototype": {"admin": true}}}') as unknown,
);

/** Any JSON value an attacker might send where something else was expected. */
export const hostileJson: fc.Arbitrary<unknown> = fc.oneof(
  { arbitrary: hostileString, weight: 4 },
  { arbitrary: hostileNumber, weight: 2 },
  fc.boolean(),
  fc.constant(null),
  fc.constantFrom(5, 64, 1000).map((d) => nested(d)),
  fc.constant(DEEP_BODY),
  fc.constantFrom(5, 300).map((d) => nested(d, { quantity: 1 })),
  prototypeKeys,
  fc.array(hostileString, { maxLength: 3 }),
  fc.dictionary(fc.constantFrom('a', 'quantity', '__proto__'), hostileString, { maxKeys: 2 }),
);

/**
 * A record of plausible values with one field made hostile: the other fields pass their checks,
 * so the hostile value is the one that reaches the service (and the database, if unchecked).
 */
export function oneHostile(
  good: Record<string, unknown>,
  hostile: Record<string, fc.Arbitrary<unknown>>,
): fc.Arbitrary<Record<string, unknown>> {
  const names = Object.keys(hostile);
  if (names.length === 0) return fc.constant(good);
  return fc
    .constantFrom(...names)
    .chain((name) => hostile[name]!.map((value) => ({ ...good, [name]: value })));
}

/** A field gets a plausible value (to reach deeper checks) or a hostile one. */
export function plausibleOr(good: readonly unknown[], hostile: fc.Arbitrary<unknown> = hostileJson) {
  return good.length > 0
    ? fc.oneof({ arbitrary: fc.constantFrom(...good), weight: 1 }, { arbitrary: hostile, weight: 2 })
    : hostile;
}

/** Values that pass checks for common field names, so the hostile value elsewhere is what fails. */
export function plausibleValues(target: FuzzTarget): Record<string, readonly unknown[]> {
  const { ids } = target;
  const soon = new Date(Date.now() + 86_400_000).toISOString();
  return {
    id: [...ids.portCall, ...ids.serviceOrder, ...ids.vendor, ...ids.invoice, ...ids.document],
    portCallId: ids.portCall,
    serviceOrderId: ids.serviceOrder,
    vendorId: ids.vendor,
    invoiceId: ids.invoice,
    attachedId: [...ids.portCall, ...ids.serviceOrder],
    slug: ids.slug,
    add: [ids.slug],
    vesselImo: ['9074729'],
    imo: ['9074729'],
    portLocode: ['SGSIN', 'NLRTM'],
    eta: [soon],
    etd: [soon],
    at: [soon],
    dueDate: [soon],
    requestedFor: [soon],
    status: ['ARRIVED', 'CONFIRMED', 'ISSUED'],
    serviceType: ['BUNKERING'],
    details: [{ quantity: 500, unit: 'MT', fuelType: 'VLSFO' }],
    name: ['Fuzz'],
    url: ['http://127.0.0.1:9/fuzz'],
    event_types: [['score_change']],
    eventTypes: [['port_call.created']],
    currency: ['USD'],
    weights: [{ aum: 0.3 }],
  };
}

/* ---------- "nothing written" ---------- */

/**
 * Written whatever the request: the request audit (every call) and the outbox's deliveries of
 * events that earlier, accepted requests emitted (in the background). Every other table must not
 * move on a refusal.
 */
const WRITTEN_ANYWAY = new Set([
  'audit_records',
  'mikro_orm_migrations',
  'webhook_deliveries',
  'webhook_delivery_attempts',
]);

export async function rowCounts(server: TestServer): Promise<Record<string, number>> {
  const connection = server.database.db.em().getConnection();
  const listed = (await connection.execute(
    server.database.db.dialect === 'sqlite'
      ? `select name from sqlite_master where type = 'table'`
      : `select table_name as name from information_schema.tables where table_schema = 'public'`,
  )) as Array<{ name: string }>;
  const tables = listed
    .map((r) => r.name)
    .filter((name) => !WRITTEN_ANYWAY.has(name) && !name.startsWith('sqlite_'))
    .sort();
  const rows = (await connection.execute(
    tables.map((t) => `select '${t}' as t, count(*) as n from "${t}"`).join(' union all '),
  )) as Array<{ t: string; n: number | string }>;
  return Object.fromEntries(rows.map((r) => [r.t, Number(r.n)]));
}

/** The tables whose row count differs, for a readable failure. */
export function changedTables(before: Record<string, number>, after: Record<string, number>): string[] {
  return Object.keys({ ...before, ...after })
    .filter((t) => before[t] !== after[t])
    .map((t) => `${t} ${before[t]}→${after[t]}`);
}

/** Every key and nested key of a value: a 400 must name one of them (or the parameter holding them). */
export function namesIn(value: unknown, into = new Set<string>(), depth = 0): Set<string> {
  if (depth > 8 || value === null || typeof value !== 'object') return into;
  for (const [k, v] of Object.entries(value)) {
    into.add(k);
    namesIn(v, into, depth + 1);
  }
  return into;
}

/** The message and the named field of a refusal mention one of `names`. */
export function expectNamesAField(
  message: string,
  field: unknown,
  names: Set<string>,
  context: string,
): void {
  const said = `${message} ${typeof field === 'string' ? field : ''}`;
  const named = [...names].some((n) => said.includes(n));
  expect(named, `${context}: "${message}" names none of ${[...names].join(', ')}`).toBe(true);
}

/**
 * Runs `check` on `runs` generated values with the fixed seed. On failure the error carries the
 * seed, the path to replay and the counterexample cut short (a 1 MB string would bury the report).
 * No shrinking: it would replay hundreds of requests, and the first counterexample suffices.
 */
export async function fuzz<T>(
  arbitrary: fc.Arbitrary<T>,
  check: (value: T) => Promise<void>,
  runs: number,
): Promise<void> {
  const details = await fc.check(fc.asyncProperty(arbitrary, check), {
    numRuns: runs,
    seed: FUZZ_SEED,
    endOnFailure: true,
  });
  if (!details.failed) return;
  const shown = brief(details.counterexample);
  const cause =
    details.errorInstance instanceof Error ? details.errorInstance.message : String(details.errorInstance);
  throw new Error(
    `fuzz failed with seed ${details.seed} (path ${details.counterexamplePath}) after ${details.numRuns} runs\n` +
      `counterexample: ${shown.slice(0, 2000)}\n${cause.slice(0, 2000)}`,
  );
}

/**
 * Percent-encoding that keeps lone surrogates (encodeURIComponent throws on them): they go out as
 * the WTF-8 bytes an attacker's client would send.
 */
export function encodeHostile(value: string): string {
  let out = '';
  for (const part of value.match(/[\ud800-\udbff][\udc00-\udfff]|[\s\S]/g) ?? []) {
    const code = part.charCodeAt(0);
    if (part.length === 1 && code >= 0xd800 && code <= 0xdfff) {
      out += `%${(0xe0 | (code >> 12)).toString(16)}%${(0x80 | ((code >> 6) & 0x3f)).toString(16)}%${(0x80 | (code & 0x3f)).toString(16)}`;
    } else out += encodeURIComponent(part);
  }
  return out;
}

/** A value for a failure report: long strings and deep nesting cut short (JSON.stringify would overflow). */
function brief(value: unknown, depth = 0): string {
  if (depth > 6) return '…';
  if (typeof value === 'string')
    return JSON.stringify(value.length > 200 ? `${value.slice(0, 200)}…(${value.length})` : value);
  if (value instanceof Set) return brief([...value], depth);
  if (Array.isArray(value)) return `[${value.map((v) => brief(v, depth + 1)).join(',')}]`;
  if (value && typeof value === 'object')
    return `{${Object.entries(value)
      .map(([k, v]) => `${JSON.stringify(k)}:${brief(v, depth + 1)}`)
      .join(',')}}`;
  return String(value);
}
