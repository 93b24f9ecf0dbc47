import { PortableMigration } from '../schema-builder.js';

/** Port operations: ports, port calls, status history, vendors, service orders, invoices, documents. */
export class Migration20261122000700PortOps extends PortableMigration {
  override async up(): Promise<void> {
    const ts = { useTz: true, precision: 3 } as const;
    this.schema((s) =>
      s
        .createTable('ports', (t) => {
          t.uuid('id').primary();
          t.string('locode', 5).notNullable().unique();
          t.string('name', 200).notNullable();
          t.string('country', 2).notNullable();
          t.string('time_zone', 64).notNullable();
          t.timestamp('created_at', ts).notNullable();
        })
        .createTable('port_calls', (t) => {
          t.uuid('id').primary();
          t.uuid('account_id').notNullable().references('id').inTable('accounts').onDelete('cascade');
          t.uuid('vessel_id').notNullable().references('id').inTable('vessels');
          t.uuid('port_id').notNullable().references('id').inTable('ports');
          t.string('voyage_reference', 64).notNullable();
          t.string('agent', 200).nullable();
          t.string('status', 16).notNullable();
          t.timestamp('eta', ts).notNullable();
          t.timestamp('etb', ts).nullable();
          t.timestamp('etd', ts).nullable();
          t.timestamp('ata', ts).nullable();
          t.timestamp('atb', ts).nullable();
          t.timestamp('atd', ts).nullable();
          t.timestamp('created_at', ts).notNullable();
          t.timestamp('updated_at', ts).notNullable();
          t.unique(['account_id', 'voyage_reference']);
          t.index(['account_id', 'eta']);
          t.index(['account_id', 'status', 'eta']);
          t.index(['account_id', 'port_id', 'eta']);
        })
        .createTable('status_changes', (t) => {
          t.uuid('id').primary();
          t.string('subject_type', 16).notNullable();
          t.uuid('subject_id').notNullable();
          t.string('from', 16).nullable();
          t.string('to', 16).notNullable();
          t.timestamp('at', ts).notNullable();
          t.string('actor', 100).notNullable();
          t.timestamp('recorded_at', ts).notNullable();
          t.index(['subject_type', 'subject_id', 'recorded_at']);
        })
        .createTable('vendors', (t) => {
          t.uuid('id').primary();
          t.uuid('account_id').notNullable().references('id').inTable('accounts').onDelete('cascade');
          t.string('name', 200).notNullable();
          t.json('services').notNullable();
          t.json('ports').notNullable();
          t.string('contact_email', 320).nullable();
          t.string('contact_phone', 40).nullable();
          t.boolean('active').notNullable();
          t.timestamp('created_at', ts).notNullable();
          t.index(['account_id', 'name']);
        })
        .createTable('service_orders', (t) => {
          t.uuid('id').primary();
          t.uuid('account_id').notNullable().references('id').inTable('accounts').onDelete('cascade');
          t.uuid('port_call_id').notNullable().references('id').inTable('port_calls');
          t.uuid('vendor_id').notNullable().references('id').inTable('vendors');
          t.string('service_type', 32).notNullable();
          t.json('details').notNullable();
          t.string('status', 16).notNullable();
          t.timestamp('requested_for', ts).nullable();
          t.timestamp('completed_at', ts).nullable();
          t.timestamp('created_at', ts).notNullable();
          t.timestamp('updated_at', ts).notNullable();
          t.index(['port_call_id']);
          t.index(['account_id', 'status']);
          t.index(['vendor_id']);
        })
        .createTable('invoices', (t) => {
          t.uuid('id').primary();
          t.uuid('account_id').notNullable().references('id').inTable('accounts').onDelete('cascade');
          t.uuid('vendor_id').notNullable().references('id').inTable('vendors');
          t.string('number', 64).notNullable();
          t.string('status', 16).notNullable();
          t.string('currency', 3).notNullable();
          t.json('lines').notNullable();
          t.json('service_order_ids').notNullable();
          t.string('tax_rate', 16).notNullable();
          t.string('subtotal', 32).notNullable();
          t.string('tax', 32).notNullable();
          t.string('total', 32).notNullable();
          t.timestamp('due_date', ts).notNullable();
          t.timestamp('issued_at', ts).nullable();
          t.timestamp('paid_at', ts).nullable();
          t.timestamp('created_at', ts).notNullable();
          t.unique(['account_id', 'number']);
          t.index(['account_id', 'status']);
          t.index(['vendor_id']);
        })
        .createTable('documents', (t) => {
          t.uuid('id').primary();
          t.uuid('account_id').notNullable().references('id').inTable('accounts').onDelete('cascade');
          t.string('kind', 32).notNullable();
          t.string('attached_type', 16).notNullable();
          t.uuid('attached_id').notNullable();
          t.string('file_name', 255).notNullable();
          t.string('content_type', 100).notNullable();
          t.integer('size_bytes').notNullable();
          t.string('sha256', 64).notNullable();
          t.string('uploaded_by', 100).notNullable();
          t.timestamp('created_at', ts).notNullable();
          t.index(['account_id', 'attached_type', 'attached_id']);
        }),
    );
  }
}
