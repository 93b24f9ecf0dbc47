import type { EntityManager, Knex } from '@mikro-orm/knex';
import type { EntityClass, EntityMetadata, EntityProperty, Platform } from '@mikro-orm/core';
import { Lru } from '../kernel/lru.js';
import type { MaybePromise } from '../kernel/maybe-async.js';
import { jsonPropsOf } from './plain.js';

/*
 * The hot reads (list pages with their totalCount, the DataLoader batches behind nested fields)
 * with their SQL written once per shape and reused. Going through the ORM's query builder costs
 * more than SQLite itself for these small statements: criteria processing and knex assembling the
 * same text on every request. A shape is the entity, the filtered columns with their operators and
 * the order; its text is cached, and only the values change. The database prepares each text once
 * per connection too (see `read`): the ORM's own `execute` inlines the values into the text, so
 * SQLite would compile a new statement for every call. Statements inside a transaction run on the
 * transaction's connection, prepared there once like any other; every statement appears in the
 * ORM's query log.
 *
 * The hot writes of a transaction (a new service order, its history row, its event: `preparedInsert`,
 * `preparedUpdate`) take the same path: the ORM's unit of work and knex built, quoted and prepared
 * the same few statements on every call, most of a write's CPU.
 *
 * Filters are what the port-ops services build: equality on a property, or a range
 * ({ $gte, $gt, $lt, $lte }) on one. Anything else is refused here, loudly, rather than guessed.
 * Values bind as knex binds them: on SQLite dates become milliseconds and booleans 0/1, which is
 * how the ORM stores them.
 */

type Direction = 'asc' | 'desc';
/** Most SQL texts, and statements per connection, kept prepared (the code has about a hundred shapes). */
const MAX_STATEMENTS = 1000;
type Range = '$gte' | '$gt' | '$lt' | '$lte';
const RANGE_SQL: Record<Range, string> = { $gte: '>=', $gt: '>', $lt: '<', $lte: '<=' };

/**
 * The SQL text of each read shape (table, filter terms, order, batch size). Shapes come from the
 * code, so they are few; the bound is a guard.
 */
const texts = new Lru<string, string>({ maxEntries: MAX_STATEMENTS });

function columnOf(meta: EntityMetadata, prop: string): string {
  const column = meta.properties[prop as keyof typeof meta.properties]?.fieldNames?.[0];
  if (!column) throw new Error(`${meta.className} has no column for '${prop}'`);
  return `"${column}"`;
}

/**
 * The columns of `props` (property names) with `alias.` before each, or `alias.*` for every column.
 * A row read with some properties has only those: the caller reads no others.
 */
function selected(meta: EntityMetadata, props: readonly string[] | undefined, alias = ''): string {
  const of = alias ? `${alias}.` : '';
  return props ? props.map((p) => of + columnOf(meta, p)).join(', ') : `${of}*`;
}

/** The properties of a read in its text's key; a caller's list is usually the same array each time. */
const propsKeys = new WeakMap<readonly string[], string>();
function propsKey(props: readonly string[] | undefined): string {
  if (!props) return '*';
  let key = propsKeys.get(props);
  if (key === undefined) propsKeys.set(props, (key = props.join(',')));
  return key;
}

/** The `where` as (column + operator) terms with their values, and a key naming the shape. */
function termsOf(
  meta: EntityMetadata,
  where: Record<string, unknown>,
  alias = '',
): { shape: string[]; values: unknown[] } {
  const shape: string[] = [];
  const values: unknown[] = [];
  for (const [prop, value] of Object.entries(where)) {
    if (value === undefined) continue;
    const column = (alias ? `${alias}.` : '') + columnOf(meta, prop);
    if (value !== null && typeof value === 'object' && !(value instanceof Date)) {
      for (const [op, bound] of Object.entries(value)) {
        const sql = RANGE_SQL[op as Range];
        if (!sql) throw new Error(`prepared reads take =, >=, >, <, <= (got ${op} on ${prop})`);
        shape.push(`${column} ${sql} ?`);
        values.push(bound);
      }
    } else if (value === null) {
      shape.push(`${column} is null`);
    } else {
      shape.push(`${column} = ?`);
      values.push(value);
    }
  }
  return { shape, values };
}

/** A prepared better-sqlite3 statement in raw mode (rows as arrays): the subset used here. */
interface SqliteStatement {
  all(...params: unknown[]): unknown[][];
  raw(on: boolean): SqliteStatement;
  columns(): Array<{ name: string }>;
}
/** A pooled connection as knex's clients hand it out: better-sqlite3's Database or a pg Client. */
interface SqliteConnection {
  prepare(sql: string): SqliteStatement;
  readonly open: boolean;
  readonly inTransaction: boolean;
}
/** knex's pool (tarn): its public counters. */
interface TarnPool {
  numUsed(): number;
  numPendingAcquires(): number;
  numPendingCreates(): number;
}
interface PgConnection {
  query(config: { name?: string; text: string; values?: unknown[]; rowMode?: 'array' }): Promise<{
    rows: unknown[];
    fields: Array<{ name: string }>;
  }>;
}

/** Read rows: entity-shaped objects (prototype set, JSON parsed), and the extra column of the first. */
interface Read<T> {
  items: T[];
  extra: unknown;
}

type Kind = 'plain' | 'date' | 'boolean' | 'json';
interface SqliteRead {
  statement: SqliteStatement;
  map(rows: unknown[][]): unknown;
}

/**
 * How a statement's rows become what its caller reads: from arrays in column order, by a mapper
 * made once per statement from its column names.
 */
interface Reader<R> {
  arrays(columns: string[], jsonIsText: boolean): (rows: unknown[][]) => R;
}

/** Statements prepared on each SQLite connection, by SQL text, with their row mapper. */
const sqliteStatements = new WeakMap<object, Lru<string, SqliteRead>>();
/** PostgreSQL: the `$n` text and the statement name of each SQL text (pg prepares a name once per connection). */
const pgStatements = new Lru<string, PgStatement>({ maxEntries: MAX_STATEMENTS });
interface PgStatement {
  name: string;
  text: string;
  /** The row mapper of a read, built from the columns of its first result. */
  map?: (rows: unknown[][]) => unknown;
}
/** Names pg statements: never reused, so a text evicted and seen again cannot take another's name. */
let pgStatementCount = 0;

/** Bound values as knex's better-sqlite3 client converts them: dates to epoch ms, booleans to 0/1. */
function sqliteValue(value: unknown): unknown {
  if (value instanceof Date) return value.valueOf();
  if (typeof value === 'boolean') return value ? 1 : 0;
  return value;
}

function pgStatement(sql: string): PgStatement {
  let statement = pgStatements.get(sql);
  if (!statement) {
    let n = 0;
    statement = { name: `tidegate_read_${++pgStatementCount}`, text: sql.replace(/\?/g, () => `$${++n}`) };
    pgStatements.set(sql, statement);
  }
  return statement;
}

