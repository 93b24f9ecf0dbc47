import { createHash } from 'node:crypto';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import type { TestServer } from '../helpers/server.js';

/**
 * Everything a port-ops write can touch, as digests of full row contents (every column, ordered by
 * key) plus the files under the documents directory, so "a refused request wrote nothing" is
 * checked against the whole state, not row counts: a changed status or updatedAt shows too.
 * Events are compared by id and type only: the webhook outbox stamps `dispatched_at` in the
 * background.
 */
const TABLES: Record<string, string> = {
  port_calls: 'select * from port_calls order by id',
  service_orders: 'select * from service_orders order by id',
  status_changes: 'select * from status_changes order by id',
  vendors: 'select * from vendors order by id',
  invoices: 'select * from invoices order by id',
  invoice_order_links: 'select * from invoice_order_links order by service_order_id',
  documents: 'select * from documents order by id',
  document_upload_tokens: 'select * from document_upload_tokens order by id',
  events: 'select id, type from events order by id',
};

export type PortOpsState = Record<string, string>;

export function filesUnder(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name))
    .map((path) => `${relative(dir, path)}:${statSync(path).size}`)
    .sort();
}

export async function portOpsState(server: TestServer): Promise<PortOpsState> {
  const connection = server.database.db.em().getConnection();
  const state: PortOpsState = {};
  for (const [table, sql] of Object.entries(TABLES)) {
    const rows = await connection.execute(sql);
    state[table] = `${rows.length}:${createHash('sha256').update(JSON.stringify(rows)).digest('hex')}`;
  }
  state.files = filesUnder(server.config.documentsDir).join('\n');
  return state;
}
