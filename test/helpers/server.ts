import { buildApp, type App } from '../../src/app.js';
import { loadConfig, type Config, type SubgraphName } from '../../src/config.js';
import { seedDemo, type DemoCredentials } from '../../src/seed.js';
import type { Telemetry } from '../../src/gateway/observability/telemetry.js';
import { ManualClock, systemClock, type Clock } from '../../src/kernel/clock.js';
import { copyOfTemplate, createTestDatabase, templatesOf, type TestDatabase } from './db.js';
import { TEST_SECRETS_KEY } from './env.js';
import { NOTICE_BOUND_MS, servedWithin } from './served.js';
import { seededTemplateAt, seededTemplateIsFresh, type DialectTemplates } from './templates.js';

export interface TestServer {
  url: string;
  app: App;
  config: Config;
  database: TestDatabase;
  demo: DemoCredentials;
  /** Demo API key for a plan: observer, analyst, professional, institutional. */
  key(plan: 'OBSERVER' | 'ANALYST' | 'PROFESSIONAL' | 'INSTITUTIONAL'): string;
  close(): Promise<void>;
}

export interface TestServerOptions {
  dialect?: 'sqlite' | 'postgresql';
  clock?: Clock | ManualClock;
  /** Extra environment, as an operator would set it. */
  env?: Record<string, string>;
  /**
   * Seed the demo dataset (default true): a copy of a seeded template of the run. `'afresh'` seeds
   * this server's own database, for tests of the seed itself (two seeds at one instant agree).
   */
  seed?: boolean | 'afresh';
  /** Sees every SQL statement the server runs (statement-count tests). */
  onQuery?: (sql: string) => void;
  /** How long a query waits for a free PostgreSQL pool connection (pool-exhaustion tests). */
  poolAcquireTimeoutMs?: number;
  /** Tracing to an exporter of the test's own. */
  telemetry?: Telemetry;
}

/** The environment of a test server on this database, as an operator would set it. */
function testEnv(databaseUrl: string, env: Record<string, string> = {}): Record<string, string | undefined> {
  return {
    PORT: '0',
    HOST: '127.0.0.1',
    DATABASE_URL: databaseUrl,
    LOG_LEVEL: 'warn',
    WEBHOOK_ALLOW_PRIVATE: 'true',
    SECRETS_KEY: TEST_SECRETS_KEY,
    // Nothing keeps connections to a test server across its close: no need to drain them.
    SHUTDOWN_DRAIN_MS: '0',
    ...env,
  };
}

/**
 * One federation subgraph (SUBGRAPH=<name>) on a random loopback port, over the database of a
 * running test server, with its own connection to it as a separate process would have.
 */
export async function startSubgraphServer(
  beside: TestServer,
  name: SubgraphName,
  env: Record<string, string> = {},
): Promise<{ url: string; app: App; close(): Promise<void> }> {
  const app = await buildApp(loadConfig(testEnv(beside.database.url, { ...env, SUBGRAPH: name })), {
    logger: false,
  });
  const url = await app.listen();
  return { url, app, close: () => app.close() };
}

/**
 * The real server on a random loopback port, on a fresh database, with the demo data: a copy of a
 * seeded template of the run, and `demo` its credentials. On the system clock that is the global
 * setup's template; on a clock of a server's own (the demo's history is relative to it) it is the
 * template seeded at that clock's instant, built by the first server of the run that starts there
 * (test/helpers/templates.ts). Only the key policy of the configuration reaches the seed, and no
 * setting of it changes what the seed writes (one key per account), so `env` does not decide.
 */
export async function startTestServer(options: TestServerOptions = {}): Promise<TestServer> {
  const dialect = options.dialect ?? 'sqlite';
  const dbOptions = { onQuery: options.onQuery, poolAcquireTimeoutMs: options.poolAcquireTimeoutMs };
  const clock = options.clock ?? systemClock;
  const template = options.seed === true || options.seed === undefined ? templatesOf(dialect) : undefined;
  const seeded = template ? await seededTemplateFor(dialect, template, clock) : undefined;
  const database = seeded
    ? await copyOfTemplate(dialect, seeded.seeded, dbOptions)
    : await createTestDatabase(dialect, dbOptions);
  const config = loadConfig(testEnv(database.url, options.env));
  const app = await buildApp(config, {
    db: database.db,
    clock,
    logger: false,
    telemetry: options.telemetry,
  });
  const demo = seeded
    ? seeded.demo
    : options.seed === false
      ? { accounts: [], admin: { email: '', password: '', accountId: '' } }
      : await seedDemo(database.db, { clock, config, versions: app.services.versions });
  let url: string;
  try {
    url = await app.listen();
  } catch (e) {
    // A chosen PORT taken meanwhile (EADDRINUSE): close what was opened, the caller may try again.
    await app.close();
    await database.drop();
    throw e;
  }
  return {
    url,
    app,
    config,
    database,
    demo,
    key(plan) {
      const found = demo.accounts.find((a) => a.plan === plan);
      if (!found) throw new Error(`no demo key for ${plan}`);
      return found.apiKey;
    },
    async close() {
      await app.close();
      await database.drop();
    },
  };
}