/**
 * Maps raw rows (arrays in the statement's column order) straight to entity-shaped objects: what
 * `mapResult` and `plainEntities` do in two passes over keyed objects, in one, with every object
 * of an entity built in the same property order. Values convert as the ORM's result mapper
 * converts them: dates (epoch ms on SQLite, or text read in the ORM's time zone: the ORM has `pg`
 * hand timestamps over as text), booleans (0/1 on SQLite) and JSON text parsed (`pg` parses
 * `json`/`jsonb` itself, so on PostgreSQL a JSON value is taken as it comes).
 */
function rowMapper(
  em: EntityManager,
  meta: EntityMetadata,
  entity: EntityClass<object>,
  columns: string[],
  extra: string | undefined,
  jsonIsText: boolean,
  prefix = '',
): (rows: unknown[][]) => Read<object> {
  const platform = em.getPlatform();
  const tz = platform.getTimezone();
  const byColumn = new Map(
    meta.props.filter((p) => p.fieldNames?.length === 1).map((p) => [prefix + p.fieldNames[0]!, p]),
  );
  const json = new Set(jsonPropsOf(meta));
  let extraAt = -1;
  const names: string[] = [];
  const kinds: Kind[] = [];
  const at: number[] = [];
  columns.forEach((column, i) => {
    if (column === extra) {
      extraAt = i;
      return;
    }
    const prop = byColumn.get(column);
    if (!prop) return; // a column no property maps (the entity is older than the table) is not read
    names.push(prop.name);
    at.push(i);
    kinds.push(
      json.has(prop.name)
        ? jsonIsText
          ? 'json'
          : 'plain'
        : prop.runtimeType === 'Date' && !platform.isNumericProperty(prop)
          ? 'date'
          : prop.runtimeType === 'boolean'
            ? 'boolean'
            : 'plain',
    );
  });
  const date = (value: unknown): unknown => {
    if (value instanceof Date) return value;
    if (typeof value === 'number' || typeof value === 'bigint') return platform.parseDate(Number(value));
    const text = String(value);
    const zoned =
      !tz || tz === 'local' || text.includes('+') || text.lastIndexOf('-') > 10 || text.endsWith('Z');
    return platform.parseDate(zoned ? text : text + tz);
  };
  const proto = entity.prototype as object;
  const count = names.length;
  return (rows) => {
    const items = new Array<object>(rows.length);
    for (let r = 0; r < rows.length; r++) {
      const row = rows[r]!;
      // Own properties first, the prototype after: the ORM defines a setter for every property on
      // the entity's prototype (change tracking), which an assignment to an object that already
      // has the prototype would run, giving each row a tracked wrapper.
      const item: Record<string, unknown> = {};
      for (let i = 0; i < count; i++) {
        const value = row[at[i]!];
        const kind = kinds[i];
        item[names[i]!] =
          value === null || value === undefined || kind === 'plain'
            ? value
            : kind === 'date'
              ? date(value)
              : kind === 'boolean'
                ? !!value
                : typeof value === 'string'
                  ? JSON.parse(value)
                  : value;
      }
      items[r] = Object.setPrototypeOf(item, proto) as object;
    }
    return { items, extra: extraAt >= 0 && rows.length > 0 ? rows[0]![extraAt] : undefined };
  };
}

/**
 * Runs a read and returns its rows as `reader` makes them: read-only entity-shaped objects
 * (src/db/plain.ts) for the reads here.
 *
 * The statement runs on a connection taken from knex's pool (`knex.client.acquireConnection()`, as
 * src/audit/writer.ts does), or inside a transaction on the transaction's own (knex's transaction
 * client hands it out by the same call; on SQLite it is the pool's one connection, which the pool
 * would never hand out while the transaction holds it), prepared once per connection and SQL text:
 * a better-sqlite3 `Statement` in raw mode on SQLite, a named prepared statement on PostgreSQL with
 * its rows as arrays; both map them in one pass (`rowMapper`). The ORM's own path would inline the
 * values into the text and prepare it anew for every call. On SQLite, when nothing holds or waits
 * for the pool's one connection, the statement runs on it at once, as `preparedRows` does. Either
 * way the statement appears in the ORM's query log.
 */
async function read<R extends { items: unknown[] }>(
  em: EntityManager,
  reader: Reader<R>,
  sql: string,
  values: unknown[],
): Promise<R> {
  const idle = idleSqliteConnection(em);
  if (idle) {
    const started = Date.now();
    let result: R;
    try {
      result = sqliteRead(idle, reader, sql, values);
    } catch (error) {
      throw converted(em, error);
    }
    logRead(em, sql, values, started, result);
    return result;
  }
  return onPooledConnection(em, sql, values, {
    arrays: true,
    pg: (result, statement) => {
      statement.map ??= reader.arrays(
        result.fields.map((f) => f.name),
        false,
      );
      return statement.map(result.rows as unknown[][]) as R;
    },
    sqlite: (connection) => sqliteRead(connection as SqliteConnection, reader, sql, values),
  });
}

/** A read on a SQLite connection: its statement prepared once per connection, rows as arrays. */
function sqliteRead<R>(connection: SqliteConnection, reader: Reader<R>, sql: string, values: unknown[]): R {
  let statements = sqliteStatements.get(connection);
  if (!statements)
    sqliteStatements.set(
      connection,
      (statements = new Lru<string, SqliteRead>({ maxEntries: MAX_STATEMENTS })),
    );
  let prepared = statements.get(sql);
  if (!prepared) {
    const statement = connection.prepare(sql).raw(true);
    prepared = {
      statement,
      map: reader.arrays(
        statement.columns().map((c) => c.name),
        true,
      ),
    };
    statements.set(sql, prepared);
  }
  return prepared.map(prepared.statement.all(...values.map(sqliteValue))) as R;
}

/** Rows of one entity, with the `extra` column (not a property: a page's total) of the first. */
function entityReader<T extends object>(
  em: EntityManager,
  entity: EntityClass<T>,
  meta: EntityMetadata,
  extra?: string,
): Reader<Read<T>> {
  return {
    arrays: (columns, jsonIsText) =>
      rowMapper(em, meta, entity as EntityClass<object>, columns, extra, jsonIsText) as (
        rows: unknown[][],
      ) => Read<T>,
  };
}

/**
 * Runs one prepared statement on a connection from knex's pool, or on the connection of the
 * transaction `em` runs in, and logs it as the ORM logs its queries. PostgreSQL runs it as a named
 * statement and hands the keyed rows to `pg`; SQLite hands `sqlite` the connection, whose caller
 * keeps its own prepared statements.
 */
