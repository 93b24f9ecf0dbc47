import type { EntityManager } from '@mikro-orm/knex';
import type { Client as PgClient } from 'pg';
import { andThen, type MaybePromise } from '../kernel/maybe-async.js';
import { knexIn } from './knex.js';
import type { Database } from './orm.js';
import { preparedRows } from './prepared.js';

/*
 * Versions of the data behind in-memory read models and kept answers, one row each in
 * `read_model_versions`. A transaction that changes what a model publishes bumps the model's row
 * (the port-operations rows are bumped by triggers, see Migration20261125000300PortOpsVersions), so
 * every process can tell that the data moved.
 *
 * One `ReadModelVersions` per process, made by the composition root (src/app.ts, the CLI) and
 * handed to whoever writes or reads versions:
 *
 * - Writers of the liquidity data change it through `changing`, which announces the change to this
 *   process's read models once it has committed: a client reads its own write on the next request.
 * - Kept answers read the versions through `read`, from memory on both dialects: no statement per
 *   request to learn that nothing changed. PostgreSQL: every bump also sends
 *   `pg_notify('tidegate_versions', '<version> <name>')` (Migration20261128000800VersionNotices),
 *   and one dedicated connection per process LISTENs. SQLite has no notices, so it polls: every move
 *   stamps its row with the next number of one sequence (`seq`,
 *   Migration20261201000200VersionSequence), and a read more than POLL_MS after the last poll reads
 *   the rows stamped since the last one it saw (only those; none when nothing moved), one indexed
 *   statement either way.
 *
 * Staleness on SQLite. A write through this process's pipeline is exact: `written` marks the
 * versions its caller reads, and their next read polls at once. Any other writer (raw SQL, the CLI,
 * another process on the file) is served within POLL_MS.
 *
 * Staleness on PostgreSQL. A write through this process's pipeline is exact: when a mutation ends,
 * `written` marks the versions its caller reads, and the next read of them goes to the database
 * (and refreshes memory). A write by anyone else (another gateway, the CLI, raw SQL) is served once
 * its notification arrives, which PostgreSQL sends at commit: a few milliseconds on one host. When
 * the listening connection is lost (a restart, `pg_terminate_backend`, a failed heartbeat), every
 * read goes to the database again until a new connection LISTENs and has re-read every version;
 * it reconnects with a backoff from 100 ms to 5 s. A connection that dies silently (no reset from
 * the network) is found by the heartbeat: a query every HEARTBEAT_MS that must answer within
 * HEARTBEAT_TIMEOUT_MS, so in that case a change may be served up to 7 s late.
 */

export type ReadModelName = 'liquidity';

/** The channel the version triggers notify on. */
export const VERSIONS_CHANNEL = 'tidegate_versions';
/** Names the listening connection in `pg_stat_activity`. */
export const LISTENER_APPLICATION_NAME = 'tidegate-versions';
const HEARTBEAT_MS = 5_000;
const HEARTBEAT_TIMEOUT_MS = 2_000;
const RECONNECT_MIN_MS = 100;
const RECONNECT_MAX_MS = 5_000;

/** Inside the writing transaction: the change and the new version commit together. */
export async function bumpVersion(em: EntityManager, name: ReadModelName): Promise<void> {
  await knexIn(em)('read_model_versions')
    .where({ name })
    .update({ version: knexIn(em).raw('version + 1') });
}

export async function readVersion(em: EntityManager, name: ReadModelName): Promise<number> {
  const row = (await knexIn(em)('read_model_versions').where({ name }).first('version')) as
    { version: number | string } | undefined;
  return Number(row?.version ?? 0);
}

const VERSIONS_OF_TWO = 'select name, version from read_model_versions where name in (?, ?)';
/** SQLite: how long a version moved by anyone but this process's pipeline may go unseen (see above). */
export const POLL_MS = 5;
const STAMPED_SINCE = 'select name, version, seq from read_model_versions where seq > ?';

