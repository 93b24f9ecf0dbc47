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
const TABLES: Record<string, { key: string; columns?: string[] }> = {
  port_calls: { key: 'id' },
  service_orders: { key: 'id' },
  status_changes: { key: 'id' },
  vendors: { key: 'id' },
  invoices: { key: 'id' },
  invoice_order_links: { key: 'service_order_id' },
  documents: { key: 'id' },
  document_upload_tokens: { key: 'id' },
  events: { key: 'id', columns: ['id', 'type'] },
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
  const { db } = server.database;
  const connection = db.em().getConnection();
  const state: PortOpsState = {};
  for (const [table, { key, columns }] of Object.entries(TABLES)) {
    // The rows are serialized and concatenated by the database (every column, in key order), and
    // digested there on PostgreSQL: far cheaper than the demo's ~20,000 rows as JavaScript objects.
    let sql: string;
    if (db.dialect === 'postgresql') {
      const row = columns ? `(${columns.join(', ')})` : 't';
      sql = `select count(*)::int as n, md5(coalesce(string_agg(${row}::text, '|' order by ${key}), '')) as rows from ${table} t`;
    } else {
      const names =
        columns ??
        ((await connection.execute(`pragma table_info(${table})`)) as Array<{ name: string }>).map(
          (c) => c.name,
        );
      const row = names.map((c) => `quote("${c}")`).join(` || ',' || `);
      sql = `select count(*) as n, coalesce(group_concat(${row}, '|' order by ${key}), '') as rows from ${table}`;
    }
    const [{ n, rows }] = (await connection.execute(sql)) as [{ n: number; rows: string }];
    state[table] = `${n}:${createHash('sha256').update(rows).digest('hex')}`;
  }
  state.files = filesUnder(server.config.documentsDir).join('\n');
  return state;
}
