import { PortableMigration } from '../schema-builder.js';

/**
 * PostgreSQL: the port-operations version triggers fire once per statement instead of once per
 * row, bumping each account a statement touched once, read from the statement's transition tables.
 * A row trigger bumped the one version row of an account for every row written: a transaction that
 * inserts thousands of rows (the demo seed, an import) updated the same row thousands of times, each
 * update leaving a row version the rest of the transaction had to step over (the demo seed spent
 * most of its ten seconds there). Writes of one row bump as before; the versions only need to move.
 * SQLite keeps its row triggers: it updates the row in place.
 */
const ACCOUNT_TABLES = ['port_calls', 'service_orders', 'vendors'];
const SUBJECT_ACCOUNT = (subject: string) =>
  `(select account_id from port_calls where id = ${subject}
    union all select account_id from service_orders where id = ${subject}
    union all select account_id from invoices where id = ${subject} limit 1)`;
const EVENTS = [
  { event: 'insert', referencing: 'new table as new_rows' },
  { event: 'update', referencing: 'old table as old_rows new table as new_rows' },
  { event: 'delete', referencing: 'old table as old_rows' },
];

export class Migration20261128000900StatementVersionTriggers extends PortableMigration {
  override async up(): Promise<void> {
    if (!this.isPostgres) return;
    /*
     * Each branch reads only the transition tables its event has: PL/pgSQL plans a statement when
     * it first runs, so a branch naming old_rows never runs (nor is planned) for an insert.
     */
    const fn = (name: string, version: string) =>
      this.addSql(`create or replace function tidegate_port_ops_${name}_rows_changed() returns trigger as $$
        begin
          if tg_op = 'INSERT' then
            perform tidegate_bump_version(v) from (select distinct ${version} as v from new_rows r) changed;
          elsif tg_op = 'DELETE' then
            perform tidegate_bump_version(v) from (select distinct ${version} as v from old_rows r) changed;
          else
            perform tidegate_bump_version(v) from (select ${version} as v from new_rows r
              union select ${version} from old_rows r) changed;
          end if;
          return null;
        end
      $$ language plpgsql`);
    fn('account', `'port-ops:' || r.account_id`);
    fn('subject', `coalesce('port-ops:' || ${SUBJECT_ACCOUNT('r.subject_id')}, 'port-ops')`);
    const replace = (table: string, fnName: string) => {
      this.addSql(`drop trigger if exists ${table}_version on ${table}`);
      // A trigger with transition tables names one event.
      for (const { event, referencing } of EVENTS)
        this.addSql(
          `create trigger ${table}_version_${event} after ${event} on ${table} referencing ${referencing} for each statement execute function tidegate_port_ops_${fnName}_rows_changed()`,
        );
    };
    for (const table of ACCOUNT_TABLES) replace(table, 'account');
    replace('status_changes', 'subject');
  }

  override async down(): Promise<void> {
    if (!this.isPostgres) return;
    const restore = (table: string, fnName: string) => {
      for (const { event } of EVENTS)
        this.addSql(`drop trigger if exists ${table}_version_${event} on ${table}`);
      this.addSql(
        `create trigger ${table}_version after insert or update or delete on ${table} for each row execute function tidegate_port_ops_${fnName}_changed()`,
      );
    };
    for (const table of ACCOUNT_TABLES) restore(table, 'account');
    restore('status_changes', 'subject');
    for (const fn of ['account', 'subject'])
      this.addSql(`drop function if exists tidegate_port_ops_${fn}_rows_changed()`);
  }
}
