import { PortableMigration } from '../schema-builder.js';

/**
 * What each move of an account's port-operations version changed: one row per bump of
 * `port-ops:<account>` in `port_ops_changes`, written by the same triggers in the same transaction,
 * naming the port call whose own data changed (its row, one of its service orders, their status
 * history), or no call (NULL) when the change can reach any list of the account: a call inserted
 * or deleted, a call's status, ETA, port, vessel or account changed (what lists filter and sort
 * on), a vendor, an invoice's history. A kept answer that read only some calls' data can then
 * outlive a move that changed none of them (src/port-ops/changes.ts).
 *
 * Every bump writes at least one row with the version it moved to, so a range of versions with a
 * row for each is the whole story of that range; each trigger drops its account's rows more than
 * KEPT_BUMPS versions old, so the log stays small without a job, and an older range reads as
 * incomplete (its answers execute again). The shared `port-ops` version (vessels, ports) logs
 * nothing: a move of it is never looked through.
 */
export const KEPT_BUMPS = 1000;

/**
 * PostgreSQL: the function every port-ops statement trigger calls, as this migration creates it (a
 * move per statement); Migration20261201000300OneMovePerTransaction replaces it and restores it on down.
 */
export const PORT_OPS_CHANGED_PER_STATEMENT = `create or replace function tidegate_port_ops_changed(account uuid, calls uuid[]) returns void as $$
      declare moved integer;
      begin
        insert into read_model_versions (name, version) values ('port-ops:' || account, 1)
          on conflict (name) do update set version = read_model_versions.version + 1
          returning version into moved;
        insert into port_ops_changes (account_id, version, call_id)
          select account, moved, c from (select distinct unnest(calls) c) changed;
        delete from port_ops_changes where account_id = account and version <= moved - ${KEPT_BUMPS};
      end
    $$ language plpgsql`;

/** The account's version name, for a row alias (`new`, `old`, `r`). */
const versionName = (account: string) => `'port-ops:' || ${account}`;

/** The call whose data a status-history row belongs to, or NULL (an invoice's, or a subject gone). */
const subjectCall = (row: string) =>
  `case ${row}.subject_type
     when 'PORT_CALL' then ${row}.subject_id
     when 'SERVICE_ORDER' then (select port_call_id from service_orders where id = ${row}.subject_id)
   end`;
const SUBJECT_ACCOUNT = (subject: string) =>
  `(select account_id from port_calls where id = ${subject}
    union all select account_id from service_orders where id = ${subject}
    union all select account_id from invoices where id = ${subject} limit 1)`;

/** A call row's change leaves every list's members and order as they were. */
const sameListing = (before: string, after: string) =>
  ['status', 'eta', 'port_id', 'vessel_id', 'account_id']
    .map((c) => `${after}.${c} is ${before}.${c}`)
    .join(' and ');

/** SQLite: per table and event, the account the row belongs to and the call it names (or NULL). */
const SQLITE_ROWS: Array<{ table: string; event: string; account: string; call: string }> = [
  { table: 'port_calls', event: 'insert', account: 'new.account_id', call: 'null' },
  {
    table: 'port_calls',
    event: 'update',
    account: 'new.account_id',
    call: `case when ${sameListing('old', 'new')} then new.id end`,
  },
  { table: 'port_calls', event: 'delete', account: 'old.account_id', call: 'null' },
  { table: 'service_orders', event: 'insert', account: 'new.account_id', call: 'new.port_call_id' },
  {
    table: 'service_orders',
    event: 'update',
    account: 'new.account_id',
    call: 'case when new.port_call_id is old.port_call_id and new.account_id is old.account_id then new.port_call_id end',
  },
  { table: 'service_orders', event: 'delete', account: 'old.account_id', call: 'old.port_call_id' },
  ...['insert', 'update', 'delete'].map((event) => ({
    table: 'vendors',
    event,
    account: event === 'delete' ? 'old.account_id' : 'new.account_id',
    call: 'null',
  })),
];

/** SQLite: a trigger's move of version `name` (its row made first). */
const sqliteBump = (
  name: string,
) => `insert or ignore into read_model_versions (name, version) values (${name}, 0);
       update read_model_versions set version = version + 1 where name = ${name};`;

/**
 * SQLite: a trigger's drop of `account`'s change rows more than KEPT_BUMPS moves older than version
 * `name`; with `pruneEvery` above 1 only on a move to a multiple of it (a term that names no row,
 * which SQLite tests once before it looks at any).
 */
