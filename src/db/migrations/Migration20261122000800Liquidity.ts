import { PortableMigration } from '../schema-builder.js';

/** Liquidity scoring: protocols, daily metrics and scores, watchlists and alerts, scoring profiles and their audit log. */
export class Migration20261122000800Liquidity extends PortableMigration {
  override async up(): Promise<void> {
    this.schema((s) =>
      s
        .createTable('liquidity_protocols', (t) => {
          t.uuid('id').primary();
          t.string('slug', 80).notNullable().unique();
          t.string('name', 200).notNullable();
          t.string('category', 32).notNullable();
          t.boolean('active').notNullable();
          t.string('description', 1000).notNullable();
          t.string('token_symbol', 16).notNullable();
          t.string('issuer', 200).notNullable();
          t.string('jurisdiction', 2).notNullable();
          t.string('regulatory_status', 16).notNullable();
          t.string('custodian', 200).notNullable();
          t.boolean('qualified_custodian').notNullable();
          t.string('auditor', 200).nullable();
          t.string('governance_model', 40).notNullable();
          t.string('governance_maturity', 16).notNullable();
          t.json('chains').notNullable();
          t.string('token_standard', 20).notNullable();
          t.string('redemption_frequency', 16).notNullable();
          t.integer('notice_period_days').notNullable();
          t.boolean('redemption_gates').notNullable();
          t.integer('minimum_investment').notNullable();
          t.double('yield_pct').notNullable();
          t.json('yield_attribution').notNullable();
          t.string('launch_date', 10).notNullable();
          t.boolean('kyc_required').notNullable();
          t.boolean('accredited_only').notNullable();
          t.boolean('sanctions_screening').notNullable();
          t.string('transfer_restrictions', 300).notNullable();
          t.json('regulatory_filings').notNullable();
          t.string('website', 300).nullable();
          t.double('aum').notNullable();
          t.double('liquidity_score').nullable();
          t.string('liquidity_tier', 10).nullable();
          t.string('score_as_of', 10).nullable();
          t.string('last_data_at', 10).nullable();
          t.boolean('stale_notified').notNullable();
          t.timestamp('created_at', { useTz: true, precision: 3 }).notNullable();
          t.timestamp('updated_at', { useTz: true, precision: 3 }).notNullable();
          t.index(['category', 'active']);
        })
        .createTable('liquidity_days', (t) => {
          t.increments('id').primary();
          t.uuid('protocol_id')
            .notNullable()
            .references('id')
            .inTable('liquidity_protocols')
            .onDelete('cascade');
          t.string('as_of', 10).notNullable().index();
          t.string('data_date', 10).notNullable();
          t.double('aum_usd').notNullable();
          t.double('volume_usd').nullable();
          t.integer('holders').nullable();
          t.double('top_holder_pct').nullable();
          t.double('redemption_queue_usd').nullable();
          t.double('nav_deviation_bps').nullable();
          t.string('last_attestation_date', 10).nullable();
          t.integer('redemption_frequency_days').notNullable();
          t.integer('notice_period_days').notNullable();
          t.boolean('redemption_gates').notNullable();
          t.boolean('audited').notNullable();
          t.boolean('qualified_custodian').notNullable();
          t.string('regulatory_status', 16).notNullable();
          t.double('score').notNullable();
          t.string('tier', 10).notNullable();
          t.string('audit_id', 64).notNullable().index();
          t.unique(['protocol_id', 'as_of']);
        })
        .createTable('liquidity_profile_audits', (t) => {
          t.string('audit_id', 64).primary();
          t.integer('day_id').notNullable().references('id').inTable('liquidity_days').onDelete('cascade');
          t.uuid('profile_id').notNullable();
          t.json('weights').notNullable();
          t.json('penalty_caps').notNullable();
          t.timestamp('created_at', { useTz: true, precision: 3 }).notNullable();
        })
        .createTable('liquidity_watchlists', (t) => {
          t.uuid('id').primary();
          t.uuid('account_id')
            .notNullable()
            .unique()
            .references('id')
            .inTable('accounts')
            .onDelete('cascade');
          t.double('score_change_threshold').nullable();
          t.boolean('tier_shift').notNullable();
          t.double('aum_change_pct').nullable();
          t.boolean('compliance_events').notNullable();
          t.timestamp('created_at', { useTz: true, precision: 3 }).notNullable();
          t.timestamp('updated_at', { useTz: true, precision: 3 }).notNullable();
        })
        .createTable('liquidity_watchlist_items', (t) => {
          t.uuid('id').primary();
          t.uuid('watchlist_id')
            .notNullable()
            .references('id')
            .inTable('liquidity_watchlists')
            .onDelete('cascade')
            .index();
          t.uuid('protocol_id')
            .notNullable()
            .references('id')
            .inTable('liquidity_protocols')
            .onDelete('cascade')
            .index();
          t.timestamp('added_at', { useTz: true, precision: 3 }).notNullable();
          t.unique(['watchlist_id', 'protocol_id']);
        })
        .createTable('liquidity_watchlist_alerts', (t) => {
          t.uuid('id').primary();
          t.uuid('watchlist_id')
            .notNullable()
            .references('id')
            .inTable('liquidity_watchlists')
            .onDelete('cascade');
          t.uuid('account_id').notNullable();
          t.uuid('protocol_id').notNullable();
          t.string('slug', 80).notNullable();
          t.string('kind', 16).notNullable();
          t.string('message', 500).notNullable();
          t.string('as_of', 10).notNullable();
          t.timestamp('created_at', { useTz: true, precision: 3 }).notNullable();
          t.index(['account_id', 'created_at']);
        })
        .createTable('liquidity_scoring_profiles', (t) => {
          t.uuid('id').primary();
          t.uuid('account_id').notNullable().references('id').inTable('accounts').onDelete('cascade');
          t.string('name', 100).notNullable();
          t.json('weights').notNullable();
          t.json('penalty_caps').notNullable();
          t.timestamp('created_at', { useTz: true, precision: 3 }).notNullable();
          t.timestamp('updated_at', { useTz: true, precision: 3 }).notNullable();
          t.unique(['account_id', 'name']);
        })
        .createTable('liquidity_scoring_profile_changes', (t) => {
          t.uuid('id').primary();
          t.uuid('profile_id').notNullable();
          t.uuid('account_id').notNullable();
          t.string('actor', 120).notNullable();
          t.string('action', 10).notNullable();
          t.json('before').nullable();
          t.json('after').nullable();
          t.timestamp('at', { useTz: true, precision: 3 }).notNullable();
          t.index(['profile_id', 'at']);
        }),
    );
  }
}
