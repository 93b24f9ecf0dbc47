import { PortableMigration } from '../schema-builder.js';

/**
 * A key can be rotated once: at most one successor per key, enforced by the database so two
 * concurrent rotations cannot both succeed.
 */
export class Migration20261123000100KeyRotation extends PortableMigration {
  override async up(): Promise<void> {
    this.schema((s) =>
      s.alterTable('api_keys', (t) => {
        t.unique(['rotated_from_id']);
      }),
    );
  }
}
