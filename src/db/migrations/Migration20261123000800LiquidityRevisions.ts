import { PortableMigration } from '../schema-builder.js';

/**
 * Late and corrected liquidity data: scores that a later ingestion recomputed keep their audit
 * trail (superseded audits), and protocol onboarding logs every profile change with before and
 * after.
 */
export class Migration20261123000800LiquidityRevisions extends PortableMigration {
  override async up(): Promise<void> {
    this.schema((s) =>
      s
        .createTable('liquidity_superseded_audits', (t) => {
          t.string('audit_id', 64).primary();
          t.uuid('protocol_id')
            .notNullable()
            .references('id')
            .inTable('liquidity_protocols')
            .onDelete('cascade');
          t.string('as_of', 10).notNullable();
          t.uuid('profile_id').nullable();
          t.json('inputs').notNullable();
          t.json('weights').notNullable();
          t.json('penalty_caps').notNullable();
          t.timestamp('superseded_at', { useTz: true, precision: 3 }).notNullable();
        })
        .createTable('liquidity_protocol_changes', (t) => {
          t.uuid('id').primary();
          t.uuid('protocol_id').notNullable();
          t.string('actor', 120).notNullable();
          t.string('action', 10).notNullable();
          t.json('before').nullable();
          t.json('after').nullable();
          t.timestamp('at', { useTz: true, precision: 3 }).notNullable();
          t.index(['protocol_id', 'at']);
        }),
    );
  }
}
