import { isIPv4, isIPv6 } from 'node:net';
import type { Platform } from '@mikro-orm/core';
import type { Database } from '../db/orm.js';
import { sha256Hex } from '../kernel/crypto.js';
import { Lru } from '../kernel/lru.js';
import type { AuditEntry, AuditLog } from '../gateway/schema/context.js';
import { AuditRecord } from './entities.js';
import { startAuditThread, type AuditThread } from './worker.js';

export type { AuditEntry } from '../gateway/schema/context.js';

/** /24 for IPv4, /48 for IPv6: a session that hops addresses inside one network keeps its fingerprint. */
export function ipPrefix(ip: string): string {
  const v4 = ip.startsWith('::ffff:') ? ip.slice(7) : ip;
  if (isIPv4(v4)) return v4.split('.').slice(0, 3).join('.') + '.0/24';
  if (isIPv6(ip)) {
    const groups = expandIpv6(ip);
    return groups.slice(0, 3).join(':') + '::/48';
  }
  return ip;
}

function expandIpv6(ip: string): string[] {
  const [head, tail] = ip.split('::') as [string, string | undefined];
  const left = head ? head.split(':') : [];
  const right = tail ? tail.split(':') : [];
  const fill = Array(8 - left.length - right.length).fill('0');
  return [...left, ...(tail === undefined ? [] : fill), ...right].map((g) => g.toLowerCase());
}

export function sessionFingerprint(
  credentialId: string | null | undefined,
  ip: string | null | undefined,
  userAgent: string | null | undefined,
): string | null {
  if (!credentialId) return null;
  // Calls come in runs from one session: the last one's parts are compared before any key is built.
  const last = lastFingerprint;
  if (last && last.credentialId === credentialId && last.ip === ip && last.userAgent === userAgent)
    return last.fingerprint;
  // Remembered by the exact address: the prefix and the hash are computed once per session.
  const seen = `${credentialId}|${ip ?? ''}|${userAgent ?? ''}`;
  let fingerprint = recentFingerprints.get(seen);
  if (fingerprint === undefined) {
    fingerprint = sha256Hex(`${credentialId}|${ip ? ipPrefix(ip) : ''}|${userAgent ?? ''}`).slice(0, 32);
    recentFingerprints.set(seen, fingerprint);
  }
  lastFingerprint = { credentialId, ip, userAgent, fingerprint };
  return fingerprint;
}

let lastFingerprint:
  | {
      credentialId: string;
      ip: string | null | undefined;
      userAgent: string | null | undefined;
      fingerprint: string;
    }
  | undefined;

/** A session makes many calls in a row: remember its fingerprint instead of hashing each time. */
const recentFingerprints = new Lru<string, string>({ maxEntries: 1_000 });

/** The columns an audit row is written with, and each one's PostgreSQL type (for `unnest`). */
const COLUMN_TYPES = {
  at: 'timestamptz',
  request_id: 'text',
  account_id: 'uuid',
  credential_kind: 'text',
  credential_id: 'text',
  ip: 'text',
  user_agent: 'text',
  fingerprint: 'text',
  operation: 'text',
  status: 'int4',
  duration_ms: 'int4',
  door: 'text',
  error_code: 'text',
} as const;
const COLUMNS = Object.keys(COLUMN_TYPES) as Array<keyof typeof COLUMN_TYPES>;
const ROW_PLACEHOLDERS = `(${COLUMNS.map(() => '?').join(', ')})`;

type BoundValue = string | number | Date | null;

/**
 * Writes the bound values of `e` into `into` from index `i` on, in COLUMNS order (dates as the ORM
 * stores them on this dialect), and returns the index after them.
 */
