import { accountEntities } from './accounts/entities.js';
import type { Config } from './config.js';
import { auditEntities } from './audit/entities.js';
import { authEntities } from './auth/entities.js';
import { openDatabase, type Database, type DatabaseOptions } from './db/orm.js';
import { eventEntities } from './events/entities.js';
import { liquidityEntities } from './liquidity/entities.js';
import { portOpsEntities } from './port-ops/entities.js';

/**
 * Every entity of every domain; the ORM discovers exactly these. The list lives here, at the
 * composition root, so that `src/db/` depends on no domain (domains depend on it).
 */
export const ALL_ENTITIES = [
  ...accountEntities,
  ...auditEntities,
  ...authEntities,
  ...portOpsEntities,
  ...liquidityEntities,
  ...eventEntities,
];

/** Opens tidegate's database (every domain's entities) at `url`. */
export function openAppDatabase(
  url: string,
  options: Omit<DatabaseOptions, 'entities'> = {},
): Promise<Database> {
  return openDatabase(url, { ...options, entities: ALL_ENTITIES });
}

/** What the configuration sets on the database's connections (the server's, the CLI's, the preparing worker's). */
export function databaseOptionsOf(
  config: Pick<Config, 'sqliteSynchronous' | 'databasePoolMax'>,
): Omit<DatabaseOptions, 'entities'> {
  return { sqliteSynchronous: config.sqliteSynchronous, poolMax: config.databasePoolMax };
}
