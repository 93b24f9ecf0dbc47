import { PortableMigration } from '../schema-builder.js';

/**
 * Version rows for the port-operations data, kept by the database itself: a trigger on every table
 * the cached port-operations answers read (src/gateway/pipeline/answers.ts) bumps, in the writing
 * transaction, `port-ops:<account id>` for an account's rows and `port-ops` for the shared vessel
 * and port registers. Every writer moves them (the services, the CLI, the seed, raw SQL), so a
 * cached answer checked against them on each request is never older than the committed data.
 *
 * Status changes carry no account: theirs is their subject's (a port call, service order or
 * invoice); one whose subject cannot be found bumps the shared row.
 */
const ACCOUNT_TABLES = ['port_calls', 'service_orders', 'vendors'];
const SHARED_TABLES = ['vessels', 'ports'];
const SUBJECT_ACCOUNT = (subject: string) =>
  `(select account_id from port_calls where id = ${subject}
    union all select account_id from service_orders where id = ${subject}
    union all select account_id from invoices where id = ${subject} limit 1)`;

export class Migration20261125000300PortOpsVersions extends PortableMigration {
  override async up(): Promise<void> {
    if (this.isPostgres) this.postgres();
    else this.sqlite();
  }

  override async down(): Promise<void> {
    if (this.isPostgres) {
      for (const table of [...ACCOUNT_TABLES, ...SHARED_TABLES, 'status_changes'])
        this.addSql(`drop trigger if exists ${table}_version on ${table}`);
      for (const fn of ['account', 'shared', 'subject'])
        this.addSql(`drop function if exists tidegate_port_ops_${fn}_changed()`);
      this.addSql('drop function if exists tidegate_bump_version(text)');
    } else {
      for (const table of [...ACCOUNT_TABLES, ...SHARED_TABLES, 'status_changes'])
        for (const event of ['insert', 'update', 'delete'])
          this.addSql(`drop trigger if exists ${table}_version_${event}`);
    }
    this.addSql(`delete from read_model_versions where name like 'port-ops%'`);
  }

  private sqlite(): void {
    // One trigger per table and event (SQLite has no INSERT OR UPDATE OR DELETE triggers).
    const bump = (name: string) =>
      `insert or ignore into read_model_versions (name, version) values (${name}, 0);
       update read_model_versions set version = version + 1 where name = ${name};`;
    const trigger = (table: string, event: string, name: string) =>
      this.addSql(
        `create trigger ${table}_version_${event} after ${event} on ${table} for each row begin ${bump(name)} end`,
      );
    for (const table of ACCOUNT_TABLES) {
      trigger(table, 'insert', `'port-ops:' || new.account_id`);
      trigger(table, 'update', `'port-ops:' || new.account_id`);
      trigger(table, 'delete', `'port-ops:' || old.account_id`);
    }
    for (const table of SHARED_TABLES)
      for (const event of ['insert', 'update', 'delete']) trigger(table, event, `'port-ops'`);
    const subject = (row: string) =>
      `coalesce('port-ops:' || ${SUBJECT_ACCOUNT(`${row}.subject_id`)}, 'port-ops')`;
    trigger('status_changes', 'insert', subject('new'));
    trigger('status_changes', 'update', subject('new'));
    trigger('status_changes', 'delete', subject('old'));
  }

  private postgres(): void {
    // `port-ops:` and a uuid: longer than the 40 characters the model names needed (SQLite does not check).
    this.addSql('alter table read_model_versions alter column name type varchar(80)');
    this.addSql(`create or replace function tidegate_bump_version(version_name text) returns void as $$
      insert into read_model_versions (name, version) values (version_name, 1)
      on conflict (name) do update set version = read_model_versions.version + 1
    $$ language sql`);
    const fn = (name: string, body: string) =>
      this.addSql(`create or replace function tidegate_port_ops_${name}_changed() returns trigger as $$
        begin
          ${body}
          return null;
        end
      $$ language plpgsql`);
    fn(
      'account',
      `perform tidegate_bump_version('port-ops:' || case when tg_op = 'DELETE' then old.account_id else new.account_id end);`,
    );
    fn('shared', `perform tidegate_bump_version('port-ops');`);
    fn(
      'subject',
      `perform tidegate_bump_version(coalesce('port-ops:' || ${SUBJECT_ACCOUNT(
        `case when tg_op = 'DELETE' then old.subject_id else new.subject_id end`,
      )}, 'port-ops'));`,
    );
    const trigger = (table: string, fnName: string, level: 'row' | 'statement') =>
      this.addSql(
        `create trigger ${table}_version after insert or update or delete on ${table} for each ${level} execute function tidegate_port_ops_${fnName}_changed()`,
      );
    for (const table of ACCOUNT_TABLES) trigger(table, 'account', 'row');
    // The shared registers bump one row whatever changed: once per statement is enough.
    for (const table of SHARED_TABLES) trigger(table, 'shared', 'statement');
    trigger('status_changes', 'subject', 'row');
  }
}
