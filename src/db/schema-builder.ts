import type { Knex } from '@mikro-orm/knex';
import { Migration } from '@mikro-orm/migrations';

/**
 * Migrations are written once with knex's schema builder so the same file produces the right
 * DDL for SQLite and for PostgreSQL. Each builder statement becomes one migration statement
 * (better-sqlite3 refuses several statements in one call).
 */
export abstract class PortableMigration extends Migration {
  protected schema(build: (schema: Knex.SchemaBuilder) => Knex.SchemaBuilder): void {
    const builder = build(this.getKnex().schema);
    for (const statement of builder.toSQL()) {
      this.addSql(
        this.getKnex()
          .raw(statement.sql, statement.bindings ?? [])
          .toQuery(),
      );
    }
  }

  protected get isPostgres(): boolean {
    return this.driver.constructor.name === 'PostgreSqlDriver';
  }
}
