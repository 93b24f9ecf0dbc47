import type { EntityManager } from '@mikro-orm/knex';
import { andThen, type MaybePromise } from '../kernel/maybe-async.js';
import { knexIn } from './knex.js';
import { preparedRows } from './prepared.js';

/*
 * Versions of the in-memory read models. A transaction that changes what a model publishes bumps
 * the model's row (so other processes can poll for it), and once it has committed announces the
 * change to the models of this process, which then rebuild before their next read: a client reads
 * its own write on the next request. The listeners are keyed by the ORM's configuration, which all
 * entity managers of one database share, because writers (services, the CLI) only hold an entity
 * manager.
 */

export type ReadModelName = 'liquidity';

const listeners = new WeakMap<object, Set<() => void>>();

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

/** Runs `work` in a transaction that bumps `name`, and announces the change once it has committed. */
export async function changing<T>(
  em: EntityManager,
  name: ReadModelName,
  work: (tx: EntityManager) => Promise<T>,
): Promise<T> {
  const result = await em.transactional(async (tx) => {
    const out = await work(tx);
    await bumpVersion(tx, name);
    return out;
  });
  announceChange(em);
  return result;
}

/** Tells this process's read models that committed data changed. */
export function announceChange(em: EntityManager): void {
  for (const listener of listeners.get(em.config) ?? []) listener();
}

/**
 * The versions of `names` as one string (`3.17`; a name without a row reads 0), by one prepared
 * statement: what a cached answer is checked against on every request. These rows are bumped by
 * the database itself where triggers keep them (the port-operations rows), so every writer, the
 * CLI and raw SQL included, moves them in the writing transaction.
 */
export function readVersions(em: EntityManager, names: readonly [string, string]): MaybePromise<string> {
  return andThen(preparedRows(em, VERSIONS_OF_TWO, [...names], { untilChange: true }), (rows) => {
    const version = (name: string) => String(rows.find((r) => r.name === name)?.version ?? 0);
    return `${version(names[0])}.${version(names[1])}`;
  });
}

const VERSIONS_OF_TWO = 'select name, version from read_model_versions where name in (?, ?)';

/** Returns the function that removes the listener. */
export function onChange(em: EntityManager, listener: () => void): () => void {
  let set = listeners.get(em.config);
  if (!set) listeners.set(em.config, (set = new Set()));
  set.add(listener);
  return () => set.delete(listener);
}