async function onPooledConnection<R extends { items: unknown[] } | unknown[]>(
  em: EntityManager,
  sql: string,
  values: unknown[],
  run: {
    /** PostgreSQL rows as arrays in column order (entity reads) rather than keyed objects. */
    arrays?: boolean;
    pg: (result: { rows: unknown[]; fields: Array<{ name: string }> }, statement: PgStatement) => R;
    sqlite: (connection: object) => R;
  },
  transaction?: Knex.Transaction,
): Promise<R> {
  // A transaction of `preparedTransaction` holds its connection: its statements run on it as they come.
  const own = transaction ? undefined : ownTransactions.get(em);
  const trx = own ? undefined : (transaction ?? em.getTransactionContext<Knex.Transaction>());
  const client = trx ? trx.client : em.getKnex().client;
  const started = Date.now();
  // knex's client types its connections as `any`; they are the driver's connections.
  const connection = own ? own.connection : ((await client.acquireConnection()) as object);
  let result: R;
  try {
    if (isPostgresClient(client)) {
      const statement = pgStatement(sql);
      const { name, text } = statement;
      const config = { name, text, values, ...(run.arrays ? { rowMode: 'array' as const } : {}) };
      result = run.pg(await (connection as PgConnection).query(config), statement);
    } else {
      if (!trx && !own) sqliteConnections.set(client as object, connection as SqliteConnection);
      result = run.sqlite(connection);
    }
  } catch (error) {
    throw converted(em, error);
  } finally {
    if (!own) await client.releaseConnection(connection);
  }
  logRead(em, sql, values, started, result);
  return result;
}

function converted(em: EntityManager, error: unknown): Error {
  return em
    .getPlatform()
    .getExceptionConverter()
    .convertException(error as Error);
}

/** The statement in the ORM's query log, as the ORM logs its own. */
function logRead(
  em: EntityManager,
  sql: string,
  values: unknown[],
  started: number,
  result: { items: unknown[] } | unknown[],
): void {
  const logger = em.config.getLogger();
  if (logger.isEnabled('query')) {
    logger.logQuery({
      level: 'info',
      query: sql,
      params: values,
      took: Date.now() - started,
      results: Array.isArray(result) ? result.length : result.items.length,
    });
  }
}

/** The SQLite connection knex's pool last handed out, per knex client. */
const sqliteConnections = new WeakMap<object, SqliteConnection>();

/**
 * On SQLite, the pool's one connection when nothing holds it or waits for it, to run a read on
 * at once instead of through an acquire (a promise and a timer). A synchronous read on it cannot
 * interleave with anything: better-sqlite3 runs statements synchronously, and a transaction holds
 * the connection out of the pool from its BEGIN to its COMMIT. Inside a `preparedTransaction` on
 * SQLite, the transaction's connection, which its statements run on at once the same way. Undefined
 * inside any other transaction, on PostgreSQL, and whenever the pool is busy or has replaced the
 * connection.
 */
function idleSqliteConnection(em: EntityManager): SqliteConnection | undefined {
  const own = ownTransactions.get(em);
  if (own) return own.postgres ? undefined : (own.connection as SqliteConnection);
  if (em.getTransactionContext()) return undefined;
  // knex types its client as `any`; the pool is tarn's, created on first use.
  const client = em.getKnex().client as { pool?: TarnPool };
  const connection = sqliteConnections.get(client);
  const pool = client.pool;
  if (!connection || !pool) return undefined;
  if (pool.numUsed() + pool.numPendingAcquires() + pool.numPendingCreates() > 0) return undefined;
  return connection.open && !connection.inTransaction ? connection : undefined;
}

/** The statements `preparedRows` prepared on each SQLite connection, by SQL text. */
const sqliteRowStatements = new WeakMap<object, Lru<string, { all(...params: unknown[]): unknown[] }>>();

/**
 * A small read that maps to no entity (a version row, a count), prepared once per connection:
 * rows as keyed objects with the driver's values. Inside a transaction it runs on the
 * transaction's connection.
 */
export function preparedRows(
  em: EntityManager,
  sql: string,
  values: unknown[],
): MaybePromise<Array<Record<string, unknown>>> {
  const idle = idleSqliteConnection(em);
  if (idle) {
    const started = Date.now();
    let rows: Array<Record<string, unknown>>;
    try {
      rows = sqliteRows(idle, sql, values);
    } catch (error) {
      return Promise.reject(converted(em, error));
    }
    logRead(em, sql, values, started, rows);
    return rows;
  }
  return onPooledConnection(em, sql, values, {
    pg: (result) => result.rows as Array<Record<string, unknown>>,
    sqlite: (connection) => sqliteRows(connection as SqliteConnection, sql, values),
  });
}

function sqliteRows(
  connection: SqliteConnection,
  sql: string,
  values: unknown[],
): Array<Record<string, unknown>> {
  let statements = sqliteRowStatements.get(connection);
  if (!statements)
    sqliteRowStatements.set(connection, (statements = new Lru({ maxEntries: MAX_STATEMENTS })));
  let statement = statements.get(sql);
  if (!statement) statements.set(sql, (statement = connection.prepare(sql)));
  return statement.all(...values.map(sqliteValue)) as Array<Record<string, unknown>>;
}

/**
 * One page of `entity` in `orderBy` order, with the number of rows the filter matches, in one
 * statement (a count subquery beside the page); every property of the rows, or only `props`.
 */
export async function preparedPage<T extends object>(
  em: EntityManager,
  entity: EntityClass<T>,
  where: Record<string, unknown>,
  orderBy: Record<string, Direction>,
  page: { limit: number; offset: number },
  props?: readonly string[],
): Promise<{ items: T[]; total: number }> {
  const meta = em.getMetadata().get(entity.name);
  const { shape, values } = termsOf(meta, where);
  const reader = entityReader(em, entity, meta, 'page_total');
  const run = (limit: number, offset: number) =>
    read(em, reader, pageText(meta, shape, orderBy, limit, props), [...values, ...values, offset]);
  const { items, extra } = await run(page.limit, page.offset);
  if (items.length === 0) {
    if (page.offset === 0) return { items: [], total: 0 };
    // Past the end: the page is empty, the count still wanted.
    const counted = await run(1, 0);
    return { items: [], total: counted.items.length ? Number(counted.extra) : 0 };
  }
  return { items, total: Number(extra) };
}

/**
 * The text of a page with its count. The limit is written into the text, the offset bound: on
 * SQLite a bound LIMIT made every run of the statement cost about what preparing it costs (13–16 µs
 * more per run, measured with better-sqlite3 on a 10-row and a 1-row page), a bound OFFSET nothing.
 * Limits come from the code and the page-size bounds (1–100), so they add few texts.
 */
function pageText(
  meta: EntityMetadata,
  shape: string[],
  orderBy: Record<string, Direction>,
  limit: number,
  props: readonly string[] | undefined,
): string {
  if (!Number.isSafeInteger(limit) || limit < 0)
    throw new Error(`a page limit is a whole number (got ${limit})`);
  const key = `page|${meta.tableName}|${shape.join('&')}|${Object.entries(orderBy).join(',')}|${limit}|${propsKey(props)}`;
  let sql = texts.get(key);
  if (!sql) {
    const table = `"${meta.tableName}"`;
    const filter = (alias: string) =>
      shape.length ? ` where ${shape.map((t) => `${alias}.${t}`).join(' and ')}` : '';
    const order = Object.entries(orderBy)
      .map(([prop, direction]) => `e.${columnOf(meta, prop)} ${direction}`)
      .join(', ');
    sql = `select ${selected(meta, props, 'e')}, (select count(*) from ${table} c${filter('c')}) as page_total from ${table} e${filter('e')} order by ${order} limit ${limit} offset ?`;
    texts.set(key, sql);
  }
  return sql;
}

