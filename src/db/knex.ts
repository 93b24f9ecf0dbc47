import type { EntityManager, Knex } from '@mikro-orm/knex';

/**
 * Knex for the raw queries the ORM is too slow or too strict for (bulk inserts, `ON CONFLICT`,
 * set-wise deletes), bound to the entity manager's transaction when it has one so they commit or
 * roll back with the ORM's writes: the transaction itself, or else the plain connection.
 */
export function knexIn(em: EntityManager): Knex {
  return em.getTransactionContext<Knex.Transaction>() ?? em.getKnex();
}
