import type { EntityManager } from '@mikro-orm/knex';
import { preparedRows } from '../db/prepared.js';
import { KEPT_BUMPS } from '../db/migrations/Migration20261201000100PortOpsChanges.js';
import { andThen, type MaybePromise } from '../kernel/maybe-async.js';

/*
 * What the moves of an account's port-operations version changed, from the log the version
 * triggers write beside each move (`port_ops_changes`, Migration20261201000100PortOpsChanges): per
 * move, the port calls whose own data changed (the call's row, its service orders, their status
 * history), or none named (NULL) when the move may have changed any list of the account (a call
 * added or removed, a call's status, ETA, port or vessel, a vendor, an invoice's history).
 */

const CHANGES =
  'select version, call_id from port_ops_changes where account_id = ? and version > ? and version <= ?';

/** The calls that the moves from `from` to `to` changed; undefined when that cannot be told. */
export type Changed = ReadonlySet<string> | undefined;

/**
 * The calls changed by the moves of `accountId`'s version after `from` up to `to`, or undefined
 * when a move of them may have changed any list, when `to` is not later than `from`, or when the
 * log no longer holds every move of the range (each move logs at least one row; a trigger keeps
 * the last KEPT_BUMPS moves of an account, and a version moved by hand logs nothing).
 */
export function callsChanged(
  em: EntityManager,
  accountId: string,
  from: number,
  to: number,
): MaybePromise<Changed> {
  if (!(to > from) || to - from > KEPT_BUMPS) return undefined;
  return andThen(preparedRows(em, CHANGES, [accountId, from, to]), (rows) => {
    const calls = new Set<string>();
    const moves = new Set<number>();
    for (const row of rows) {
      if (row.call_id === null) return undefined;
      calls.add(row.call_id as string);
      moves.add(Number(row.version));
    }
    return moves.size === to - from ? calls : undefined;
  });
}

/** The shared and the account's version in a joined version string (`3.17`, src/db/versions.ts). */
export function versionParts(version: string): { shared: number; account: number } {
  const dot = version.indexOf('.');
  return { shared: Number(version.slice(0, dot)), account: Number(version.slice(dot + 1)) };
}
