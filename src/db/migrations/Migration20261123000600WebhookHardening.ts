import { PortableMigration } from '../schema-builder.js';

/**
 * Webhook hardening: a relay mark on events staged by processes without a live bus (the CLI),
 * the previous signing secret of a rotation with its overlap deadline, a per-delivery attempt
 * budget that survives redelivery, the log of every attempt, and an index for the retention purge.
 * The secret column keeps its length: a sealed `whsec_` secret is 117 characters.
 */
export class Migration20261123000600WebhookHardening extends PortableMigration {
  override async up(): Promise<void> {
    this.schema((s) =>
      s
        .alterTable('events', (t) => {
          t.boolean('relay').notNullable().defaultTo(false);
        })
        .alterTable('webhook_endpoints', (t) => {
          t.string('previous_secret', 255).nullable();
          t.timestamp('previous_secret_expires_at', { useTz: true, precision: 3 }).nullable();
        })
        .alterTable('webhook_deliveries', (t) => {
          t.integer('attempts_at_redelivery').notNullable().defaultTo(0);
          t.index(['status', 'last_attempt_at']);
          // The outbox counts live leases per endpoint on every claim (the per-endpoint in-flight
          // cap): without this index that scans every pending delivery of a dead receiver's backlog.
          t.index(['lease_until']);
        })
        .createTable('webhook_delivery_attempts', (t) => {
          t.uuid('id').primary();
          t.uuid('delivery_id')
            .notNullable()
            .references('id')
            .inTable('webhook_deliveries')
            .onDelete('cascade');
          t.integer('attempt').notNullable();
          t.timestamp('attempted_at', { useTz: true, precision: 3 }).notNullable();
          t.integer('status_code').nullable();
          t.string('error', 500).nullable();
          t.integer('duration_ms').notNullable();
          t.text('response_snippet').nullable();
          t.unique(['delivery_id', 'attempt']);
        }),
    );
  }
}
