import { PortableMigration } from '../schema-builder.js';

/**
 * Port-ops integrity: a service order is billed by at most one invoice that is not VOID
 * (`invoice_order_links`, keyed by the order), and a signed upload URL creates one document
 * (`document_upload_tokens`, keyed by the token id). Existing non-VOID invoices are linked to
 * their orders; where an order was already billed twice, the earliest invoice keeps the link.
 */
export class Migration20261123000700PortOpsIntegrity extends PortableMigration {
  override async up(): Promise<void> {
    const ts = { useTz: true, precision: 3 } as const;
    this.schema((s) =>
      s
        .createTable('invoice_order_links', (t) => {
          t.uuid('service_order_id').primary().references('id').inTable('service_orders');
          t.uuid('invoice_id').notNullable().references('id').inTable('invoices').onDelete('cascade');
          t.index(['invoice_id']);
        })
        .createTable('document_upload_tokens', (t) => {
          t.uuid('id').primary();
          t.uuid('document_id').notNullable().references('id').inTable('documents').onDelete('cascade');
          t.timestamp('expires_at', ts).notNullable();
          t.timestamp('used_at', ts).notNullable();
          t.index(['expires_at']);
        }),
    );
    this.addSql(
      this.isPostgres
        ? `insert into invoice_order_links (service_order_id, invoice_id)
           select distinct on (o.value) o.value::uuid, i.id
           from invoices i cross join lateral json_array_elements_text(i.service_order_ids) as o(value)
           where i.status <> 'VOID'
           order by o.value, i.created_at, i.id`
        : // The ORDER BY must be on the outer select: SQLite flattens an ordered subquery in FROM
          // and drops its ORDER BY, and `insert or ignore` keeps the first row it sees per order.
          `insert or ignore into invoice_order_links (service_order_id, invoice_id)
           select o.value, i.id
           from invoices i, json_each(i.service_order_ids) o
           where i.status <> 'VOID'
           order by i.created_at, i.id`,
    );
  }
}