/**
 * The rows whose `prop` is one of `keys` (a DataLoader batch), optionally in `orderBy` order, with
 * every property or only `props`.
 */
export async function preparedIn<T extends object>(
  em: EntityManager,
  entity: EntityClass<T>,
  prop: string,
  keys: readonly unknown[],
  orderBy: Record<string, Direction> = {},
  where: Record<string, unknown> = {},
  props?: readonly string[],
): Promise<T[]> {
  const meta = em.getMetadata().get(entity.name);
  const { shape, values } = termsOf(meta, where);
  // One text per batch size: a loader's batches come in few sizes (at most its maxBatchSize).
  const key = `in|${meta.tableName}|${prop}|${keys.length}|${shape.join('&')}|${Object.entries(orderBy).join(',')}|${propsKey(props)}`;
  let sql = texts.get(key);
  if (!sql) {
    const terms = [...shape, `${columnOf(meta, prop)} in (${keys.map(() => '?').join(', ')})`];
    const order = Object.entries(orderBy)
      .map(([p, direction]) => `${columnOf(meta, p)} ${direction}`)
      .join(', ');
    sql = `select ${selected(meta, props)} from "${meta.tableName}" where ${terms.join(' and ')}${order ? ` order by ${order}` : ''}`;
    texts.set(key, sql);
  }
  return (await read(em, entityReader(em, entity, meta), sql, [...values, ...keys])).items;
}

/** Whether a knex client talks to PostgreSQL (its `dialect`; the other is better-sqlite3). */
function isPostgresClient(client: object): boolean {
  return (client as { dialect?: string }).dialect === 'postgresql';
}

/**
 * Locks the one row of `entity` that `where` matches until the transaction ends, and reads it, in
 * one statement: on PostgreSQL `select … for no key update` (the lock an update of a non-key
 * column takes: a concurrent writer or deleter of the row waits for this transaction, a new row
 * that refers to it does not); on SQLite a plain read, the transaction having taken the
 * database's write lock as its first statement (`WriteLockFirst`, src/db/orm.ts; in memory there
 * is one connection). The row read is the row locked: no other write can come between the read
 * and the lock. Nothing is written, so no trigger fires and no version moves: a lock before a
 * write of the row's data used to move its account's version once more for nothing. Undefined
 * when no row matches. The row is a plain snapshot (src/db/plain.ts). Only inside a transaction:
 * outside one the lock would end with the statement.
 */
export async function preparedLock<T extends object>(
  em: EntityManager,
  entity: EntityClass<T>,
  where: Record<string, unknown>,
): Promise<T | undefined> {
  return (await preparedLockJoined(em, entity, where, []))?.row;
}

/**
 * A row of another entity that `preparedLockJoined` reads beside the locked row: the one matching
 * its own condition (`where`), or the one whose primary key the locked row's `on` property holds.
 * With `lock`, that row is the one locked instead of the main row (an order read by its id, its
 * call locked).
 */
export type LockJoin<E extends object = object> =
  | { entity: EntityClass<E>; where: Record<string, unknown> }
  | { entity: EntityClass<E>; on: string; lock?: boolean };

/** The rows `preparedLockJoined` read for its joins, in their order: undefined where none matched. */
export type JoinedRows<J extends readonly LockJoin[]> = {
  -readonly [K in keyof J]: J[K] extends { entity: EntityClass<infer E> } ? E | undefined : never;
};

/**
 * `preparedLock`, and in the same statement one row of each of `joins`: what a write checks before
 * it writes (the vendor of a new order, the call's port) in the round trip that locks its row, so
 * a write on PostgreSQL waits for the database, and for the event loop to come back to it, once
 * instead of once per row. Only one row is locked (`for no key update of` it): the row of `entity`,
 * or the joined row marked `lock`; the others are read as any read inside the transaction reads
 * them. Undefined when no row of `entity` matches (or, with a joined row to lock, when that row does
 * not exist); any other joined row that does not exist is undefined in `joined`.
 */
export function preparedLockJoined<T extends object, const J extends readonly LockJoin[]>(
  em: EntityManager,
  entity: EntityClass<T>,
  where: Record<string, unknown>,
  joins: J,
): Promise<{ row: T; joined: JoinedRows<J> } | undefined> {
  return preparedJoined(em, entity, where, joins, true);
}

/**
 * `preparedLockJoined` when `lock` is set (inside a transaction only); without it the same read
 * with no lock, inside a transaction or not: what a write that guards its own statement
 * (`preparedGuardedWrite`) checks before it writes, in one round trip. A joined row marked `lock`
 * is refused in a read that locks none.
 */
export async function preparedJoined<T extends object, const J extends readonly LockJoin[]>(
  em: EntityManager,
  entity: EntityClass<T>,
  where: Record<string, unknown>,
  joins: J,
  lock = false,
): Promise<{ row: T; joined: JoinedRows<J> } | undefined> {
  if (lock && !em.getTransactionContext())
    throw new Error(`preparedLock(${entity.name}) outside a transaction`);
  const name = lock ? 'preparedLockJoined' : 'preparedJoined';
  const metadata = em.getMetadata();
  const meta = metadata.get(entity.name);
  const { shape, values: own } = termsOf(meta, where, 'e');
  if (shape.length === 0) throw new Error(`${name}(${entity.name}) without a condition`);
  const postgres = isPostgresClient(em.getKnex().client);
  const values: unknown[] = [];
  const keyParts: string[] = [];
  const locks = (join: LockJoin) => 'lock' in join && join.lock === true;
  if (!lock && joins.some(locks))
    throw new Error(`${name}: a joined row marked to lock, in a read that locks none`);
  if (joins.filter(locks).length > 1) throw new Error(`${name}: one row is locked, not several`);
  const locking = joins.findIndex(locks);
  const sides = joins.map((join, i) => {
    const joinedMeta = metadata.get(join.entity.name);
    const alias = `j${i}`;
    const primary =
      joinedMeta.properties[joinedMeta.primaryKeys[0] as keyof typeof joinedMeta.properties]!.fieldNames[0]!;
    let on: string;
    if ('on' in join) {
      on = `${alias}."${primary}" = e.${columnOf(meta, join.on)}`;
      keyParts.push(`${joinedMeta.tableName}@${join.on}${i === locking ? '!' : ''}`);
    } else {
      const terms = termsOf(joinedMeta, join.where, alias);
      if (terms.shape.length === 0) throw new Error(`${name}: ${join.entity.name} without a condition`);
      on = terms.shape.join(' and ');
      values.push(...terms.values);
      keyParts.push(`${joinedMeta.tableName}:${terms.shape.join('&')}`);
    }
    return { joinedMeta, alias, primary, on };
  });
  values.push(...own);
  const key = `${lock ? 'lockjoined' : 'joined'}|${postgres ? 'pg' : 'sqlite'}|${meta.tableName}|${shape.join('&')}|${keyParts.join('|')}`;
  let sql = texts.get(key);
  if (!sql) {
    // The locked row is inner-joined: PostgreSQL locks no row on the nullable side of an outer join.
    const joined = sides.map(
      (j, i) => `${i === locking ? 'join' : 'left join'} "${j.joinedMeta.tableName}" ${j.alias} on ${j.on}`,
    );
    const locked = locking >= 0 ? sides[locking]!.alias : 'e';
    const columns = sides.flatMap(({ joinedMeta, alias }) =>
      joinedMeta.props
        .filter((p) => p.fieldNames?.length === 1)
        .map((p) => `${alias}."${p.fieldNames[0]}" as "${alias}__${p.fieldNames[0]}"`),
    );
    sql = `select ${['e.*', ...columns].join(', ')} from "${meta.tableName}" e ${joined.join(' ')} where ${shape.join(' and ')}${postgres && lock ? ` for no key update of ${locked}` : ''}`;
    texts.set(key, sql);
  }
  const reader: Reader<{ items: T[]; joined: Array<object | undefined> }> = {
    arrays: (columns, jsonIsText) => {
      const mine = rowMapper(em, meta, entity as EntityClass<object>, columns, undefined, jsonIsText);
      const theirs = sides.map((j, i) => ({
        map: rowMapper(em, j.joinedMeta, joins[i]!.entity, columns, undefined, jsonIsText, `${j.alias}__`),
        keyAt: columns.indexOf(`${j.alias}__${j.primary}`),
      }));
      return (rows) => ({
        items: mine(rows).items as T[],
        joined: theirs.map(({ map, keyAt }) =>
          rows[0] && rows[0][keyAt] !== null ? map([rows[0]]).items[0] : undefined,
        ),
      });
    },
  };
  const result = await read(em, reader, sql, values);
  const row = result.items[0];
  return row === undefined ? undefined : { row, joined: result.joined as JoinedRows<J> };
}

