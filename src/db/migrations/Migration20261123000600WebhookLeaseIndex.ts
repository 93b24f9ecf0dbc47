import { PortableMigration } from '../schema-builder.js';

/**
 * The outbox counts live leases per endpoint on every claim (the per-endpoint in-flight cap); without
 * this index that is a scan of every pending delivery, which a dead receiver's backlog makes large.
 */
export class Migration20261123000600WebhookLeaseIndex extends PortableMigration {
  override async up(): Promise<void> {
    this.schema((s) =>
      s.alterTable('webhook_deliveries', (t) => {
        t.index(['lease_until']);
      }),
    );
  }
}
