import { PortableMigration } from '../schema-builder.js';

/**
 * Drops the two indexes whose columns begin another index of the same table, which serves every
 * lookup and order they served: `service_orders (account_id, status)` under `(account_id, status,
 * created_at, id)`, and `liquidity_watchlist_items (watchlist_id)` under the unique `(watchlist_id,
 * protocol_id)`. Each was one more B-tree that every insert and status move of its table wrote (a
 * page of the write-ahead log per new service order on SQLite) and no query needed.
 * `test/db/migrations.test.ts` fails on any index that another one begins with.
 */
export class Migration20261204000200DropPrefixIndexes extends PortableMigration {
  override async up(): Promise<void> {
    this.schema((s) =>
      s
        .alterTable('service_orders', (t) => t.dropIndex(['account_id', 'status']))
        .alterTable('liquidity_watchlist_items', (t) => t.dropIndex(['watchlist_id'])),
    );
  }

  override async down(): Promise<void> {
    this.schema((s) =>
      s
        .alterTable('service_orders', (t) => t.index(['account_id', 'status']))
        .alterTable('liquidity_watchlist_items', (t) => t.index(['watchlist_id'])),
    );
  }
}
