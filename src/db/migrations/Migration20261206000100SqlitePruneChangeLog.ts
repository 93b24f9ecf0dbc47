import { PortableMigration } from '../schema-builder.js';
import { sqlitePortOpsTriggers } from './Migration20261201000100PortOpsChanges.js';
import { PRUNE_EVERY } from './Migration20261204000100PruneChangeLog.js';

/**
 * SQLite: the port-ops triggers drop an account's change rows more than KEPT_BUMPS moves old on every
 * PRUNE_EVERY-th move of its version, as PostgreSQL's do, instead of on every move. Once an account
 * has made KEPT_BUMPS moves every delete removed a row, from the far end of the table and of its
 * index: with a new service order's two moves (the order, its history row), about 50 µs of each
 * trigger's 100–180 and two more pages for the commit to write to the log. The log holds KEPT_BUMPS
 * to KEPT_BUMPS + PRUNE_EVERY moves per account on both dialects.
 */
export class Migration20261206000100SqlitePruneChangeLog extends PortableMigration {
  override async up(): Promise<void> {
    if (this.isPostgres) return;
    for (const sql of sqlitePortOpsTriggers(PRUNE_EVERY)) this.addSql(sql);
  }

  override async down(): Promise<void> {
    if (this.isPostgres) return;
    for (const sql of sqlitePortOpsTriggers()) this.addSql(sql);
  }
}
