import { PortableMigration } from '../schema-builder.js';

/** The OAuth authorization server: clients, codes, refresh tokens, issued access tokens, signing keys, sessions. */
export class Migration20261122000300Auth extends PortableMigration {
  override async up(): Promise<void> {
    const ts = { useTz: true, precision: 3 } as const;
    this.schema((s) =>
      s
        .createTable('oauth_clients', (t) => {
          t.uuid('id').primary();
          t.string('client_id', 64).notNullable().unique();
          t.uuid('account_id').notNullable().references('id').inTable('accounts').onDelete('cascade');
          t.uuid('created_by_user_id').nullable();
          t.string('name', 200).notNullable();
          t.json('redirect_uris').notNullable();
          t.json('scopes').notNullable();
          t.json('grant_types').notNullable();
          t.boolean('confidential').notNullable();
          t.string('secret_hash', 64).nullable();
          t.timestamp('created_at', ts).notNullable();
          t.index(['account_id']);
        })
        .createTable('oauth_codes', (t) => {
          t.uuid('id').primary();
          t.string('code_hash', 64).notNullable().unique();
          t.string('client_id', 64).notNullable().index();
          t.uuid('user_id').notNullable();
          t.uuid('account_id').notNullable();
          t.string('redirect_uri', 2000).notNullable();
          t.json('scopes').notNullable();
          t.string('code_challenge', 128).notNullable();
          t.timestamp('expires_at', ts).notNullable();
          t.timestamp('used_at', ts).nullable();
          t.timestamp('created_at', ts).notNullable();
        })
        .createTable('oauth_refresh_tokens', (t) => {
          t.uuid('id').primary();
          t.string('token_hash', 64).notNullable().unique();
          t.uuid('family_id').notNullable().index();
          t.string('client_id', 64).notNullable().index();
          t.uuid('user_id').notNullable();
          t.uuid('account_id').notNullable();
          t.json('scopes').notNullable();
          t.uuid('code_id').nullable().index();
          t.timestamp('expires_at', ts).notNullable();
          t.timestamp('used_at', ts).nullable();
          t.timestamp('revoked_at', ts).nullable();
          t.timestamp('created_at', ts).notNullable();
        })
        .createTable('oauth_access_tokens', (t) => {
          t.uuid('jti').primary();
          t.string('client_id', 64).notNullable().index();
          t.uuid('user_id').nullable();
          t.uuid('account_id').notNullable();
          t.uuid('family_id').nullable().index();
          t.uuid('code_id').nullable().index();
          t.timestamp('expires_at', ts).notNullable();
          t.timestamp('revoked_at', ts).nullable();
          t.timestamp('created_at', ts).notNullable();
          t.index(['revoked_at', 'expires_at']);
        })
        .createTable('oauth_signing_keys', (t) => {
          t.string('kid', 64).primary();
          t.json('private_jwk').notNullable();
          t.json('public_jwk').notNullable();
          t.timestamp('created_at', ts).notNullable();
          t.timestamp('retired_at', ts).nullable();
        })
        .createTable('auth_sessions', (t) => {
          t.uuid('id').primary();
          t.string('token_hash', 64).notNullable().unique();
          t.uuid('user_id').notNullable().references('id').inTable('users').onDelete('cascade');
          t.uuid('account_id').notNullable();
          t.string('csrf_token', 64).notNullable();
          t.timestamp('expires_at', ts).notNullable();
          t.timestamp('created_at', ts).notNullable();
        }),
    );
  }
}