const sqlitePrune = (account: string, name: string, pruneEvery: number) =>
  `delete from port_ops_changes where ${pruneEvery > 1 ? `(select version % ${pruneEvery} from read_model_versions where name = ${name}) = 0 and ` : ''}account_id = ${account}
             and version <= (select version - ${KEPT_BUMPS} from read_model_versions where name = ${name});`;

/**
 * SQLite: the statements (each trigger dropped, then made) of every port-ops row trigger that moves
 * an account's version and logs the change; the log drops rows on every move, or on every
 * `pruneEvery`th (Migration20261206000100SqlitePruneChangeLog).
 */
export function sqlitePortOpsTriggers(pruneEvery = 1): string[] {
  const statements: string[] = [];
  for (const { table, event, account, call } of SQLITE_ROWS) {
    const name = versionName(account);
    statements.push(
      `drop trigger if exists ${table}_version_${event}`,
      `create trigger ${table}_version_${event} after ${event} on ${table} for each row begin ${sqliteBump(name)} insert into port_ops_changes (account_id, version, call_id)
           select ${account}, version, ${call} from read_model_versions where name = ${name};
         ${sqlitePrune(account, name, pruneEvery)} end`,
    );
  }
  // A history row whose subject is gone bumps the shared version, as before, and logs nothing.
  for (const event of ['insert', 'update', 'delete']) {
    const row = event === 'delete' ? 'old' : 'new';
    const account = SUBJECT_ACCOUNT(`${row}.subject_id`);
    statements.push(
      `drop trigger if exists status_changes_version_${event}`,
      `create trigger status_changes_version_${event} after ${event} on status_changes for each row begin
           insert or ignore into read_model_versions (name, version) values (coalesce(${versionName(account)}, 'port-ops'), 0);
           update read_model_versions set version = version + 1 where name = coalesce(${versionName(account)}, 'port-ops');
           insert into port_ops_changes (account_id, version, call_id)
             select ${account}, version, ${subjectCall(row)} from read_model_versions
             where name = ${versionName(account)};
           ${sqlitePrune(account, versionName(account), pruneEvery)}
         end`,
    );
  }
  return statements;
}

export class Migration20261201000100PortOpsChanges extends PortableMigration {
  override async up(): Promise<void> {
    this.schema((s) =>
      s.createTable('port_ops_changes', (t) => {
        t.uuid('account_id').notNullable();
        t.integer('version').notNullable();
        t.uuid('call_id').nullable();
        t.index(['account_id', 'version'], 'port_ops_changes_account_version');
      }),
    );
    if (this.isPostgres) this.postgres();
    else this.sqlite();
  }

  override async down(): Promise<void> {
    if (this.isPostgres) {
      for (const [table, fn] of [
        ['port_calls', 'account'],
        ['service_orders', 'account'],
        ['vendors', 'account'],
        ['status_changes', 'subject'],
      ] as const)
        for (const event of ['insert', 'update', 'delete']) {
          this.addSql(`drop trigger if exists ${table}_version_${event} on ${table}`);
          this.addSql(
            `create trigger ${table}_version_${event} after ${event} on ${table} referencing ${referencing(event)} for each statement execute function tidegate_port_ops_${fn}_rows_changed()`,
          );
        }
      for (const table of ['port_calls', 'service_orders', 'vendors', 'status_changes'])
        this.addSql(`drop function if exists tidegate_port_ops_changes_${table}()`);
      this.addSql('drop function if exists tidegate_port_ops_changed(uuid, uuid[])');
    } else {
      for (const { table, event, account } of SQLITE_ROWS)
        this.sqliteTrigger(table, event, versionName(account));
      for (const event of ['insert', 'update', 'delete']) {
        const row = event === 'delete' ? 'old' : 'new';
        this.sqliteTrigger(
          'status_changes',
          event,
          `coalesce(${versionName(SUBJECT_ACCOUNT(`${row}.subject_id`))}, 'port-ops')`,
        );
      }
    }
    this.schema((s) => s.dropTable('port_ops_changes'));
  }

  /** One trigger as Migration20261125000300PortOpsVersions made it: a bump, no change row. */
  private sqliteTrigger(table: string, event: string, name: string) {
    this.addSql(`drop trigger if exists ${table}_version_${event}`);
    this.addSql(
      `create trigger ${table}_version_${event} after ${event} on ${table} for each row begin ${sqliteBump(name)} end`,
    );
  }

  private sqlite(): void {
    for (const sql of sqlitePortOpsTriggers()) this.addSql(sql);
  }