/**
 * A property's value as the ORM writes it: through its custom type (JSON as text, …); null for
 * null or undefined. Dates and booleans then bind as knex binds them (`sqliteValue` on SQLite; `pg`
 * writes a Date as its instant).
 */
function databaseValue(platform: Platform, prop: EntityProperty, value: unknown): unknown {
  if (value === null || value === undefined) return null;
  return prop.customType ? prop.customType.convertToDatabaseValue(value, platform, { mode: 'query' }) : value;
}

/** The entity's properties that are one column each, by name (what inserts and updates write). */
const columnProps = new WeakMap<EntityMetadata, Map<string, EntityProperty>>();
function writtenProps(meta: EntityMetadata): Map<string, EntityProperty> {
  let props = columnProps.get(meta);
  if (!props) {
    props = new Map(
      meta.props
        .filter((p) => p.persist !== false && p.fieldNames?.length === 1)
        .map((p) => [p.name, p as EntityProperty]),
    );
    columnProps.set(meta, props);
  }
  return props;
}

/**
 * Inserts `items` (objects of `entity`, made with `new` so the class's defaults are set) in the
 * transaction `em` runs in: one prepared statement per entity and set of columns given, each row
 * by its own run, values converted as the ORM converts them (`databaseValue`). A property left
 * undefined takes the column's default. The rows are not managed by the ORM: nothing flushes them
 * again, and the caller's objects are what the rows hold. Only inside a transaction: a change and
 * its history and events commit together, or not at all.
 */
export async function preparedInsert<T extends object>(
  em: EntityManager,
  entity: EntityClass<T>,
  items: readonly T[],
): Promise<void> {
  await preparedInserts(em, [{ entity, items }]);
}

/**
 * Rows one statement of `preparedInserts` writes at most on PostgreSQL: a write's few rows go in one,
 * and a batch of hundreds (an ingest's events) in statements the planner handles as quickly, far
 * under the protocol's 65,535 bound values.
 */
const ROWS_PER_STATEMENT = 16;

/** Rows of one entity for `preparedInserts`. */
export interface InsertBatch<T extends object = object> {
  entity: EntityClass<T>;
  items: readonly T[];
}

/**
 * `preparedInsert` of several entities' rows, in the order given, in as few round trips as the
 * database allows: on PostgreSQL one statement per ROWS_PER_STATEMENT rows, every row but the last a
 * data-modifying `with` part (a change's row, its history row and its event: three round trips in
 * one); on SQLite a statement each, as before (they run on the connection without waiting). Within
 * one statement PostgreSQL inserts the rows in no set order (a table read without an order may list
 * them in any) and fires the tables' statement triggers after all of them, so the rows may not refer
 * to each other by a foreign key, and a trigger that looks one up (a history row's subject) finds it.
 */
export async function preparedInserts(em: EntityManager, batches: readonly InsertBatch[]): Promise<void> {
  await writeInserts(em, insertsOf(em, batches));
}

/** The writes of `preparedInserts`, of rows already made into statements (`insertsOf`). */
async function writeInserts(
  em: EntityManager,
  rows: ReadonlyArray<{ key: string; sql: string; values: unknown[] }>,
): Promise<void> {
  if (!isPostgresClient(em.getKnex().client)) {
    for (const row of rows) await write(em, row.sql, row.values);
    return;
  }
  for (let i = 0; i < rows.length; i += ROWS_PER_STATEMENT) {
    const chunk = rows.slice(i, i + ROWS_PER_STATEMENT);
    if (chunk.length === 1) {
      await write(em, chunk[0]!.sql, chunk[0]!.values);
      continue;
    }
    const key = `inserts|${chunk.map((r) => r.key).join('|')}`;
    let sql = texts.get(key);
    if (!sql) {
      const parts = chunk.slice(0, -1).map((row, n) => `w${n} as (${row.sql})`);
      sql = `with ${parts.join(', ')} ${chunk[chunk.length - 1]!.sql}`;
      texts.set(key, sql);
    }
    await write(
      em,
      sql,
      chunk.flatMap((row) => row.values),
    );
  }
}

/**
 * PostgreSQL, outside a transaction: writes `batches` (and first `update`, when given) in one
 * statement that writes only while a row of `guard.entity` matches `guard.where` (a call still in
 * the status its change was checked against), and holds that row `for share` until the statement
 * commits: a write under a row (a new order under its call, an order's move) in one round trip,
 * without `BEGIN` and `COMMIT`. A change of the row (`for no key update` of it, a move of the call)
 * waits for the statement, or the statement for it, and then finds it as it stands. `update` (an
 * order's move guarded by its status) sets its values only while the guarded row matched, and the
 * rows are then written only if it matched a row; each insert is `insert … select … where exists`
 * what gates it (PostgreSQL types each value from its column, as in `values`), in the order given;
 * the tables' statement triggers fire after all of them, as in `preparedInserts`. The guarded row is
 * locked before the update's: a change of that row that then moves the updated one (a call's
 * cancellation moving its orders) takes them in the same order. Returns whether it wrote: false when
 * the guarded row (or the update) matched nothing, and then nothing was written.
 */
