import type { EntityManager } from '@mikro-orm/knex';
import type { EntityClass, EntityData, EntityMetadata } from '@mikro-orm/core';
import { plainEntities } from './plain.js';

/*
 * The hot reads (list pages with their totalCount, the DataLoader batches behind nested fields)
 * with their SQL written once per shape and reused. Going through the ORM's query builder costs
 * more than SQLite itself for these small statements: criteria processing and knex assembling the
 * same text on every request. A shape is the entity, the filtered columns with their operators and
 * the order; its text is cached, and only the values change. Statements still run through the
 * ORM's connection, so they join the caller's transaction and appear in the query log.
 *
 * Filters are what the port-ops services build: equality on a property, or a range
 * ({ $gte, $gt, $lt, $lte }) on one. Anything else is refused here, loudly, rather than guessed.
 * Values bind as they are: knex's SQLite client turns dates into milliseconds and booleans into
 * 0/1, which is how the ORM stores them.
 */

type Direction = 'asc' | 'desc';
type Range = '$gte' | '$gt' | '$lt' | '$lte';
const RANGE_SQL: Record<Range, string> = { $gte: '>=', $gt: '>', $lt: '<', $lte: '<=' };

const texts = new Map<string, string>();

function columnOf(meta: EntityMetadata, prop: string): string {
  const column = meta.properties[prop as keyof typeof meta.properties]?.fieldNames?.[0];
  if (!column) throw new Error(`${meta.className} has no column for '${prop}'`);
  return `"${column}"`;
}

/** The `where` as (column + operator) terms with their values, and a key naming the shape. */
function termsOf(
  meta: EntityMetadata,
  where: Record<string, unknown>,
): { shape: string[]; values: unknown[] } {
  const shape: string[] = [];
  const values: unknown[] = [];
  for (const [prop, value] of Object.entries(where)) {
    if (value === undefined) continue;
    const column = columnOf(meta, prop);
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

async function run<T extends object>(
  em: EntityManager,
  entity: EntityClass<T>,
  meta: EntityMetadata,
  sql: string,
  values: unknown[],
): Promise<Array<Record<string, unknown>>> {
  const rows = await em
    .getConnection()
    .execute<Array<Record<string, unknown>>>(sql, values, 'all', em.getTransactionContext());
  return rows.map(
    (row) =>
      em.getDriver().mapResult(row as EntityData<T>, meta as EntityMetadata<T>) as Record<string, unknown>,
  );
}

/**
 * One page of `entity` in `orderBy` order, with the number of rows the filter matches, in one
 * statement (a count subquery beside the page).
 */
export async function preparedPage<T extends object>(
  em: EntityManager,
  entity: EntityClass<T>,
  where: Record<string, unknown>,
  orderBy: Record<string, Direction>,
  page: { limit: number; offset: number },
): Promise<{ items: T[]; total: number }> {
  const meta = em.getMetadata().get(entity.name);
  const { shape, values } = termsOf(meta, where);
  const key = `page|${meta.tableName}|${shape.join('&')}|${Object.entries(orderBy).join(',')}`;
  let sql = texts.get(key);
  if (!sql) {
    const table = `"${meta.tableName}"`;
    const filter = (alias: string) =>
      shape.length ? ` where ${shape.map((t) => `${alias}.${t}`).join(' and ')}` : '';
    const order = Object.entries(orderBy)
      .map(([prop, direction]) => `e.${columnOf(meta, prop)} ${direction}`)
      .join(', ');
    sql = `select e.*, (select count(*) from ${table} c${filter('c')}) as page_total from ${table} e${filter('e')} order by ${order} limit ? offset ?`;
    texts.set(key, sql);
  }
  const rows = await run(em, entity, meta, sql, [...values, ...values, page.limit, page.offset]);
  if (rows.length === 0) {
    if (page.offset === 0) return { items: [], total: 0 };
    // Past the end: the page is empty, the count still wanted.
    const counted = await run(em, entity, meta, sql, [...values, ...values, 1, 0]);
    return { items: [], total: counted.length ? Number(counted[0]!.page_total) : 0 };
  }
  const total = Number(rows[0]!.page_total);
  for (const row of rows) delete row.page_total;
  return { items: plainEntities(em, entity, rows), total };
}

/** The rows whose `prop` is one of `keys` (a DataLoader batch), optionally in `orderBy` order. */
export async function preparedIn<T extends object>(
  em: EntityManager,
  entity: EntityClass<T>,
  prop: string,
  keys: readonly unknown[],
  orderBy: Record<string, Direction> = {},
  where: Record<string, unknown> = {},
): Promise<T[]> {
  const meta = em.getMetadata().get(entity.name);
  const { shape, values } = termsOf(meta, where);
  // One text per batch size: a loader's batches come in few sizes (at most its maxBatchSize).
  const key = `in|${meta.tableName}|${prop}|${keys.length}|${shape.join('&')}|${Object.entries(orderBy).join(',')}`;
  let sql = texts.get(key);
  if (!sql) {
    const terms = [...shape, `${columnOf(meta, prop)} in (${keys.map(() => '?').join(', ')})`];
    const order = Object.entries(orderBy)
      .map(([p, direction]) => `${columnOf(meta, p)} ${direction}`)
      .join(', ');
    sql = `select * from "${meta.tableName}" where ${terms.join(' and ')}${order ? ` order by ${order}` : ''}`;
    texts.set(key, sql);
  }
  return plainEntities(em, entity, await run(em, entity, meta, sql, [...values, ...keys]));
}
