import { PortableMigration } from '../schema-builder.js';

/**
 * SQLite: every move of a version row also stamps it with the next number of one sequence over the
 * whole table (`seq`, set by a trigger on `read_model_versions` itself), so a process reads only the
 * rows that moved since the last stamp it saw, from the stamp's index: an empty range when none did
 * (src/db/versions.ts). Whoever moves a version moves the
 * sequence: the port-operations triggers, the liquidity writers, the CLI, raw SQL, another process.
 * PostgreSQL needs none of it: its versions reach every process by notice.
 */
export class Migration20261201000200VersionSequence extends PortableMigration {
  override async up(): Promise<void> {
    if (this.isPostgres) return;
    this.addSql('alter table read_model_versions add column seq integer not null default 0');
    this.addSql('create index read_model_versions_seq on read_model_versions (seq)');
    const stamp = `update read_model_versions set seq = (select max(seq) from read_model_versions) + 1 where name = new.name;`;
    this.addSql(
      `create trigger read_model_versions_seq_insert after insert on read_model_versions for each row begin ${stamp} end`,
    );
    // Only a move of the version: the trigger's own update of `seq` does not fire it again.
    this.addSql(
      `create trigger read_model_versions_seq_update after update of version on read_model_versions for each row begin ${stamp} end`,
    );
  }

  override async down(): Promise<void> {
    if (this.isPostgres) return;
    this.addSql('drop trigger if exists read_model_versions_seq_update');
    this.addSql('drop trigger if exists read_model_versions_seq_insert');
    this.addSql('drop index if exists read_model_versions_seq');
    this.addSql('alter table read_model_versions drop column seq');
  }
}
