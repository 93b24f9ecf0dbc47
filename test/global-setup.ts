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
  const sqlite = await buildSqliteTemplates();
  const postgresUrl = process.env.TEST_POSTGRES_URL;
  let postgres: Awaited<ReturnType<typeof buildPostgresTemplates>> | undefined;
  try {
    postgres = postgresUrl ? await buildPostgresTemplates(postgresUrl) : undefined;
  } catch (e) {
    sqlite.drop();
    throw e;
  }
  const templates: TestTemplates = { sqlite: sqlite.templates, postgresql: postgres?.templates };
  project.provide('testTemplates', templates);
  return async () => {
    sqlite.drop();
    await postgres?.drop();
  };
}
