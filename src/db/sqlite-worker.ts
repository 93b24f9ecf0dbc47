import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';
import type { Database } from './orm.js';

/*
 * What the server's SQLite worker threads share (the checkpoint worker, src/db/checkpoints.ts; the
 * audit log's, src/audit/worker.ts): each is a CommonJS script run by `eval`, so it needs no file of
 * its own in the build, loads better-sqlite3 from the path the server resolved and opens the
 * serving connection's file on a connection of its own.
 */

/** The pool that hands out the serving connection (knex's client, typed as `any` by knex). */
export interface ConnectionPool {
  acquireConnection(): Promise<unknown>;
  releaseConnection(connection: unknown): Promise<unknown>;
}

/** The better-sqlite3 handle of a pooled connection: its file, whether it is open, and its pragmas. */
export interface SqliteHandle {
  readonly name: string;
  readonly memory: boolean;
  readonly open: boolean;
  pragma(source: string, options?: { simple: boolean }): unknown;
}

/** The pool of a SQLite database's serving connection. */
export function connectionPool(db: Database): ConnectionPool {
  return db.root.getConnection().getKnex().client as ConnectionPool;
}

/**
 * Starts `source` as a worker thread with `data` and `driver` (better-sqlite3's path) as its
 * `workerData`, and resolves once it posts `{ kind: 'ready' }` (rejects if it fails or posts anything
 * else first). The thread does not keep the process alive: a process that exits without stopping it
 * must not hang on it.
 */
export async function startSqliteWorker(
  what: string,
  source: string,
  data: Record<string, unknown>,
): Promise<Worker> {
  const worker = new Worker(source, {
    eval: true,
    workerData: { driver: createRequire(import.meta.url).resolve('better-sqlite3'), ...data },
  });
  worker.unref();
  await new Promise<void>((resolve, reject) => {
    const failed = (error: unknown) => reject(error instanceof Error ? error : new Error(String(error)));
    worker.once('error', failed);
    worker.once('message', (message: { kind?: unknown }) => {
      worker.off('error', failed);
      if (message.kind === 'ready') resolve();
      else failed(new Error(`${what}: unexpected first message ${String(message.kind)}`));
    });
  });
  return worker;
}
