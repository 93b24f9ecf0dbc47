import type { EntityManager } from '@mikro-orm/knex';
import {
  JsonType,
  type EntityClass,
  type EntityMetadata,
  type FilterQuery,
  type QueryOrderMap,
} from '@mikro-orm/core';

/*
 * Read-only rows for list and loader paths. The ORM's hydration (identity map, change tracking,
 * per-instance property accessors) costs several times the query for the hundreds of rows a
 * dashboard page reads, and those rows are only ever serialized. A QueryBuilder result already
 * carries property names, dates and booleans; these helpers parse JSON columns (strings on
 * SQLite) and give each row its entity's prototype, so getters and the GraphQL types work
 * unchanged. The rows are not managed: nothing done to them is ever flushed.
 */

const jsonProps = new WeakMap<EntityMetadata, string[]>();

/** The properties of `meta` stored as JSON (text on SQLite). */
export function jsonPropsOf(meta: EntityMetadata): string[] {
  let props = jsonProps.get(meta);
  if (!props) {
    props = meta.props.filter((p) => p.customType instanceof JsonType).map((p) => p.name);
    jsonProps.set(meta, props);
  }
  return props;
}

/** Turns QueryBuilder rows (mapped to property names) into read-only entity-shaped objects. */
export function plainEntities<T extends object>(
  em: EntityManager,
  entity: EntityClass<T>,
  rows: Array<Record<string, unknown>>,
): T[] {
  const json = jsonPropsOf(em.getMetadata().get(entity.name));
  return rows.map((row) => {
    for (const name of json) {
      const value = row[name];
      if (typeof value === 'string') row[name] = JSON.parse(value);
    }
    return Object.setPrototypeOf(row, entity.prototype) as T;
  });
}

/**
 * `em.find` for rows that are only read: same filter and order syntax, no hydration. `fields`
 * (property names) narrows the columns, as `em.find`'s option does; the other properties are absent.
 */
export async function findPlain<T extends object>(
  em: EntityManager,
  entity: EntityClass<T>,
  where: FilterQuery<T>,
  options: {
    orderBy?: QueryOrderMap<T>;
    limit?: number;
    offset?: number;
    fields?: ReadonlyArray<keyof T & string>;
  } = {},
): Promise<T[]> {
  const qb = em
    .createQueryBuilder(entity)
    .select(options.fields ? [...options.fields] : '*')
    .where(where);
  if (options.orderBy) qb.orderBy(options.orderBy);
  if (options.limit !== undefined) qb.limit(options.limit);
  if (options.offset !== undefined) qb.offset(options.offset);
  return plainEntities(em, entity, (await qb.execute('all')) as Array<Record<string, unknown>>);
}
