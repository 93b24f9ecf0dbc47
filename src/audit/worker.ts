import type { Worker } from 'node:worker_threads';
import type { Database } from '../db/orm.js';
import { connectionPool, startSqliteWorker, type SqliteHandle } from '../db/sqlite-worker.js';

/*
 * On a SQLite file the audit rows are inserted by a worker thread with a connection of its own,
 * not on the serving connection. An insert into the audit table (three indexes besides the primary
 * key) costs SQLite 6–16 µs of CPU a row; on the serving connection that is the event loop, on which
 * every request waits, and the audit log takes a row for every request: a sixth to a quarter of a
 * kept REST answer's time. The serving thread still builds each row's bound values; the worker runs
 * the prepared statements.
 *
 * The worker's transactions take SQLite's one write lock like any other writer's (the CLI's, a second
 * gateway's: src/db/README.md, "Concurrent writers"): at most `ROWS_PER_TRANSACTION` rows each, so a
 * serving transaction that waits for the lock waits about a millisecond. A batch the worker did not
 * store (an error, the thread gone) is written on the serving connection as before, from the first
 * row the worker did not commit: nothing is lost or written twice.
 */

/** Rows per transaction in the worker: how long the write lock is held (about 10 µs a row). */
const ROWS_PER_TRANSACTION = 100;

/** What the worker answers for a batch: how many of its rows it committed, and why it stopped. */
interface Reply {
  id: number;
  stored: number;
  error?: string;
}

/**
 * The worker (started by src/db/sqlite-worker.ts, as the checkpoint worker). It opens the database
 * file with the serving connection's `synchronous`, and inserts each batch it is sent with two prepared statements: one
 * of `chunk` rows and one of a single row.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Sqlite = require(workerData.driver);
const db = new Sqlite(workerData.file, { fileMustExist: true });
db.pragma('busy_timeout = 5000');
db.pragma('foreign_keys = ON');
db.pragma('synchronous = ' + workerData.synchronous);
// A multi-row insert inside a transaction keeps a statement journal (so that it alone can be undone):
// in memory, not spilled to a file in /var/tmp a page at a time (src/db/README.md, "Temporary files").
db.pragma('temp_store = MEMORY');
const { columns, chunk, perTransaction } = workerData;
let one, many;
const insert = db.transaction((values, from, to) => {
  one ??= db.prepare(workerData.oneSql);
  many ??= db.prepare(workerData.chunkSql);
  let row = from;
  for (; row + chunk <= to; row += chunk) many.run(values.slice(row * columns, (row + chunk) * columns));
  for (; row < to; row++) one.run(values.slice(row * columns, (row + 1) * columns));
});
parentPort.on('message', (message) => {
  if (message === 'stop') {
    db.close();
    parentPort.close();
    return;
  }
  const { id, values, rows } = message;
  let stored = 0;
  try {
    for (; stored < rows; stored = Math.min(rows, stored + perTransaction))
      insert(values, stored, Math.min(rows, stored + perTransaction));
    parentPort.postMessage({ id, stored });
  } catch (error) {
    parentPort.postMessage({ id, stored, error: String(error && error.message || error) });
  }
});
parentPort.postMessage({ kind: 'ready' });
`;

/** The insert statements the worker prepares, and the shape of the values it is sent. */
export interface AuditInserts {
  /** Columns per row: a batch's values are its rows' bound values one after the other. */
  columns: number;
  /** Rows per statement of `chunkSql`. */
  chunk: number;
  oneSql: string;
  chunkSql: string;
}

export interface AuditThread {
  /** The thread (tests stop it from outside to play a crash). */
  readonly worker: Worker;
  /**
   * Inserts `rows` rows, whose bound values are `values` row after row; resolves with how many of
   * them, from the first, are committed (all, or fewer with the reason), never rejects.
   */
  insert(values: unknown[], rows: number): Promise<{ stored: number; error?: string }>;
  /** Stops the thread once the batches sent are answered. */
  stop(): Promise<void>;
}

/**
 * Starts the audit worker on the database's file; undefined where the serving connection is the
 * only one that can write it (PostgreSQL, whose server does the work anyway; an in-memory SQLite
 * database). Resolves once the worker has opened the file.
 */
export async function startAuditThread(
  db: Database,
  inserts: AuditInserts,
): Promise<AuditThread | undefined> {
  if (db.dialect !== 'sqlite') return undefined;
  const pool = connectionPool(db);
  // knex's client types its pooled connections as `any`; on this dialect each is a better-sqlite3 Database.
  const handle = (await pool.acquireConnection()) as SqliteHandle;
  let file: string;
  let synchronous: unknown;
  try {
    if (handle.memory) return undefined;
    file = handle.name;
    synchronous = handle.pragma('synchronous', { simple: true });
  } finally {
    await pool.releaseConnection(handle);
  }
  const worker = await startSqliteWorker('audit worker', WORKER_SOURCE, {
    file,
    synchronous: Number(synchronous),
    perTransaction: ROWS_PER_TRANSACTION,
    ...inserts,
  });

  const pending = new Map<number, (reply: { stored: number; error?: string }) => void>();
  let next = 0;
  let gone: string | undefined;
  const endAll = (reason: string) => {
    gone ??= reason;
    for (const [id, resolve] of pending) {
      pending.delete(id);
      resolve({ stored: 0, error: reason });
    }
  };
  worker.on('message', (reply: Reply) => {
    const resolve = pending.get(reply.id);
    pending.delete(reply.id);
    resolve?.(
      reply.error === undefined ? { stored: reply.stored } : { stored: reply.stored, error: reply.error },
    );
  });
  worker.on('error', (error) => endAll(`audit worker failed: ${error.message}`));
  worker.on('exit', (code) => endAll(`audit worker exited (code ${code})`));

  return {
    worker,
    insert(values, rows) {
      if (gone) return Promise.resolve({ stored: 0, error: gone });
      const id = ++next;
      return new Promise((resolve) => {
        pending.set(id, resolve);
        worker.postMessage({ id, values, rows });
      });
    },
    async stop() {
      if (gone) return;
      const exited = new Promise((resolve) => worker.once('exit', resolve));
      worker.postMessage('stop');
      await exited;
    },
  };
}
