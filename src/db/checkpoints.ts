import type { Worker } from 'node:worker_threads';
import type { Database } from './orm.js';
import {
  connectionPool,
  startSqliteWorker,
  type ConnectionPool,
  type SqliteHandle,
} from './sqlite-worker.js';

/*
 * SQLite's write-ahead log is copied back into the database file by checkpoints. By default the
 * connection that commits runs one whenever the log passes 1,000 pages, inside that commit: on
 * the server's single connection that is the event loop, blocked for the copy and two fsyncs
 * (measured: 9–10 ms every half second while the audit log takes every request's row, against
 * about 1 ms for the batch itself). Every request waiting on the loop pays for it.
 *
 * So the server hands checkpoints to a worker thread with a connection of its own, as SQLite's
 * documentation suggests for applications that cannot afford the pause: the serving connection's
 * `wal_autocheckpoint` is 0, and the worker runs a PASSIVE checkpoint every interval. A passive
 * checkpoint takes no lock that a reader or writer waits on and never calls the busy handler; it
 * copies what no reader still needs. What a transaction reads or writes is unchanged: checkpoints
 * move pages between two files, never change what a snapshot sees.
 *
 * The log starts from its beginning again only when a write transaction begins with every frame
 * already copied: its first frame then goes to the log's start. Under a steady stream of writes
 * (one every few milliseconds) some frame is always newer than the worker's last checkpoint, so
 * the log would only grow, by every page every write touches, while the server runs (15 MB/s
 * under the mixed bench). So when the worker reports a complete checkpoint of a log past
 * `RESTART_FRAMES`, the server takes the pool's one connection as a transaction would (waiting
 * for the one in progress to end), asks the worker for another checkpoint, which copies the
 * frames written since, and gives the connection back: its next write starts the log over.
 * Meanwhile statements wait for the connection, as behind any transaction, while the event loop
 * serves everything else (the tail's copy is small, but its two fsyncs took 7–10 ms on the
 * serving thread). The log then stays within about the threshold plus a second's writes, and
 * `journal_size_limit` (orm.ts) truncates a file that a long reader let grow once the log starts
 * over.
 *
 * If the worker cannot start or stops on its own, the serving connection checkpoints for itself
 * again (wal_autocheckpoint 1000, SQLite's default), so the log never grows without bound.
 * Other processes on the same file (the CLI) keep SQLite's default throughout.
 */

/** How often the worker checkpoints: the log holds at most about this long's writes. */
const CHECKPOINT_INTERVAL_MS = 500;
/** SQLite's default threshold (pages), restored when the worker is not there to checkpoint. */
const AUTOCHECKPOINT_PAGES = 1000;
/** The log's length (frames, each a page) past which a complete checkpoint starts it over. */
const RESTART_FRAMES = AUTOCHECKPOINT_PAGES;

/** One checkpoint's figures, as `PRAGMA wal_checkpoint` reports them. */
export interface CheckpointResult {
  /** 1 when a lock kept the checkpoint from running at all. */
  busy: number;
  /** Frames in the log. */
  log: number;
  /** Frames of the log now in the database file. */
  checkpointed: number;
}

export interface BackgroundCheckpoints {
  /** Checkpoints the worker has run (tests). */
  readonly runs: number;
  /** The last checkpoint's figures, if one has run. */
  readonly last: CheckpointResult | undefined;
  /** Times the worker copied a long log's tail while the server held its connection, so that it starts over. */
  readonly restarts: number;
  /** The thread (tests stop it from outside to play a crash). */
  readonly worker: Worker;
  /** Stops the worker; the serving connection checkpoints for itself again. */
  stop(): Promise<void>;
}

/**
 * The worker (started by sqlite-worker.ts, as the audit log's): it opens the database file and
 * reports each checkpoint to the server.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const Sqlite = require(workerData.driver);
const db = new Sqlite(workerData.file, { fileMustExist: true });
db.pragma('busy_timeout = 1000');
const checkpoint = (requested) => {
  const [result] = db.pragma('wal_checkpoint(PASSIVE)');
  parentPort.postMessage({ kind: 'checkpoint', result, requested });
};
const timer = setInterval(() => checkpoint(false), workerData.intervalMs);
parentPort.on('message', (message) => {
  if (message === 'checkpoint') return checkpoint(true);
  if (message !== 'stop') return;
  clearInterval(timer);
  db.close();
  parentPort.close();
});
parentPort.postMessage({ kind: 'ready' });
`;

type WorkerMessage = { kind: 'checkpoint'; result: CheckpointResult; requested: boolean };

/**
 * Starts the checkpointing worker for the database's file; undefined when there is nothing to
 * checkpoint from another connection (PostgreSQL, an in-memory SQLite database). Resolves once
 * the worker has opened the file and the serving connection has stopped checkpointing itself.
 */
