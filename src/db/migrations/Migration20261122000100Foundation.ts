import { PortableMigration } from '../schema-builder.js';

/** Accounts, users, API keys, the audit log, the domain-event log and vessels (the foundation's proof route). */
export class Migration20261122000100Foundation extends PortableMigration {
  override async up(): Promise<void> {
    this.schema((s) =>
      s
        .createTable('accounts', (t) => {
          t.uuid('id').primary();
          t.string('name', 200).notNullable();
          t.string('plan', 32).notNullable();
          t.timestamp('created_at', { useTz: true, precision: 3 }).notNullable();
        })
        .createTable('users', (t) => {
          t.uuid('id').primary();
          t.uuid('account_id').notNullable().references('id').inTable('accounts').onDelete('cascade');
          t.string('email', 320).notNullable().unique();
          t.string('name', 200).notNullable();
          t.string('password_hash', 200).notNullable();
          t.json('roles').notNullable();
          t.timestamp('created_at', { useTz: true, precision: 3 }).notNullable();
          t.index(['account_id']);
        })
        .createTable('api_keys', (t) => {
          t.uuid('id').primary();
          t.uuid('account_id').notNullable().references('id').inTable('accounts').onDelete('cascade');
          t.string('name', 200).notNullable();
          t.string('prefix', 16).notNullable();
          t.string('secret_hash', 64).notNullable().unique();
          t.json('scopes').notNullable();
          t.timestamp('created_at', { useTz: true, precision: 3 }).notNullable();
          t.timestamp('last_used_at', { useTz: true, precision: 3 }).nullable();
          t.timestamp('revoked_at', { useTz: true, precision: 3 }).nullable();
          t.timestamp('expires_at', { useTz: true, precision: 3 }).nullable();
          t.uuid('rotated_from_id').nullable();
          t.index(['account_id', 'revoked_at']);
        })
        .createTable('audit_records', (t) => {
          t.bigIncrements('id').primary();
          t.timestamp('at', { useTz: true, precision: 3 }).notNullable().index();
          t.string('request_id', 64).notNullable();
          t.uuid('account_id').nullable();
          t.string('credential_kind', 16).nullable();
          t.string('credential_id', 64).nullable();
          t.string('ip', 64).nullable();
          t.string('user_agent', 512).nullable();
          t.string('fingerprint', 32).nullable();
          t.string('operation', 200).notNullable();
          t.integer('status').notNullable();
          t.integer('duration_ms').notNullable();
          t.index(['account_id', 'at']);
        })
        .createTable('vessels', (t) => {
          t.uuid('id').primary();
          t.string('imo', 7).notNullable().unique();
          t.string('name', 200).notNullable();
          t.string('flag', 2).notNullable();
          t.string('type', 32).notNullable();
          t.integer('gross_tonnage').notNullable();
          t.integer('deadweight').notNullable();
          t.integer('year_built').notNullable();
          t.timestamp('created_at', { useTz: true, precision: 3 }).notNullable();
        })
        .createTable('events', (t) => {
          t.uuid('id').primary();
          t.string('type', 64).notNullable();
          t.timestamp('occurred_at', { useTz: true, precision: 3 }).notNullable().index();
          t.uuid('account_id').nullable();
          t.json('payload').notNullable();
          t.index(['account_id', 'occurred_at']);
        }),
    );
  }
}