/** The versions of two names as one string (`3.17`; a name without a row reads 0). */
function joined(names: readonly [string, string], versionOf: (name: string) => number): string {
  return `${versionOf(names[0])}.${versionOf(names[1])}`;
}

export interface VersionsOptions {
  /** The PostgreSQL URL the listening connection opens (the database's own). */
  url?: string;
  /** Where a lost or failing listener is reported. */
  logger?: { warn(object: object, message: string): void };
  /** Milliseconds of a monotonic clock (tests move it): when SQLite last polled. */
  now?: () => number;
}

export class ReadModelVersions {
  private readonly listeners = new Set<() => void>();
  /** PostgreSQL: every version heard of since the listening connection last (re)started. */
  private readonly heard = new Map<string, number>();
  /** Whether `heard` is complete: a connection LISTENs and has read every row after it began to. */
  private listening = false;
  /** SQLite: the highest `seq` of the rows read into `heard` (-1: none read yet). */
  private stamp = -1;
  /** SQLite: when the stamp was last read (the monotonic clock's milliseconds). */
  private polledAt = -Infinity;
  /**
   * Names a mutation of this process wrote since their last read from the database, each with the
   * count of `written` calls at its latest mark: a database read that began before that mark must
   * not clear it, one that began after it clears it whatever other names were marked meanwhile.
   */
  private readonly writtenHere = new Map<string, number>();
  /** Moves with every `written`. */
  private writes = 0;
  private client: PgClient | undefined;
  private heartbeat: NodeJS.Timeout | undefined;
  private retry: NodeJS.Timeout | undefined;
  private backoffMs = RECONNECT_MIN_MS;
  private stopped = false;
  private readonly now: () => number;

  constructor(
    private readonly db: Database,
    private readonly options: VersionsOptions = {},
  ) {
    this.now = options.now ?? (() => performance.now());
  }

  /** Whether notices keep the versions in memory (PostgreSQL, listening); SQLite polls instead. */
  get inMemory(): boolean {
    return this.listening;
  }

  /** Runs `work` in a transaction that bumps `name`, and announces the change once it has committed. */
  async changing<T>(
    em: EntityManager,
    name: ReadModelName,
    work: (tx: EntityManager) => Promise<T>,
  ): Promise<T> {
    const result = await em.transactional(async (tx) => {
      const out = await work(tx);
      await bumpVersion(tx, name);
      return out;
    });
    this.announce();
    return result;
  }

  /** Tells this process's read models that committed data changed. */
  announce(): void {
    for (const listener of this.listeners) listener();
  }

  /** Returns the function that removes the listener. */
  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * The versions of `names` as one string: what a kept answer is checked against on every
   * request. From memory while PostgreSQL listens, or on SQLite within POLL_MS of the last poll,
   * unless a name was written here since it was last read; otherwise from the database (on SQLite
   * the rows stamped since the last poll; on PostgreSQL by one prepared statement).
   */
  read(names: readonly [string, string]): MaybePromise<string> {
    const fresh = !this.writtenHere.has(names[0]) && !this.writtenHere.has(names[1]);
    const known = () => joined(names, (name) => this.heard.get(name) ?? 0);
    if (this.db.dialect === 'sqlite') {
      const at = this.now();
      return fresh && at - this.polledAt < POLL_MS ? known() : andThen(this.poll(at), known);
    }
    if (this.listening && fresh) return known();
    const writes = this.writes;
    return andThen(preparedRows(this.db.root, VERSIONS_OF_TWO, [...names]), (rows) => {
      const read = new Map(rows.map((r) => [r.name as string, Number(r.version)]));
      if (this.listening) {
        for (const name of names) {
          this.hear(name, read.get(name) ?? 0);
          this.clearMark(name, writes);
        }
      }
      return joined(names, (name) => read.get(name) ?? 0);
    });
  }

