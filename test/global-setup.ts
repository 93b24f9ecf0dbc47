import type { TestProject } from 'vitest/node';
import { ensureBuilt } from './helpers/processes.js';
import { buildPostgresTemplates, buildSqliteTemplates, type TestTemplates } from './helpers/templates.js';

/**
 * Rebuilds `dist/` when a source is newer (the process tests run the compiled service:
 * test/helpers/processes.ts), then builds the run's template databases once
 * (test/helpers/templates.ts) and drops them after.
 * helpers/env.ts is not imported here: it gives each test file a secrets key of its own.
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  ensureBuilt();
  // The two dialects' templates are built side by side: SQLite's seed runs in this process, most of
  // PostgreSQL's in its server, so together they take little more than the longer one.
  const postgresUrl = process.env.TEST_POSTGRES_URL;
  const [sqliteBuild, postgresBuild] = await Promise.allSettled([
    buildSqliteTemplates(),
    postgresUrl ? buildPostgresTemplates(postgresUrl) : Promise.resolve(undefined),
  ]);
  if (sqliteBuild.status === 'rejected') {
    if (postgresBuild.status === 'fulfilled') await postgresBuild.value?.drop();
    throw sqliteBuild.reason;
  }
  if (postgresBuild.status === 'rejected') {
    sqliteBuild.value.drop();
    throw postgresBuild.reason;
  }
  const sqlite = sqliteBuild.value;
  const postgres = postgresBuild.value;
  const templates: TestTemplates = { sqlite: sqlite.templates, postgresql: postgres?.templates };
  project.provide('testTemplates', templates);
  return async () => {
    sqlite.drop();
    await postgres?.drop();
  };
}
