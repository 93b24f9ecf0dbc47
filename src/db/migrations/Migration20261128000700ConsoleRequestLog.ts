import { PortableMigration } from '../schema-builder.js';

/**
 * What the console's request log shows beside each call: the door it came in by and the error
 * code it was answered with (the status alone does not tell a missing scope from a missing
 * plan). A request id from an error body is looked up within its account.
 */
export class Migration20261128000700ConsoleRequestLog extends PortableMigration {
  override async up(): Promise<void> {
    this.schema((s) =>
      s.alterTable('audit_records', (t) => {
        t.string('door', 16).nullable();
        t.string('error_code', 40).nullable();
        t.index(['account_id', 'request_id']);
      }),
    );
  }
}