  private postgres(): void {
    // Bumps the account's version once and logs the calls the statement changed (NULL: any).
    this.addSql(PORT_OPS_CHANGED_PER_STATEMENT);
    /*
     * Per table, the (account, call) pairs of each event, read from the statement's transition
     * tables; each branch names only the tables its event has (PL/pgSQL plans a branch when it
     * first runs it).
     */
    const changes = (table: string, pairs: { insert: string; update: string; delete: string }) => {
      this.addSql(`create or replace function tidegate_port_ops_changes_${table}() returns trigger as $$
        begin
          if tg_op = 'INSERT' then
            perform tidegate_port_ops_changed(account, array_agg(changed_call)) from (${pairs.insert}) x(account, changed_call)
              where account is not null group by account;
          elsif tg_op = 'DELETE' then
            perform tidegate_port_ops_changed(account, array_agg(changed_call)) from (${pairs.delete}) x(account, changed_call)
              where account is not null group by account;
          else
            perform tidegate_port_ops_changed(account, array_agg(changed_call)) from (${pairs.update}) x(account, changed_call)
              where account is not null group by account;
          end if;
          return null;
        end
      $$ language plpgsql`);
      for (const event of ['insert', 'update', 'delete']) {
        this.addSql(`drop trigger if exists ${table}_version_${event} on ${table}`);
        this.addSql(
          `create trigger ${table}_version_${event} after ${event} on ${table} referencing ${referencing(event)} for each statement execute function tidegate_port_ops_changes_${table}()`,
        );
      }
    };
    // An update moves both accounts when a row changes account; the old one's lists all change.
    const leftAccount = `select o.account_id, null::uuid from old_rows o join new_rows n on n.id = o.id where o.account_id <> n.account_id`;
    const sameListingPg = ['status', 'eta', 'port_id', 'vessel_id', 'account_id']
      .map((c) => `n.${c} is not distinct from o.${c}`)
      .join(' and ');
    changes('port_calls', {
      insert: 'select account_id, null::uuid from new_rows',
      delete: 'select account_id, null::uuid from old_rows',
      update: `select n.account_id, case when ${sameListingPg} then n.id end from new_rows n join old_rows o on o.id = n.id
               union all ${leftAccount}`,
    });
    changes('service_orders', {
      insert: 'select account_id, port_call_id from new_rows',
      delete: 'select account_id, port_call_id from old_rows',
      update: `select n.account_id, case when n.port_call_id = o.port_call_id and n.account_id = o.account_id then n.port_call_id end
               from new_rows n join old_rows o on o.id = n.id
               union all ${leftAccount}`,
    });
    changes('vendors', {
      insert: 'select account_id, null::uuid from new_rows',
      delete: 'select account_id, null::uuid from old_rows',
      update: `select account_id, null::uuid from new_rows union all select account_id, null::uuid from old_rows`,
    });
    // A history row's account is its subject's; one whose subject is gone moves the shared version.
    const subject = (rows: string) =>
      `select ${SUBJECT_ACCOUNT('r.subject_id')}, ${subjectCall('r')} from ${rows} r`;
    const orphans = (rows: string) =>
      `perform tidegate_bump_version('port-ops') where exists (select 1 from ${rows} r where ${SUBJECT_ACCOUNT('r.subject_id')} is null);`;
    this.addSql(`create or replace function tidegate_port_ops_changes_status_changes() returns trigger as $$
      begin
        if tg_op = 'INSERT' then
          perform tidegate_port_ops_changed(account, array_agg(changed_call)) from (${subject('new_rows')}) x(account, changed_call)
            where account is not null group by account;
          ${orphans('new_rows')}
        elsif tg_op = 'DELETE' then
          perform tidegate_port_ops_changed(account, array_agg(changed_call)) from (${subject('old_rows')}) x(account, changed_call)
            where account is not null group by account;
          ${orphans('old_rows')}
        else
          perform tidegate_port_ops_changed(account, array_agg(changed_call)) from (${subject('new_rows')} union ${subject('old_rows')}) x(account, changed_call)
            where account is not null group by account;
          ${orphans('new_rows')}
        end if;
        return null;
      end
    $$ language plpgsql`);
    for (const event of ['insert', 'update', 'delete']) {
      this.addSql(`drop trigger if exists status_changes_version_${event} on status_changes`);
      this.addSql(
        `create trigger status_changes_version_${event} after ${event} on status_changes referencing ${referencing(event)} for each statement execute function tidegate_port_ops_changes_status_changes()`,
      );
    }
  }
}

function referencing(event: string): string {
  return event === 'insert'
    ? 'new table as new_rows'
    : event === 'delete'
      ? 'old table as old_rows'
      : 'old table as old_rows new table as new_rows';
}
