import { PortableMigration } from '../schema-builder.js';

/**
 * Looks a call up by its request id through an index led by the request id, `(request_id,
 * account_id, at, id)`, instead of `(account_id, request_id)`. Every API call inserts an audit
 * row, and an index led by the account takes each batch's rows at as many places as the batch has
 * accounts: with 50 busy accounts a batch of 750 rows wrote about 230 pages of that index alone to
 * the log. The ids the server makes are ordered by time, so the new index grows at one end (a
 * batch of 750 rows into a table of 300,000 on SQLite: 17–25 → 12 µs of CPU and 0.65 → 0.38 pages
 * of log per row). `requestLogEntry` matches the request id and the account and takes the newest
 * of their calls (a client may send one id twice) in the index's order: without `at` and `id` in
 * it both planners read the account's calls by `(account_id, at)` newest first, filtering for the
 * id.
 */
export class Migration20261204000300AuditRequestIdIndex extends PortableMigration {
  override async up(): Promise<void> {
    this.schema((s) =>
      s.alterTable('audit_records', (t) => {
        t.dropIndex(['account_id', 'request_id']);
        t.index(['request_id', 'account_id', 'at', 'id']);
      }),
    );
  }

  override async down(): Promise<void> {
    this.schema((s) =>
      s.alterTable('audit_records', (t) => {
        t.dropIndex(['request_id', 'account_id', 'at', 'id']);
        t.index(['account_id', 'request_id']);
      }),
    );
  }
}
