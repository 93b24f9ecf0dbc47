import { PortableMigration } from '../schema-builder.js';

/**
 * PostgreSQL: every bump of a version row (the port-operations triggers', the liquidity writers')
 * also notifies `tidegate_versions` with `<version> <name>`, delivered to every listening gateway
 * when the writing transaction commits (src/db/versions.ts keeps the versions in memory from
 * them). One trigger on the versions table covers every writer of it. SQLite has no notices: each
 * process reads its versions from the shared file.
 */
export class Migration20261128000800VersionNotices extends PortableMigration {
  override async up(): Promise<void> {
    if (!this.isPostgres) return;
    this.addSql(`create or replace function tidegate_version_notice() returns trigger as $$
      begin
        perform pg_notify('tidegate_versions', new.version || ' ' || new.name);
        return null;
      end
    $$ language plpgsql`);
    this.addSql(
      'create trigger read_model_versions_notice after insert or update on read_model_versions for each row execute function tidegate_version_notice()',
    );
  }

  override async down(): Promise<void> {
    if (!this.isPostgres) return;
    this.addSql('drop trigger if exists read_model_versions_notice on read_model_versions');
    this.addSql('drop function if exists tidegate_version_notice()');
  }
}