export async function startBackgroundCheckpoints(
  db: Database,
  onError: (error: unknown) => void,
  intervalMs = CHECKPOINT_INTERVAL_MS,
  restartFrames = RESTART_FRAMES,
): Promise<BackgroundCheckpoints | undefined> {
  if (db.dialect !== 'sqlite') return undefined;
  const pool = connectionPool(db);
  // knex's client types its pooled connections as `any`; on this dialect each is a better-sqlite3 Database.
  const handle = (await pool.acquireConnection()) as SqliteHandle;
  try {
    if (handle.memory) return undefined;
    return await runWorker(pool, handle, onError, intervalMs, restartFrames);
  } finally {
    await pool.releaseConnection(handle);
  }
}

async function runWorker(
  pool: ConnectionPool,
  handle: SqliteHandle,
  onError: (error: unknown) => void,
  intervalMs: number,
  restartFrames: number,
): Promise<BackgroundCheckpoints> {
  const worker = await startSqliteWorker('checkpoint worker', WORKER_SOURCE, {
    file: handle.name,
    intervalMs,
  });
  let runs = 0;
  let restarts = 0;
  let last: CheckpointResult | undefined;
  let stopping = false;
  // The pool keeps its one SQLite connection for the ORM's life; once closed there is nothing to set.
  const selfCheckpointing = () => {
    if (handle.open) handle.pragma(`wal_autocheckpoint = ${AUTOCHECKPOINT_PAGES}`);
  };
  handle.pragma('wal_autocheckpoint = 0');

  // The frames written since the worker's complete checkpoint, copied by the worker while the
  // server holds its connection: nothing writes in between, so the connection's next write
  // transaction begins with nothing left to copy and starts the log over. The worker's next
  // report tries again when the copy is incomplete (a reader of another process).
  let requested: ((result: CheckpointResult | undefined) => void) | undefined;
  let gone = false;
  let restarting: Promise<void> | undefined;
  const restartLog = async () => {
    let connection: unknown;
    try {
      connection = await pool.acquireConnection();
      // A pool that replaced its connection serves another handle; the worker's next report retries.
      if (connection !== handle || stopping || gone) return;
      const result = await new Promise<CheckpointResult | undefined>((resolve) => {
        requested = resolve;
        worker.postMessage('checkpoint');
      });
      if (result && result.busy === 0 && result.checkpointed === result.log) restarts++;
    } catch (error) {
      if (!stopping) onError(error);
    } finally {
      requested = undefined;
      if (connection !== undefined) await pool.releaseConnection(connection).catch(onError);
    }
  };
  worker.on('message', (message: WorkerMessage) => {
    if (message.kind !== 'checkpoint') return;
    runs++;
    last = message.result;
    if (message.requested) return requested?.(message.result);
    const { busy, log, checkpointed } = message.result;
    if (!restarting && !stopping && busy === 0 && log >= restartFrames && checkpointed === log)
      restarting = restartLog().finally(() => (restarting = undefined));
  });
  let failed = false;
  const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
  // A checkpoint asked of a worker that is gone never comes: the held connection is given back.
  void exited.then(() => {
    gone = true;
    requested?.(undefined);
  });
  worker.on('error', (error) => {
    failed = true;
    // The log must not grow without bound: the serving connection takes checkpoints back.
    selfCheckpointing();
    if (!stopping) onError(error);
  });
  void exited.then(() => {
    if (stopping || failed) return;
    selfCheckpointing();
    onError(new Error('the SQLite checkpoint worker stopped; the server checkpoints for itself again'));
  });
  return {
    worker,
    get runs() {
      return runs;
    },
    get last() {
      return last;
    },
    get restarts() {
      return restarts;
    },
    async stop() {
      if (stopping) return exited;
      stopping = true;
      selfCheckpointing();
      worker.postMessage('stop');
      await exited;
      // A restart in progress gives its connection back before the pool may close.
      await restarting;
    },
  };
}
