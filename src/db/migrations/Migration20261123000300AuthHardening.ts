import { PortableMigration } from '../schema-builder.js';

/**
 * Signing keys get an activation time (a rotated-in key is published before it signs); console
 * sessions get a one-time flash for secrets shown after a redirect.
 */
export class Migration20261123000300AuthHardening extends PortableMigration {
  override async up(): Promise<void> {
    const ts = { useTz: true, precision: 3 } as const;
    this.schema((s) =>
      s
        .alterTable('oauth_signing_keys', (t) => {
          // Nullable only because SQLite cannot add a NOT NULL column without a constant default.
          t.timestamp('activates_at', ts).nullable();
        })
        .alterTable('auth_sessions', (t) => {
          t.text('flash').nullable();
        }),
    );
    // Keys created before this migration have been signing since they were created.
    this.addSql('update oauth_signing_keys set activates_at = created_at');
  }
}
