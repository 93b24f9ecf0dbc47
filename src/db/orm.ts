import 'reflect-metadata';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import {
  MikroORM,
  type EntityClass,
  type EventSubscriber,
  type IDatabaseDriver,
  type Options,
  type TransactionEventArgs,
} from '@mikro-orm/core';
import type { Constructor } from '@mikro-orm/core';
import type { EntityManager, Knex } from '@mikro-orm/knex';
import { Migrator } from '@mikro-orm/migrations';
import { DEFAULT_POOL_MAX, isPostgresUrl, type SqliteSynchronous } from '../config.js';
import { MIGRATIONS } from './migrations/index.js';
import { MIGRATIONS_TABLE, SQLITE_BUSY_TIMEOUT_MS, takeSqliteWriteLock } from './prepared.js';

/**
 * Runs `work` in a transaction that only reads (one snapshot of several tables), begun on the
 * connection itself, as the migrator begins its own: the ORM's transaction events do not see it,
 * so on SQLite it takes no write lock (`WriteLockFirst`), which would hold another process's
 * writes back for as long as a long read runs.
 */
export function readingTransaction<T>(
  em: EntityManager,
  work: (tx: EntityManager) => Promise<T>,
): Promise<T> {
  return em.getConnection().transactional(async (trx) => {
    const tx = em.fork();
    tx.setTransactionContext(trx);
    return work(tx);
  });
}

/**
 * On a SQLite file, every transaction the ORM begins (`em.transactional`) takes the write lock
 * as its first statement, so a read inside it can never be older than the write after it: see
 * `takeSqliteWriteLock` and [README.md](README.md#concurrent-writers). Transactions begun on the
 * connection itself (the migrator's, `readingTransaction`) raise no ORM events and keep SQLite's default.
 */
class WriteLockFirst implements EventSubscriber {
  async afterTransactionStart({ em, transaction }: TransactionEventArgs): Promise<void> {
    const trx = transaction as Knex.Transaction;
    try {
      await takeSqliteWriteLock(em as EntityManager, trx);
    } catch (error) {
      // The ORM has not handed the transaction to anyone yet: ended here, or it would keep the
      // connection (SQLite's pool has one) open for ever. The lock's error is the one to report.
      await trx.rollback().catch(() => undefined);
      throw error;
    }
  }
}

export type Dialect = 'sqlite' | 'postgresql';

export interface Database {
  orm: MikroORM;
  dialect: Dialect;
  /** A fresh, request-scoped entity manager. */
  em(): EntityManager;
  /**
   * The ORM's own entity manager, never forked: for statements that load no entities (a version
   * read on every request), which need its connection and not an identity map of their own.
   */
  readonly root: EntityManager;
  /** Runs pending migrations; returns the names applied. */
  migrate(): Promise<string[]>;
  /** The names of the migrations not yet applied. */
  pendingMigrations(): Promise<string[]>;
  /** True when the database answers a trivial query. */
  ping(): Promise<boolean>;
  close(): Promise<void>;
}

export interface DatabaseOptions {
  /** The entities the ORM maps: every domain's, passed in by the composition root (src/database.ts). */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- entity classes of any shape
  entities: EntityClass<any>[];
  /** Log every SQL statement through this callback (tests count statements with it). */
  onQuery?: (sql: string) => void;
  /** How long a query waits for a free PostgreSQL connection before failing (503); default 5 s. */
  poolAcquireTimeoutMs?: number;
  /** PostgreSQL connections the pool opens at most (DATABASE_POOL_MAX); default DEFAULT_POOL_MAX. */
  poolMax?: number;
  /**
   * SQLite's `synchronous` on this connection; default `normal`. With the write-ahead log, `normal`
   * syncs the log to disk at checkpoints and `full` at every commit as well (see README.md).
   */
  sqliteSynchronous?: SqliteSynchronous;
}

/** The driver of the dialect `url` names, loaded on demand: a process never loads the other one. */
async function driverFor(url: string): Promise<Constructor<IDatabaseDriver>> {
  return isPostgresUrl(url)
    ? (await import('@mikro-orm/postgresql')).PostgreSqlDriver
    : (await import('@mikro-orm/better-sqlite')).BetterSqliteDriver;
}

