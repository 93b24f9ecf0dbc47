import { PortableMigration } from '../schema-builder.js';

/**
 * The port-ops list indexes end with `id`, the tiebreak of every list order, so a page comes off
 * the index in its full order (`eta, id`; `created_at, id`; `name, id`) instead of being sorted
 * in a temporary B-tree after the index scan. The lists order `id` in the direction of the main
 * column, so one index serves both directions (read backwards for the newest-first lists).
 */
const PORT_CALLS = [
  ['account_id', 'eta'],
  ['account_id', 'status', 'eta'],
  ['account_id', 'port_id', 'eta'],
  ['account_id', 'vessel_id', 'eta'],
  ['eta'],
  ['status', 'eta'],
  ['port_id', 'eta'],
  ['vessel_id', 'eta'],
];
const SERVICE_ORDERS = [
  ['port_call_id', 'created_at'],
  ['account_id', 'created_at'],
  ['account_id', 'status', 'created_at'],
  ['account_id', 'service_type', 'created_at'],
  ['vendor_id', 'created_at'],
];
const VENDORS = [['account_id', 'name']];

export class Migration20261125000200PortOpsOrderIndexes extends PortableMigration {
  override async up(): Promise<void> {
    this.schema((s) =>
      s
        .alterTable('port_calls', (t) => {
          for (const columns of PORT_CALLS) {
            t.dropIndex(columns);
            t.index([...columns, 'id']);
          }
        })
        .alterTable('service_orders', (t) => {
          for (const columns of SERVICE_ORDERS) {
            t.dropIndex(columns);
            t.index([...columns, 'id']);
          }
        })
        .alterTable('vendors', (t) => {
          for (const columns of VENDORS) {
            t.dropIndex(columns);
            t.index([...columns, 'id']);
          }
        }),
    );
  }
}