export async function preparedGuardedWrite(
  em: EntityManager,
  guard: { entity: EntityClass<object>; where: Record<string, unknown> },
  batches: readonly InsertBatch[],
  update?: UpdateStep,
): Promise<boolean> {
  if (!guardsWrites(em)) throw new Error('preparedGuardedWrite runs on PostgreSQL, outside a transaction');
  const meta = em.getMetadata().get(guard.entity.name);
  const { shape, values } = termsOf(meta, guard.where, 'e');
  if (shape.length === 0) throw new Error(`preparedGuardedWrite: ${guard.entity.name} without a condition`);
  const rows = insertsOf(em, batches, true);
  if (rows.length === 0 || rows.length > ROWS_PER_STATEMENT)
    throw new Error(
      `preparedGuardedWrite writes 1 to ${ROWS_PER_STATEMENT} rows in one statement (got ${rows.length})`,
    );
  const moved = update && updateOf(em, update, true);
  const key = `guarded|${meta.tableName}|${shape.join('&')}|${moved?.key ?? ''}|${rows.map((r) => r.key).join('|')}`;
  let sql = texts.get(key);
  if (!sql) {
    const gate = moved ? 'u' : 'g';
    const inserts = rows.map((row) => {
      const at = row.sql.lastIndexOf(' values (');
      return `${row.sql.slice(0, at)} select ${row.sql.slice(at + ' values ('.length, -1)} where exists (select 1 from ${gate})`;
    });
    const parts = [
      `g as (select 1 from "${meta.tableName}" e where ${shape.join(' and ')} for share of e)`,
      ...(moved ? [`u as (${moved.sql} and exists (select 1 from g) returning 1)`] : []),
      ...inserts.slice(0, -1).map((insert, n) => `w${n} as (${insert})`),
    ];
    sql = `with ${parts.join(', ')} ${inserts[inserts.length - 1]!}`;
    texts.set(key, sql);
  }
  const bound = [...values, ...(moved?.values ?? []), ...rows.flatMap((row) => row.values)];
  return (await write(em, sql, bound)) > 0;
}

/** Whether `preparedGuardedWrite` runs on `em`: PostgreSQL, outside a transaction. */
export function guardsWrites(em: EntityManager): boolean {
  return isPostgresClient(em.getKnex().client) && !em.getTransactionContext();
}

/** The prepared inserts of every row of `batches`, in order. */
function insertsOf(
  em: EntityManager,
  batches: readonly InsertBatch[],
  guarded = false,
): Array<{ key: string; sql: string; values: unknown[] }> {
  const rows: Array<{ key: string; sql: string; values: unknown[] }> = [];
  for (const { entity, items } of batches) {
    if (!guarded && !em.getTransactionContext())
      throw new Error(`preparedInsert(${entity.name}) outside a transaction`);
    for (const item of items) rows.push(insertOf(em, entity, item));
  }
  return rows;
}

/** The prepared insert of one row of `entity`: its shape's key, its text and its values. */
function insertOf<T extends object>(
  em: EntityManager,
  entity: EntityClass<T>,
  item: T,
): { key: string; sql: string; values: unknown[] } {
  const meta = em.getMetadata().get(entity.name);
  const platform = em.getPlatform();
  const given: EntityProperty[] = [];
  const values: unknown[] = [];
  for (const prop of writtenProps(meta).values()) {
    const value = (item as Record<string, unknown>)[prop.name];
    if (value === undefined) continue;
    given.push(prop);
    values.push(databaseValue(platform, prop, value));
  }
  const key = `insert|${meta.tableName}|${given.map((p) => p.name).join(',')}`;
  let sql = texts.get(key);
  if (!sql) {
    sql = `insert into "${meta.tableName}" (${given.map((p) => `"${p.fieldNames[0]}"`).join(', ')}) values (${given.map(() => '?').join(', ')})`;
    texts.set(key, sql);
  }
  return { key, sql, values };
}

/**
 * Sets `values` (property names) on the rows of `entity` that `where` matches, in the transaction
 * `em` runs in, by one prepared statement per shape; returns the number of rows it matched. Values
 * convert as in `preparedInsert`; `where` takes what the prepared reads take.
 */
export async function preparedUpdate<T extends object>(
  em: EntityManager,
  entity: EntityClass<T>,
  where: Record<string, unknown>,
  values: Record<string, unknown>,
): Promise<number> {
  const update = updateOf(em, { entity, where, values });
  return write(em, update.sql, update.values);
}

/** An update for `preparedUpdateWithInserts`: `values` set on the rows `where` matches. */
export interface UpdateStep<T extends object = object> {
  entity: EntityClass<T>;
  where: Record<string, unknown>;
  values: Record<string, unknown>;
}

/**
 * `preparedUpdate`, then `preparedInserts` of `batches`, in one round trip on PostgreSQL: one
 * statement whose `with` parts are the update (returning its rows) and the inserts, answering the
 * number of rows the update matched. On SQLite (and for more rows than one statement takes) the
 * update, then the inserts only if it matched any. In the one statement the inserts are written
 * whatever the update matched: a caller that expected a row (a guarded move whose row was changed
 * meanwhile) refuses, and its transaction rolls them back.
 */
export async function preparedUpdateWithInserts(
  em: EntityManager,
  step: UpdateStep,
  batches: readonly InsertBatch[],
): Promise<number> {
  const update = updateOf(em, step);
  const rows = insertsOf(em, batches);
  if (!isPostgresClient(em.getKnex().client) || rows.length >= ROWS_PER_STATEMENT) {
    const changed = await write(em, update.sql, update.values);
    if (changed > 0) await writeInserts(em, rows);
    return changed;
  }
  const key = `updated+inserts|${update.key}|${rows.map((r) => r.key).join('|')}`;
  let sql = texts.get(key);
  if (!sql) {
    const parts = [`u as (${update.sql} returning 1)`, ...rows.map((row, n) => `w${n} as (${row.sql})`)];
    sql = `with ${parts.join(', ')} select count(*) as changed from u`;
    texts.set(key, sql);
  }
  const { items } = await read(em, { arrays: () => (result) => ({ items: result }) }, sql, [
    ...update.values,
    ...rows.flatMap((row) => row.values),
  ]);
  return Number(items[0]?.[0] ?? 0);
}

/** The prepared update of `step`: its shape's key, its text and its values. */
function updateOf(
  em: EntityManager,
  step: UpdateStep,
  guarded = false,
): { key: string; sql: string; values: unknown[] } {
  const { entity, where, values } = step;
  if (!guarded && !em.getTransactionContext())
    throw new Error(`preparedUpdate(${entity.name}) outside a transaction`);
  const meta = em.getMetadata().get(entity.name);
  const { shape, values: bound } = termsOf(meta, where);
  if (shape.length === 0) throw new Error(`preparedUpdate(${entity.name}) without a condition`);
  const platform = em.getPlatform();
  const props = writtenProps(meta);
  const set = Object.keys(values).filter((name) => values[name] !== undefined);
  const setProps = set.map((name) => {
    const prop = props.get(name);
    if (!prop) throw new Error(`${meta.className} has no column for '${name}'`);
    return prop;
  });
  const key = `update|${meta.tableName}|${set.join(',')}|${shape.join('&')}`;
  let sql = texts.get(key);
  if (!sql) {
    sql = `update "${meta.tableName}" set ${setProps.map((p) => `"${p.fieldNames[0]}" = ?`).join(', ')} where ${shape.join(' and ')}`;
    texts.set(key, sql);
  }
  return { key, sql, values: [...setProps.map((p) => databaseValue(platform, p, values[p.name])), ...bound] };
}