export function ormOptions(
  url: string,
  options: DatabaseOptions,
  driver: Constructor<IDatabaseDriver>,
): Options {
  const postgres = isPostgresUrl(url);
  return {
    driver,
    ...(postgres ? { clientUrl: url } : { dbName: url }),
    entities: options.entities,
    extensions: [Migrator],
    migrations: {
      migrationsList: MIGRATIONS,
      transactional: true,
      allOrNothing: true,
      snapshot: false,
      tableName: MIGRATIONS_TABLE,
      silent: true,
    },
    discovery: { warnWhenNoEntities: false },
    // One connection in memory: no other can commit between a transaction's read and its write.
    subscribers: postgres || url === ':memory:' ? [] : [new WriteLockFirst()],
    forceUtcTimezone: true,
    allowGlobalContext: false,
    ensureDatabase: false,
    // Entities must never silently persist when a request ends without flushing.
    persistOnCreate: false,
    // Plain text: the ORM's few lines go to log collectors, and the query log to tests that match it.
    colors: false,
    debug: options.onQuery ? ['query'] : false,
    logger: options.onQuery ? (message: string) => options.onQuery?.(message) : undefined,
    // knex waits 60 s for a free connection by default: with the pool exhausted, a request should
    // rather be told 503 within seconds than hang past any client's timeout.
    pool: postgres
      ? {
          min: 0,
          max: options.poolMax ?? DEFAULT_POOL_MAX,
          acquireTimeoutMillis: options.poolAcquireTimeoutMs ?? 5_000,
        }
      : undefined,
  } as Options;
}

/** The size (bytes) SQLite truncates a write-ahead log file to when the log starts over. */
export const SQLITE_LOG_SIZE_LIMIT = 64 * 1024 * 1024;

export async function openDatabase(url: string, options: DatabaseOptions): Promise<Database> {
  const postgres = isPostgresUrl(url);
  if (!postgres && url !== ':memory:') mkdirSync(dirname(url), { recursive: true });
  const orm = await MikroORM.init(ormOptions(url, options, await driverFor(url)));
  if (!postgres) {
    const conn = orm.em.getConnection();
    // WAL lets the CLI write while the server reads; busy_timeout waits instead of failing.
    await conn.execute('pragma journal_mode = WAL');
    await conn.execute(`pragma busy_timeout = ${SQLITE_BUSY_TIMEOUT_MS}`);
    await conn.execute('pragma foreign_keys = ON');
    await conn.execute(`pragma synchronous = ${options.sqliteSynchronous === 'full' ? 'FULL' : 'NORMAL'}`);
    // A log that grew past this (a long reader held checkpoints back) is cut back when it starts over.
    await conn.execute(`pragma journal_size_limit = ${SQLITE_LOG_SIZE_LIMIT}`);
    // Statement journals and sorts in memory, not spilled to a file in /var/tmp (README.md).
    await conn.execute('pragma temp_store = MEMORY');
  }
  return {
    orm,
    dialect: postgres ? 'postgresql' : 'sqlite',
    em: () => orm.em.fork() as EntityManager,
    root: orm.em as EntityManager,
    async migrate() {
      // MikroORM's migrator would quietly create a missing PostgreSQL database: a typo in
      // DATABASE_URL must be an error, not a fresh empty database.
      if (postgres) await assertPostgresDatabase(orm, url);
      const applied = await orm.getMigrator().up();
      return applied.map((m) => m.name);
    },
    async pendingMigrations() {
      if (postgres) await assertPostgresDatabase(orm, url);
      return (await orm.getMigrator().getPendingMigrations()).map((m) => m.name);
    },
    async ping() {
      try {
        await orm.em.getConnection().execute('select 1');
        return true;
      } catch {
        return false;
      }
    },
    close: () => orm.close(true),
  };
}

async function assertPostgresDatabase(orm: MikroORM, url: string): Promise<void> {
  try {
    await orm.em.getConnection().execute('select 1');
  } catch (e) {
    const code = (e as { code?: string }).code;
    const { hostname, port, pathname } = new URL(url);
    const where = `${hostname}:${port || 5432}`;
    if (code === '3D000') {
      const name = decodeURIComponent(pathname.slice(1));
      throw new Error(
        `DATABASE_URL names PostgreSQL database '${name}' on ${where}, which does not exist; create it first (createdb ${name})`,
      );
    }
    if (code === 'ECONNREFUSED' || code === 'ENOTFOUND' || code === 'ETIMEDOUT') {
      throw new Error(
        `Cannot reach PostgreSQL at ${where} (${code}); check DATABASE_URL and that the server runs`,
      );
    }
    throw e;
  }
}
