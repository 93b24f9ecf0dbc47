import { PortableMigration } from '../schema-builder.js';

/**
 * An index behind every port-ops list filter and order (test/port-ops/query-plan.e2e.test.ts
 * reads the plans): port calls by vessel, and without the tenant column for operators who see
 * every account; service orders in their list order (created_at) under each filter, and per call
 * for the dashboard's batched loader, which reads them oldest first.
 */
export class Migration20261124000400PortOpsListIndexes extends PortableMigration {
  override async up(): Promise<void> {
    this.schema((s) =>
      s
        .alterTable('port_calls', (t) => {
          t.index(['account_id', 'vessel_id', 'eta']);
          t.index(['eta']);
          t.index(['status', 'eta']);
          t.index(['port_id', 'eta']);
          t.index(['vessel_id', 'eta']);
        })
        .alterTable('service_orders', (t) => {
          t.dropIndex(['port_call_id']);
          t.index(['port_call_id', 'created_at']);
          t.index(['account_id', 'created_at']);
          t.index(['account_id', 'status', 'created_at']);
          t.index(['account_id', 'service_type', 'created_at']);
          t.dropIndex(['vendor_id']);
          t.index(['vendor_id', 'created_at']);
        }),
    );
  }
}