function bindEntry(platform: Platform, e: AuditEntry, into: BoundValue[], i: number): number {
  into[i++] = platform.processDateProperty(e.at) as BoundValue;
  into[i++] = e.requestId;
  into[i++] = e.accountId ?? null;
  into[i++] = e.credentialKind ?? null;
  into[i++] = e.credentialId ?? null;
  into[i++] = e.ip ?? null;
  into[i++] = e.userAgent?.slice(0, 512) ?? null;
  into[i++] = sessionFingerprint(e.credentialId, e.ip, e.userAgent);
  into[i++] = e.operation.slice(0, 200);
  into[i++] = e.status;
  into[i++] = Math.round(e.durationMs);
  into[i++] = e.door ?? null;
  into[i++] = e.errorCode?.slice(0, 40) ?? null;
  return i;
}

/**
 * Writes the bound values of `rows` into `into`, row after row, and returns it: one array per
 * statement, no array per row.
 */
function bindRows(platform: Platform, rows: readonly AuditEntry[], into: BoundValue[] = []): BoundValue[] {
  let i = 0;
  for (const e of rows) i = bindEntry(platform, e, into, i);
  into.length = i;
  return into;
}

/** The bound values of `rows` as one array per column, for the PostgreSQL statement. */
function bindColumns(platform: Platform, rows: readonly AuditEntry[]): BoundValue[][] {
  const columns = COLUMNS.map(() => new Array<BoundValue>(rows.length));
  const row: BoundValue[] = [];
  rows.forEach((e, r) => {
    bindEntry(platform, e, row, 0);
    for (let c = 0; c < columns.length; c++) columns[c]![r] = row[c]!;
  });
  return columns;
}

function insertSql(db: Database, rows: number): string {
  const em = db.em();
  const platform = em.getPlatform();
  const table = em.getMetadata().get(AuditRecord.name).tableName;
  return `insert into ${platform.quoteIdentifier(table)} (${COLUMNS.map((c) => platform.quoteIdentifier(c)).join(', ')}) values ${Array(rows).fill(ROW_PLACEHOLDERS).join(', ')}`;
}

/**
 * The PostgreSQL insert of any number of rows: one array per column, `unnest`ed. One text whatever
 * the batch's size, so it runs as a named statement the server parses and plans once per
 * connection; a multi-row VALUES list of 13 parameters a row was parsed anew for every batch and
 * cost the server about three times the CPU per row (measured: ~18 µs against ~6 µs).
 */
function pgInsert(db: Database): { name: string; text: string } {
  const em = db.em();
  const platform = em.getPlatform();
  const table = em.getMetadata().get(AuditRecord.name).tableName;
  const arrays = COLUMNS.map((c, i) => `$${i + 1}::${COLUMN_TYPES[c]}[]`).join(', ');
  return {
    name: 'tidegate_audit_insert',
    text: `insert into ${platform.quoteIdentifier(table)} (${COLUMNS.map((c) => platform.quoteIdentifier(c)).join(', ')}) select * from unnest(${arrays})`,
  };
}

/** A pooled `pg` connection: a named statement runs parsed once per connection. */
interface PgConnection {
  query(config: { name: string; text: string; values: unknown[] }): Promise<unknown>;
}

/** A prepared better-sqlite3 statement: bound values in, nothing out. */
interface SqliteStatement {
  run(...params: unknown[]): unknown;
}
interface SqliteConnection {
  prepare(sql: string): SqliteStatement;
  transaction(fn: () => void): () => void;
}

/** Rows per prepared statement on SQLite; a batch is written as chunks of this many plus single rows. */
const SQLITE_CHUNK = 50;

/**
 * Writes one batch. The audit log grows by a row on every call, so this skips the ORM's query
 * builder (which inlines and quotes every value). On SQLite the INSERTs are statements prepared
 * once per connection, run in one transaction on the pool's single connection (taken from the
 * pool, so never inside another request's transaction); on PostgreSQL one named statement
 * inserting the batch from one array per column (`pgInsert`).
 */
