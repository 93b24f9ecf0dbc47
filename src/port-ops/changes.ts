import type { EntityManager } from '@mikro-orm/knex';
import { preparedRows } from '../db/prepared.js';
import { KEPT_BUMPS } from '../db/migrations/Migration20261201000100PortOpsChanges.js';
import { Lru } from '../kernel/lru.js';
import { andThen, type MaybePromise } from '../kernel/maybe-async.js';

/*
 * What the moves of an account's port-operations version changed, from the log the version
 * triggers write beside each move (`port_ops_changes`, Migration20261201000100PortOpsChanges): per
 * move, the port calls whose own data changed (the call's row, its service orders, their status
 * history), or none named (NULL) when the move may have changed any list of the account (a call
 * added or removed, a call's status, ETA, port or vessel, a vendor, an invoice's history).
 *
 * A move's rows commit with the move, and an account's moves commit in order (each holds the
 * account's version row until it commits), so once a version is seen every move up to it is in the
 * log or never will be: a move read without a row (a version moved by hand, or one older than the
 * log keeps) is unknown for good. So the moves read are kept in memory per account (`ChangeLog`):
 * the kept answers and the port-call read model of one tenant ask about the same few moves, and
 * only the first asks the database.
 */

declare module '../gateway/schema/context.js' {
  interface AppServices {
    /** What moves of the port-operations versions changed (one per app). */
    portOpsChanges: ChangeLog;
  }
}

const CHANGES =
  'select version, call_id from port_ops_changes where account_id = ? and version > ? and version <= ?';

/**
 * Accounts whose moves are kept in memory, the least recently asked dropped first, and moves kept per
 * account, the oldest dropped first: a kept answer or model is rarely more than a few moves behind,
 * and one further behind reads its moves again (one statement). At most about 130,000 moves in all.
 */
const MAX_ACCOUNTS = 2_000;
const MOVES_PER_ACCOUNT = 64;

/** A move: the calls it changed, or null when it may have changed any list (or is unknown). */
type Move = ReadonlySet<string> | null;

/** The shared and the account's version in a joined version string (`3.17`, src/db/versions.ts). */
export function versionParts(version: string): { shared: number; account: number } {
  const dot = version.indexOf('.');
  return { shared: Number(version.slice(0, dot)), account: Number(version.slice(dot + 1)) };
}

export class ChangeLog {
  /** Per account, the moves read so far by the version they moved to (at most MOVES_PER_ACCOUNT). */
  private readonly accounts = new Lru<string, Map<number, Move>>({ maxEntries: MAX_ACCOUNTS });

  /**
   * The calls that the moves of `accountId`'s version after `from` up to `to` changed, or undefined
   * when one of them may have changed any list or is unknown, or when `to` is not later than `from`.
   * Moves not read before are read from the database, the whole range in one statement.
   */
  callsChanged(
    em: EntityManager,
    accountId: string,
    from: number,
    to: number,
  ): MaybePromise<ReadonlySet<string> | undefined> {
    if (!(to > from) || to - from > KEPT_BUMPS) return undefined;
    const known = this.accounts.get(accountId);
    if (known) {
      const calls = changedBetween(known, from, to);
      if (calls !== 'unread') return calls;
    }
    return andThen(preparedRows(em, CHANGES, [accountId, from, to]), (rows) => {
      const read = new Map<number, Set<string> | null>();
      for (const row of rows) {
        const version = Number(row.version);
        const calls = read.get(version);
        if (calls === null) continue; // this move may have changed any list
        if (row.call_id === null) read.set(version, null);
        else if (calls) calls.add(row.call_id as string);
        else read.set(version, new Set([row.call_id as string]));
      }
      const moves = this.accounts.peek(accountId) ?? new Map<number, Move>();
      // A move without a row is unknown, and stays so: its rows would have committed with it.
      for (let v = from + 1; v <= to; v++) moves.set(v, read.get(v) ?? null);
      const calls = changedBetween(moves, from, to);
      // Ranges may be read out of order: the oldest by version, sorted only when some must go.
      if (moves.size > MOVES_PER_ACCOUNT)
        for (const oldest of [...moves.keys()].sort((a, b) => a - b)) {
          if (moves.size <= MOVES_PER_ACCOUNT) break;
          moves.delete(oldest);
        }
      this.accounts.set(accountId, moves);
      return calls === 'unread' ? undefined : calls;
    });
  }
}

/**
 * The calls the moves after `from` up to `to` changed, from the moves known; undefined when one of
 * them may have changed any list, 'unread' when one of them has not been read.
 */
function changedBetween(
  moves: ReadonlyMap<number, Move>,
  from: number,
  to: number,
): ReadonlySet<string> | undefined | 'unread' {
  const calls = new Set<string>();
  for (let v = from + 1; v <= to; v++) {
    const move = moves.get(v);
    if (move === undefined) return 'unread';
    if (move === null) return undefined;
    for (const call of move) calls.add(call);
  }
  return calls;
}