/** A prepared better-sqlite3 statement that changes rows. */
interface SqliteWrite {
  run(...params: unknown[]): { changes: number };
}
/** Write statements prepared on each SQLite connection, by SQL text. */
const sqliteWrites = new WeakMap<object, Lru<string, SqliteWrite>>();

/**
 * Runs a write on the transaction's connection (`em`'s, or `transaction`), prepared once per
 * connection; the rows it changed.
 */
async function write(
  em: EntityManager,
  sql: string,
  values: unknown[],
  transaction?: Knex.Transaction,
): Promise<number> {
  const result = await onPooledConnection(
    em,
    sql,
    values,
    {
      pg: (result) => ({ items: [], changed: (result as { rowCount?: number | null }).rowCount ?? 0 }),
      sqlite: (connection) => {
        let statements = sqliteWrites.get(connection);
        if (!statements)
          sqliteWrites.set(
            connection,
            (statements = new Lru<string, SqliteWrite>({ maxEntries: MAX_STATEMENTS })),
          );
        let statement = statements.get(sql);
        if (!statement) {
          statement = (connection as { prepare(sql: string): SqliteWrite }).prepare(sql);
          statements.set(sql, statement);
        }
        return { items: [], changed: statement.run(...values.map(sqliteValue)).changes };
      },
    },
    transaction,
  );
  return result.changed;
}

/**
 * The table whose write of no rows takes SQLite's write lock first in every write transaction: the
 * migrations' own table, present in every migrated database and touched by no trigger (src/db/orm.ts
 * names it to the migrator).
 */
export const MIGRATIONS_TABLE = 'schema_migrations';
/** The first statement of every write transaction on a SQLite file, after its BEGIN: a write of no rows. */
export const SQLITE_WRITE_LOCK = `update "${MIGRATIONS_TABLE}" set "id" = "id" where 0`;

/**
 * How long a SQLite transaction waits for the write lock that another connection holds before it
 * fails with `database is locked`: the `busy_timeout` every connection is opened with (src/db/orm.ts).
 */
export const SQLITE_BUSY_TIMEOUT_MS = 5_000;
/** Between two tries for the write lock while another connection holds it. */
const LOCK_RETRY_MS = 1;

/** What a SQLite connection's write-lock tries need of it (better-sqlite3's Database). */
interface SqliteLockConnection {
  prepare(sql: string): { run(): unknown; get(): unknown };
  exec(sql: string): unknown;
  readonly inTransaction: boolean;
}
/** Per connection: the lock statement, and the `busy_timeout` pragmas a try runs it between. */
const sqliteLocks = new WeakMap<
  object,
  { lock: { run(): unknown }; noWait: { get(): unknown }; wait: { get(): unknown } }
>();

const isBusy = (error: unknown): boolean =>
  typeof (error as { code?: unknown } | null)?.code === 'string' &&
  (error as { code: string }).code.startsWith('SQLITE_BUSY');

/**
 * One try for the write lock: the lock statement run with `busy_timeout` 0, so that SQLite's busy
 * handler never sleeps on the calling thread; the busy error when another connection holds the lock.
 * The transaction has done nothing yet, so a failed try leaves it as it began, open with no lock
 * and no snapshot (SQLite keeps a transaction open past a busy statement); were it ended all the
 * same, it is begun again rather than letting the rest of the transaction run statement by statement.
 */
function tryWriteLock(connection: SqliteLockConnection): unknown {
  let statements = sqliteLocks.get(connection);
  if (!statements) {
    const timeout = connection.prepare('pragma busy_timeout').get() as { timeout?: number } | undefined;
    statements = {
      lock: connection.prepare(SQLITE_WRITE_LOCK),
      noWait: connection.prepare('pragma busy_timeout = 0'),
      wait: connection.prepare(`pragma busy_timeout = ${Number(timeout?.timeout ?? SQLITE_BUSY_TIMEOUT_MS)}`),
    };
    sqliteLocks.set(connection, statements);
  }
  statements.noWait.get();
  try {
    statements.lock.run();
    return undefined;
  } catch (error) {
    if (!isBusy(error)) throw error;
    if (!connection.inTransaction) connection.exec('begin');
    return error;
  } finally {
    statements.wait.get();
  }
}

/**
 * SQLite only (`WriteLockFirst` subscribes on a SQLite file alone): makes the transaction
 * `transaction` that has just begun a write transaction before it reads anything, by a write of no
 * rows (`SQLITE_WRITE_LOCK`: an update `where 0` still takes the database's write lock). A
 * transaction that reads first holds a snapshot: if another connection commits
 * before its first write, that write fails at once with `SQLITE_BUSY_SNAPSHOT`, without waiting.
 * Taken first, the lock waits for the other writer to commit, and every read after it sees that
 * commit. The wait is asynchronous: a try every millisecond for up to `SQLITE_BUSY_TIMEOUT_MS`,
 * then the last try's `database is locked`. SQLite's own wait (its busy handler) would sleep on
 * the calling thread, the server's event loop, holding every other request back meanwhile.
 */
export async function takeSqliteWriteLock(em: EntityManager, transaction: Knex.Transaction): Promise<void> {
  const client = transaction.client;
  // knex's client types its connections as `any`: on SQLite it is better-sqlite3's Database.
  const connection = (await client.acquireConnection()) as SqliteLockConnection;
  try {
    await waitForWriteLock(em, connection);
  } finally {
    await client.releaseConnection(connection);
  }
}

/** The tries of `takeSqliteWriteLock` on a connection whose transaction has just begun. */
async function waitForWriteLock(em: EntityManager, connection: SqliteLockConnection): Promise<void> {
  const started = Date.now();
  const deadline = performance.now() + SQLITE_BUSY_TIMEOUT_MS;
  for (;;) {
    let busy: unknown;
    try {
      busy = tryWriteLock(connection);
    } catch (error) {
      throw converted(em, error);
    }
    if (busy === undefined) break;
    if (performance.now() >= deadline) throw converted(em, busy);
    await new Promise((resolve) => setTimeout(resolve, LOCK_RETRY_MS));
  }
  logRead(em, SQLITE_WRITE_LOCK, [], started, []);
}

/** What `preparedTransaction` holds for the entity manager its work runs with. */
interface OwnTransaction {
  /** The connection taken from knex's pool, from BEGIN to COMMIT or ROLLBACK. */
  connection: object;
  postgres: boolean;
}

/** The open transactions of `preparedTransaction`, by the entity manager their work runs with. */
const ownTransactions = new WeakMap<EntityManager, OwnTransaction>();

/**
 * The transaction an entity manager of `preparedTransaction` reports to the ORM: every prepared
 * statement here sees a transaction (`getTransactionContext()` is set), while the ORM, which would
 * run a query of its own on it, reads a property of it and is refused with an error that names the
 * mistake, instead of running the query outside the transaction.
 */
