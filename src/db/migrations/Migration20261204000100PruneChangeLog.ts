import { PortableMigration } from '../schema-builder.js';
import { KEPT_BUMPS } from './Migration20261201000100PortOpsChanges.js';
import { PORT_OPS_CHANGED_ONCE_PER_TRANSACTION } from './Migration20261201000300OneMovePerTransaction.js';

/** PostgreSQL: an account's change log drops its old rows on every this-many moves of its version. */
export const PRUNE_EVERY = 64;

/**
 * PostgreSQL: the port-ops change log drops an account's rows more than KEPT_BUMPS moves old once
 * every PRUNE_EVERY moves, in the statement that made the move, instead of in every statement that
 * logs a change. The delete ran three times per new service order (the call's lock, the order, its
 * history row) and cost about 56 µs each: every earlier delete left its row's index entry dead until
 * vacuum, and each scan stepped over them. The log now holds between KEPT_BUMPS and KEPT_BUMPS +
 * PRUNE_EVERY moves per account; a range is still told only when it has a row for every move, so
 * the longer tail is read as what it is, committed history (src/port-ops/changes.ts). SQLite's triggers
 * prune the same way since Migration20261206000100SqlitePruneChangeLog.
 */
export class Migration20261204000100PruneChangeLog extends PortableMigration {
  override async up(): Promise<void> {
    if (!this.isPostgres) return;
    this
      .addSql(`create or replace function tidegate_port_ops_changed(account uuid, calls uuid[]) returns void as $$
      declare moved integer;
      begin
        insert into read_model_versions (name, version, moved_in) values ('port-ops:' || account, 1, txid_current())
          on conflict (name) do update set version = read_model_versions.version + 1, moved_in = excluded.moved_in
            where read_model_versions.moved_in is distinct from excluded.moved_in
          returning version into moved;
        if moved is null then
          select version into moved from read_model_versions where name = 'port-ops:' || account;
        elsif moved % ${PRUNE_EVERY} = 0 then
          delete from port_ops_changes where account_id = account and version <= moved - ${KEPT_BUMPS};
        end if;
        insert into port_ops_changes (account_id, version, call_id)
          select account, moved, c from (select distinct unnest(calls) c) changed;
      end
    $$ language plpgsql`);
  }

  override async down(): Promise<void> {
    if (!this.isPostgres) return;
    this.addSql(PORT_OPS_CHANGED_ONCE_PER_TRANSACTION);
  }
}