async function insertAuditRows(
  db: Database,
  batch: AuditEntry[],
  statements: WeakMap<object, Map<number, SqliteStatement>>,
): Promise<void> {
  const em = db.em();
  const knex = em.getConnection().getKnex();
  const platform = em.getPlatform();
  if (db.dialect === 'postgresql') {
    // knex's client types its pooled connections as `any`; on this dialect each is a pg Client.
    const connection = (await knex.client.acquireConnection()) as PgConnection;
    try {
      await connection.query({ ...pgInsert(db), values: bindColumns(platform, batch) });
    } finally {
      await knex.client.releaseConnection(connection);
    }
    return;
  }
  // knex's client types its pooled connections as `any`; on this dialect each is a better-sqlite3 Database.
  const connection = (await knex.client.acquireConnection()) as SqliteConnection;
  try {
    let prepared = statements.get(connection);
    if (!prepared) statements.set(connection, (prepared = new Map()));
    const statementFor = (rows: number) => {
      let statement = prepared.get(rows);
      if (!statement) prepared.set(rows, (statement = connection.prepare(insertSql(db, rows))));
      return statement;
    };
    connection.transaction(() => {
      const values: BoundValue[] = [];
      let i = 0;
      for (; i + SQLITE_CHUNK <= batch.length; i += SQLITE_CHUNK) {
        statementFor(SQLITE_CHUNK).run(bindRows(platform, batch.slice(i, i + SQLITE_CHUNK), values));
      }
      for (; i < batch.length; i++) statementFor(1).run(bindRows(platform, [batch[i]!], values));
    })();
  } finally {
    await knex.client.releaseConnection(connection);
  }
}

/**
 * Appends audit records in small batches off the request path: on a SQLite file through a worker
 * thread once `start` has started it (src/audit/worker.ts), else on the serving connection. A crash
 * can lose at most the last flush interval; `close` stores what is buffered.
 */
export class AuditWriter implements AuditLog {
  private buffer: AuditEntry[] = [];
  private readonly statements = new WeakMap<object, Map<number, SqliteStatement>>();
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> = Promise.resolve();
  private thread: AuditThread | undefined;
  /** Rows stored so far by the worker thread and by the serving connection (tests). */
  readonly stored = { thread: 0, connection: 0 };

  constructor(
    private readonly db: Database,
    private readonly onError: (error: unknown) => void,
    private readonly flushMs = 250,
    private readonly maxBatch = 500,
  ) {}

  /**
   * Starts the worker thread that inserts the rows, where there is one to start (a SQLite file);
   * rejects if it cannot start, and the rows stay on the serving connection.
   */
  async start(): Promise<void> {
    this.thread = await startAuditThread(this.db, {
      columns: COLUMNS.length,
      chunk: SQLITE_CHUNK,
      oneSql: insertSql(this.db, 1),
      chunkSql: insertSql(this.db, SQLITE_CHUNK),
    });
  }

  /** The worker thread, when one inserts the rows (tests). */
  get worker(): AuditThread['worker'] | undefined {
    return this.thread?.worker;
  }

  /** Stores what is buffered, then stops the worker thread. */
  async close(): Promise<void> {
    await this.flush();
    const thread = this.thread;
    this.thread = undefined;
    await thread?.stop();
  }

  record(entry: AuditEntry): void {
    this.buffer.push(entry);
    if (this.buffer.length >= this.maxBatch) {
      void this.flush();
    } else if (!this.timer) {
      this.timer = setTimeout(() => void this.flush(), this.flushMs);
      this.timer.unref();
    }
  }

  /** Writes everything buffered so far; resolves when it is stored. */
  flush(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    const batch = this.buffer;
    this.buffer = [];
    this.flushing = this.flushing.then(async () => {
      if (batch.length === 0) return;
      let rest = batch;
      if (this.thread) {
        const platform = this.db.root.getPlatform();
        const { stored, error } = await this.thread.insert(bindRows(platform, batch), batch.length);
        this.stored.thread += stored;
        if (error === undefined) return;
        // What the worker did not commit is written here, from its first row not stored.
        this.onError(new Error(`audit worker stored ${stored} of ${batch.length} rows: ${error}`));
        rest = batch.slice(stored);
      }
      try {
        await insertAuditRows(this.db, rest, this.statements);
        this.stored.connection += rest.length;
      } catch (error) {
        this.onError(error);
      }
    });
    return this.flushing;
  }
}