const ORM_REFUSED: object = new Proxy(Object.freeze({}), {
  get(_target, property) {
    // `await` and inspection look for these; the object has none.
    if (typeof property === 'symbol' || property === 'then') return undefined;
    throw new Error(
      `the ORM was asked to run a query inside preparedTransaction (it read '${property}' of the transaction); work in such a transaction runs only the prepared statements of src/db/prepared.ts`,
    );
  },
});

/** BEGIN, COMMIT and ROLLBACK of a SQLite connection, prepared once per connection. */
const sqliteControls = new WeakMap<object, Record<Control, { run(): unknown }>>();
type Control = 'begin' | 'commit' | 'rollback';

/** Runs BEGIN, COMMIT or ROLLBACK on the transaction's connection, logged as the ORM logs it. */
async function control(em: EntityManager, own: OwnTransaction, statement: Control): Promise<void> {
  const started = Date.now();
  try {
    if (own.postgres) {
      await (own.connection as PgConnection).query({ text: statement });
    } else {
      let controls = sqliteControls.get(own.connection);
      if (!controls) {
        const connection = own.connection as SqliteLockConnection;
        controls = {
          begin: connection.prepare('begin'),
          commit: connection.prepare('commit'),
          rollback: connection.prepare('rollback'),
        };
        sqliteControls.set(own.connection, controls);
      }
      controls[statement].run();
    }
  } catch (error) {
    throw converted(em, error);
  }
  logRead(em, statement, [], started, []);
}

/**
 * Runs `work` in a transaction of its own on a connection taken from knex's pool, for a change that
 * runs only the prepared statements here (`preparedLockJoined`, `preparedInserts`,
 * `preparedUpdateWithInserts`, …): the port-operations writes made of them (src/port-ops). BEGIN
 * and COMMIT go to the connection itself, so the change costs no ORM transaction (a fork, knex's
 * transaction object with a knex of its own, its transaction events, a flush with nothing to flush)
 * and no statement of knex's, which prepares its text again on every call: about 120 µs of the event
 * loop for every write, measured on an empty transaction against ~10 µs here. On SQLite the write
 * lock is taken first, as in every ORM transaction (`takeSqliteWriteLock`), on the connection the
 * transaction holds.
 *
 * `work` gets an entity manager whose statements run on that connection. The ORM itself cannot run a
 * query in this transaction: asking it to (a `find`, a `flush`, `knexIn`) throws, and the
 * transaction rolls back; an entity persisted without a flush is refused the same way, rather than
 * dropped. On any error the transaction rolls back and the error is the caller's; a PostgreSQL
 * connection whose rollback failed is closed, so that the pool never hands out an open transaction.
 */
export async function preparedTransaction<T>(
  em: EntityManager,
  work: (tx: EntityManager) => Promise<T>,
): Promise<T> {
  const client = em.getKnex().client;
  const postgres = isPostgresClient(client);
  // knex's client types its connections as `any`; they are the driver's connections.
  const own: OwnTransaction = { connection: (await client.acquireConnection()) as object, postgres };
  const tx = em.fork();
  tx.setTransactionContext(ORM_REFUSED);
  ownTransactions.set(tx, own);
  let open = false;
  try {
    await control(em, own, 'begin');
    open = true;
    if (!postgres) await waitForWriteLock(em, own.connection as SqliteLockConnection);
    const result = await work(tx);
    if (tx.getUnitOfWork().getPersistStack().size > 0)
      throw new Error(
        'an entity was persisted inside preparedTransaction, which flushes nothing: write it with preparedInserts',
      );
    // A COMMIT that fails leaves PostgreSQL's transaction ended, and SQLite's open (a busy commit).
    open = !postgres;
    await control(em, own, 'commit');
    open = false;
    return result;
  } catch (error) {
    if (open && (postgres || (own.connection as SqliteLockConnection).inTransaction)) {
      await control(em, own, 'rollback').catch(async () => {
        if (postgres) await (own.connection as { end(): Promise<void> }).end().catch(() => undefined);
      });
    }
    throw error;
  } finally {
    ownTransactions.delete(tx);
    tx.resetTransactionContext();
    await client.releaseConnection(own.connection);
  }
}

/** Prefix of the joined row's columns in `preparedInJoined`: no entity names a column so. */
const JOINED = 'joined__';

/**
 * `preparedIn` and, in the same statement, the rows of `joined.entity` that the rows' `joined.on`
 * property names (each once): one statement for two levels of a nested read whose second level is
 * a single row per parent, such as a service order's vendor. `props` narrows the properties read
 * of either (`own`, `joined`); the joined entity's primary key is always read.
 */
export async function preparedInJoined<T extends object, J extends object>(
  em: EntityManager,
  entity: EntityClass<T>,
  prop: string,
  keys: readonly unknown[],
  joined: { entity: EntityClass<J>; on: string },
  props: { own?: readonly string[]; joined?: readonly string[] } = {},
): Promise<{ items: T[]; joined: J[] }> {
  const meta = em.getMetadata().get(entity.name);
  const joinedMeta = em.getMetadata().get(joined.entity.name);
  const primaryProp = joinedMeta.primaryKeys[0] as string;
  const primary = joinedMeta.properties[primaryProp as keyof typeof joinedMeta.properties]!.fieldNames[0]!;
  const key = `joined|${meta.tableName}|${prop}|${keys.length}|${joinedMeta.tableName}|${joined.on}|${propsKey(props.own)}|${propsKey(props.joined)}`;
  let sql = texts.get(key);
  if (!sql) {
    const wanted = props.joined && new Set([primaryProp, ...props.joined]);
    const columns = joinedMeta.props
      .filter((p) => p.fieldNames?.length === 1 && (!wanted || wanted.has(p.name)))
      .map((p) => `j."${p.fieldNames[0]}" as "${JOINED}${p.fieldNames[0]}"`);
    sql = `select ${selected(meta, props.own, 'e')}, ${columns.join(', ')} from "${meta.tableName}" e left join "${joinedMeta.tableName}" j on j."${primary}" = e.${columnOf(meta, joined.on)} where e.${columnOf(meta, prop)} in (${keys.map(() => '?').join(', ')})`;
    texts.set(key, sql);
  }
  const reader: Reader<{ items: T[]; joined: J[] }> = {
    arrays: (columns, jsonIsText) => {
      const own = rowMapper(em, meta, entity as EntityClass<object>, columns, undefined, jsonIsText);
      const other = rowMapper(
        em,
        joinedMeta,
        joined.entity as EntityClass<object>,
        columns,
        undefined,
        jsonIsText,
        JOINED,
      );
      const idAt = columns.indexOf(JOINED + primary);
      return (rows) => ({
        items: own(rows).items as T[],
        joined: other(distinct(rows, (row) => row[idAt])).items as J[],
      });
    },
  };
  return read(em, reader, sql, keys as unknown[]);
}

/** The first row of each non-null `id`, in order. */
function distinct<R>(rows: R[], id: (row: R) => unknown): R[] {
  const seen = new Set<unknown>();
  return rows.filter((row) => {
    const value = id(row);
    if (value === null || value === undefined || seen.has(value)) return false;
    seen.add(value);
    return true;
  });
}
