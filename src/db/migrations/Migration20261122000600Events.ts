import { PortableMigration } from '../schema-builder.js';

/** Webhook endpoints, their delivery log (the per-endpoint outbox), and the dispatch mark on events. */
export class Migration20261122000600Events extends PortableMigration {
  override async up(): Promise<void> {
    this.schema((s) =>
      s
        .alterTable('events', (t) => {
          t.timestamp('dispatched_at', { useTz: true, precision: 3 }).nullable().index();
        })
        .createTable('webhook_endpoints', (t) => {
          t.uuid('id').primary();
          t.uuid('account_id').notNullable().references('id').inTable('accounts').onDelete('cascade');
          t.string('domain', 16).notNullable();
          t.string('url', 2048).notNullable();
          t.string('description', 200).nullable();
          t.json('event_types').notNullable();
          t.string('secret', 128).notNullable();
          t.string('secret_prefix', 16).notNullable();
          t.string('status', 16).notNullable();
          t.string('disabled_reason', 500).nullable();
          t.timestamp('disabled_at', { useTz: true, precision: 3 }).nullable();
          t.integer('consecutive_failures').notNullable().defaultTo(0);
          t.timestamp('created_at', { useTz: true, precision: 3 }).notNullable();
          t.index(['account_id', 'domain']);
        })
        .createTable('webhook_deliveries', (t) => {
          t.uuid('id').primary();
          t.uuid('endpoint_id')
            .notNullable()
            .references('id')
            .inTable('webhook_endpoints')
            .onDelete('cascade');
          t.uuid('event_id').notNullable().references('id').inTable('events').onDelete('cascade');
          t.string('event_type', 64).notNullable();
          t.string('status', 16).notNullable();
          t.integer('attempts').notNullable().defaultTo(0);
          t.timestamp('next_attempt_at', { useTz: true, precision: 3 }).nullable();
          t.timestamp('last_attempt_at', { useTz: true, precision: 3 }).nullable();
          t.integer('last_status_code').nullable();
          t.string('last_error', 500).nullable();
          t.timestamp('delivered_at', { useTz: true, precision: 3 }).nullable();
          t.uuid('lease_token').nullable();
          t.timestamp('lease_until', { useTz: true, precision: 3 }).nullable();
          t.timestamp('created_at', { useTz: true, precision: 3 }).notNullable();
          t.unique(['endpoint_id', 'event_id']);
          t.index(['status', 'next_attempt_at']);
          t.index(['endpoint_id', 'created_at']);
        }),
    );
  }
}
