import type { EntityManager } from '@mikro-orm/knex';
import { type EntityName, type FilterQuery, type QueryOrderMap } from '@mikro-orm/core';
import { isUuid } from '../accounts/service.js';
import type { EventPublisher } from '../gateway/context.js';
import type { Page } from '../gateway/connection.js';
import type { Clock } from '../kernel/clock.js';
import { notFound } from '../kernel/errors.js';
import { isAdmin, type Principal } from '../kernel/principal.js';

/** What a port-ops service needs from the outside world: the unit of work, time, and the live bus. */
export interface Deps {
  em: EntityManager;
  clock: Clock;
  events: EventPublisher;
}

/** How a change is attributed in status history and events. */
export function actorOf(principal: Principal): string {
  if (principal.userId) return `user:${principal.userId}`;
  if (principal.credential.kind === 'oauth_token' && principal.clientId)
    return `client:${principal.clientId}`;
  return `${principal.credential.kind}:${principal.credential.id}`;
}

/** The tenancy filter: an account sees its own rows; `admin` sees every account's. */
export function tenant(principal: Principal): { accountId?: string } {
  return isAdmin(principal) ? {} : { accountId: principal.accountId };
}

/**
 * Loads one tenant-owned row or throws 404. Another account's id is indistinguishable from an
 * unknown one, so ids leak nothing across tenants.
 */
export async function findOwned<T extends object>(
  em: EntityManager,
  entity: EntityName<T>,
  label: string,
  principal: Principal,
  id: string,
): Promise<T> {
  if (!isUuid(id)) throw notFound(label, id);
  const row = await em.findOne(entity, { id, ...tenant(principal) } as FilterQuery<T>);
  if (!row) throw notFound(label, id);
  return row;
}

/** For `thing(id)` queries, where an unknown (or foreign) id is null rather than an error. */
export async function findOwnedOrNull<T extends object>(
  em: EntityManager,
  entity: EntityName<T>,
  principal: Principal,
  id: string,
): Promise<T | null> {
  if (!isUuid(id)) return null;
  return em.findOne(entity, { id, ...tenant(principal) } as FilterQuery<T>);
}

/**
 * One page and the total in ONE statement: the count is an uncorrelated scalar subquery, which
 * the database evaluates once (a `count(*) over ()` window would materialise and sort every
 * matching row first — ten times slower on the demo data). A page past the end needs no count.
 */
export async function findPage<T extends object>(
  em: EntityManager,
  entity: EntityName<T>,
  where: FilterQuery<T>,
  orderBy: QueryOrderMap<T>,
  page: Page,
): Promise<{ items: T[]; total: number }> {
  const total = em
    .createQueryBuilder(entity, 'c')
    .count()
    .where({ ...where })
    .as('page_total');
  const rows = (await em
    .createQueryBuilder(entity, 'e')
    .select(['e.*', total])
    .where({ ...where })
    .orderBy(orderBy)
    .limit(page.limit)
    .offset(page.offset)
    .execute('all', false)) as Array<Record<string, unknown>>;
  if (rows.length === 0) return { items: [], total: page.offset === 0 ? 0 : await em.count(entity, where) };
  const count = Number(rows[0]!.page_total);
  const items = rows.map((row) => {
    delete row.page_total;
    return em.map(entity, row as never);
  });
  return { items, total: count };
}