  /**
   * SQLite: reads the rows stamped since the last stamp seen into memory, in one statement (an
   * index's range past that stamp: empty when nothing moved). A poll follows every write of this
   * process's pipeline and, under writes, most timed ones find a move: a first statement asking
   * whether the stamp moved (`max(seq)`) only added a round through the driver to those. Everything
   * written here before the poll began is then in memory: its marks are cleared.
   */
  private poll(at: number): MaybePromise<void> {
    const writes = this.writes;
    return andThen(preparedRows(this.db.root, STAMPED_SINCE, [this.stamp]), (rows) => {
      for (const row of rows) {
        this.hear(row.name as string, Number(row.version));
        this.stamp = Math.max(this.stamp, Number(row.seq));
      }
      this.polledAt = Math.max(this.polledAt, at);
      for (const name of this.writtenHere.keys()) this.clearMark(name, writes);
    });
  }

  /**
   * A mutation of this process has committed changes to these names' data: their next read goes to
   * the database, so that the writer reads its write on its next request whatever the delay of the
   * notice (PostgreSQL) or of the poll (SQLite).
   */
  written(names: readonly string[]): void {
    this.writes++;
    for (const name of names) this.writtenHere.set(name, this.writes);
  }

  /** Clears `name`'s mark when a read that began once `written` had been called `writes` times covers it. */
  private clearMark(name: string, writes: number): void {
    const marked = this.writtenHere.get(name);
    if (marked !== undefined && marked <= writes) this.writtenHere.delete(name);
  }

  /** On PostgreSQL, starts listening for version notices; elsewhere nothing. Never fails: a failure retries. */
  async start(): Promise<void> {
    if (this.db.dialect !== 'postgresql' || !this.options.url) return;
    await this.connect();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.retry);
    clearInterval(this.heartbeat);
    this.listening = false;
    const client = this.client;
    this.client = undefined;
    await client?.end().catch(() => undefined);
  }

  private hear(name: string, version: number): void {
    if (version > (this.heard.get(name) ?? -1)) this.heard.set(name, version);
  }

  /** LISTEN first, then read every row: no change falls between the two. */
  private async connect(): Promise<void> {
    const { default: pg } = await import('pg');
    const client = new pg.Client({
      connectionString: this.options.url,
      application_name: LISTENER_APPLICATION_NAME,
      keepAlive: true,
      query_timeout: HEARTBEAT_TIMEOUT_MS,
    });
    this.client = client;
    client.on('notification', (notice) => {
      if (client !== this.client || notice.channel !== VERSIONS_CHANNEL || !notice.payload) return;
      const space = notice.payload.indexOf(' ');
      this.hear(notice.payload.slice(space + 1), Number(notice.payload.slice(0, space)));
    });
    client.on('error', (error) => this.lost(client, error));
    client.on('end', () => this.lost(client));
    // What the previous connection heard may have missed changes: only this one's notices count.
    this.heard.clear();
    try {
      await client.connect();
      await client.query(`LISTEN ${VERSIONS_CHANNEL}`);
      const { rows } = await client.query<{ name: string; version: string | number }>(
        'select name, version from read_model_versions',
      );
      if (client !== this.client) return;
      for (const row of rows) this.hear(row.name, Number(row.version));
      this.listening = true;
      this.backoffMs = RECONNECT_MIN_MS;
      this.heartbeat = setInterval(() => {
        client.query('select 1').catch((error: unknown) => this.lost(client, error));
      }, HEARTBEAT_MS);
      this.heartbeat.unref();
    } catch (error) {
      this.lost(client, error);
    }
  }

  /** The listening connection is gone: read from the database until a new one is ready. */
  private lost(client: PgClient, error?: unknown): void {
    if (client !== this.client) return;
    this.client = undefined;
    this.listening = false;
    clearInterval(this.heartbeat);
    client.end().catch(() => undefined);
    if (this.stopped) return;
    this.options.logger?.warn(
      { err: error },
      `version notices lost; reads check the database until the listener reconnects (in ${this.backoffMs} ms)`,
    );
    this.retry = setTimeout(() => void this.connect(), this.backoffMs);
    this.retry.unref();
    this.backoffMs = Math.min(this.backoffMs * 2, RECONNECT_MAX_MS);
  }
}
