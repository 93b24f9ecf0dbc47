import { PortableMigration } from '../schema-builder.js';

/**
 * Sandbox accounts (the playground's demo tenants): each points at the real account it belongs
 * to, at most one per real account, so two concurrent first clicks cannot create two.
 */
export class Migration20261124000100SandboxAccounts extends PortableMigration {
  override async up(): Promise<void> {
    this.schema((s) =>
      s.alterTable('accounts', (t) => {
        t.uuid('sandbox_of').nullable();
        t.unique(['sandbox_of']);
      }),
    );
  }
}
