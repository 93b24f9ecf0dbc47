import { PortableMigration } from '../schema-builder.js';

/**
 * One version counter per in-memory read model, bumped in every transaction that changes what the
 * model publishes. Each process compares it with the version it serves (src/db/versions.ts): the
 * fallback that keeps processes in step when the event bus misses a message.
 */
export class Migration20261124000300ReadModels extends PortableMigration {
  override async up(): Promise<void> {
    this.schema((s) =>
      s.createTable('read_model_versions', (t) => {
        t.string('name', 40).primary();
        t.integer('version').notNullable();
      }),
    );
    this.addSql(`insert into read_model_versions (name, version) values ('liquidity', 1)`);
  }
}
