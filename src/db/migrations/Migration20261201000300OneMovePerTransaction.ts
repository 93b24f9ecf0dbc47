import { PortableMigration } from '../schema-builder.js';
import { KEPT_BUMPS, PORT_OPS_CHANGED_PER_STATEMENT } from './Migration20261201000100PortOpsChanges.js';

/**
 * PostgreSQL: the function every port-ops statement trigger calls, as this migration creates it (a
 * move per transaction, a delete of old log rows on every call); Migration20261204000100PruneChangeLog
 * replaces it and restores it on down.
 */
export const PORT_OPS_CHANGED_ONCE_PER_TRANSACTION = `create or replace function tidegate_port_ops_changed(account uuid, calls uuid[]) returns void as $$
      declare moved integer;
      begin
        insert into read_model_versions (name, version, moved_in) values ('port-ops:' || account, 1, txid_current())
          on conflict (name) do update set version = read_model_versions.version + 1, moved_in = excluded.moved_in
            where read_model_versions.moved_in is distinct from excluded.moved_in
          returning version into moved;
        if moved is null then
          select version into moved from read_model_versions where name = 'port-ops:' || account;
        end if;
        insert into port_ops_changes (account_id, version, call_id)
          select account, moved, c from (select distinct unnest(calls) c) changed;
        delete from port_ops_changes where account_id = account and version <= moved - ${KEPT_BUMPS};
      end
    $$ language plpgsql`;

/**
 * PostgreSQL: an account's port-operations version moves once per transaction, however many of its
 * statements write the account's rows: the first move stamps the version row with the transaction
 * (`moved_in`), and a later statement of the same transaction logs its calls under the version it
 * moved to. A new service order (the call's lock, the order, its history row) moved the version, and
 * sent a notice to every gateway, three times. Readers only ever see committed versions, so nothing
 * they read changes; the change log still has rows for every move (src/port-ops/changes.ts). SQLite
 * keeps a move per row: it updates the version row in place, and has no notices.
 */
export class Migration20261201000300OneMovePerTransaction extends PortableMigration {
  override async up(): Promise<void> {
    if (!this.isPostgres) return;
    this.addSql('alter table read_model_versions add column moved_in bigint');
    this.addSql(PORT_OPS_CHANGED_ONCE_PER_TRANSACTION);
  }

  override async down(): Promise<void> {
    if (!this.isPostgres) return;
    this.addSql(PORT_OPS_CHANGED_PER_STATEMENT);
    this.addSql('alter table read_model_versions drop column moved_in');
  }
}