/** The seeded template a server on `clock` copies, if any: undefined means it seeds its own. */
async function seededTemplateFor(
  dialect: 'sqlite' | 'postgresql',
  template: DialectTemplates,
  clock: Clock | ManualClock,
): Promise<{ seeded: string; demo: TestServer['demo'] } | undefined> {
  if (clock !== systemClock) return seededTemplateAt(dialect, template, clock);
  // The system clock moves on: the global setup's template serves while its history still holds.
  return seededTemplateIsFresh(template, clock.now()) ? template : undefined;
}

/** POST /graphql with JSON; returns status, headers and parsed body. */
export async function gql(
  url: string,
  query: string,
  options: { variables?: Record<string, unknown>; key?: string; headers?: Record<string, string> } = {},
): Promise<{
  status: number;
  headers: Headers;
  body: {
    data?: Record<string, unknown> | null;
    errors?: Array<{ message: string; extensions?: Record<string, unknown> }>;
    extensions?: Record<string, unknown>;
  };
}> {
  const res = await fetch(`${url}/graphql`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/graphql-response+json, application/json',
      ...(options.key ? { 'x-api-key': options.key } : {}),
      ...options.headers,
    },
    body: JSON.stringify({ query, variables: options.variables }),
  });
  return { status: res.status, headers: res.headers, body: (await res.json()) as never };
}

/** Parsed JSON response bodies are asserted field by field in tests, so they are loosely typed. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Json = any;

/** A REST call with JSON in and out. `key` goes in X-API-Key, `bearer` in Authorization. */
export async function rest(
  url: string,
  path: string,
  options: {
    method?: string;
    key?: string;
    bearer?: string;
    body?: unknown;
    headers?: Record<string, string>;
  } = {},
): Promise<{ status: number; headers: Headers; body: Json; text: string }> {
  const headers: Record<string, string> = { ...options.headers };
  if (options.key) headers['x-api-key'] = options.key;
  if (options.bearer) headers.authorization = `Bearer ${options.bearer}`;
  if (options.body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(`${url}${path}`, {
    method: options.method ?? 'GET',
    headers,
    body: options.body === undefined ? undefined : JSON.stringify(options.body),
  });
  const text = await res.text();
  let body: Json = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    body = null;
  }
  return { status: res.status, headers: res.headers, body, text };
}

/** Creates an API key with the given scopes on a demo account of the server; returns the secret and key id. */
export async function createKey(
  server: TestServer,
  options: {
    plan?: 'OBSERVER' | 'ANALYST' | 'PROFESSIONAL' | 'INSTITUTIONAL';
    scopes?: string;
    expiresAt?: Date;
    accountId?: string;
  },
): Promise<{ secret: string; id: string }> {
  const { createApiKey } = await import('../../src/accounts/service.js');
  const accountId =
    options.accountId ??
    server.demo.accounts.find((a) => a.plan === (options.plan ?? 'INSTITUTIONAL'))!.accountId;
  const { key, secret } = await createApiKey(
    { em: server.database.db.em(), clock: server.app.services.clock },
    { maxActiveKeys: 1000, rotationGraceMs: server.config.apiKeyRotationGraceMs },
    { accountId, scopes: options.scopes, expiresAt: options.expiresAt ?? null, name: 'test key' },
  );
  return { secret, id: key.id };
}

/**
 * Moves every port-ops data version, as any write would (src/gateway/pipeline/answers.ts): the next read of
 * each kept answer executes again. For tests that look at what an execution does. On PostgreSQL the
 * server learns of it by notices: this returns once it has heard of every moved version.
 */
export async function staleKeptAnswers(server: TestServer): Promise<void> {
  const connection = server.database.db.em().getConnection();
  await connection.execute(
    `update read_model_versions set version = version + 1 where name like 'port-ops%'`,
  );
  const moved = (await connection.execute(
    `select name, version from read_model_versions where name like 'port-ops%'`,
  )) as Array<{ name: string; version: number | string }>;
  const versions = server.app.services.versions;
  for (const { name, version } of moved) {
    const wanted = `${version}.${version}`;
    const heard = await servedWithin(
      () => versions.read([name, name]),
      (v) => v === wanted,
      NOTICE_BOUND_MS,
    );
    if (heard !== wanted) throw new Error(`the server did not hear that ${name} moved to ${version}`);
  }
}

/**
 * Moves the port-operations versions so that the next list of port calls executes by statement:
 * `read` (one list read of the account) runs at a fresh version first, so whatever model it meets or
 * builds has answered at most that one read when the versions move again, and the read model
 * (src/port-ops/account-calls.ts) then reads the next version's first list by statement.
 */
export async function staleToStatements(server: TestServer, read: () => Promise<unknown>): Promise<void> {
  await staleKeptAnswers(server);
  await read();
  await staleKeptAnswers(server);
}
