import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { describe } from 'vitest';

/**
 * Suites that need PostgreSQL, Redis or Chromium run when the environment provides them and are
 * skipped visibly otherwise. Under CI=true a missing dependency is a failure, not a skip.
 */
export const TEST_POSTGRES_URL = process.env.TEST_POSTGRES_URL;
export const TEST_REDIS_URL = process.env.TEST_REDIS_URL;
export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
/** A SECRETS_KEY set where vitest was started: every file uses it instead of a key of its own. */
const STARTED_WITH_SECRETS_KEY = process.env.SECRETS_KEY;
/**
 * One master key per test file: servers and the child processes they spawn share it (children
 * inherit it through process.env), and nothing is written to ./data/secrets.key. Test files that
 * share a worker process share this module (vitest.config.ts, `isolate: false`), so the setup file
 * draws a new key before each file (newTestSecretsKey); the binding is live for importers.
 */
export let TEST_SECRETS_KEY = '';
newTestSecretsKey();

/** Draws the next test file's master key and sets it in process.env. */
export function newTestSecretsKey(): string {
  TEST_SECRETS_KEY = STARTED_WITH_SECRETS_KEY || randomBytes(32).toString('hex');
  process.env.SECRETS_KEY = TEST_SECRETS_KEY;
  return TEST_SECRETS_KEY;
}

function requireInCi(name: string, present: boolean): void {
  if (process.env.CI === 'true' && !present) {
    throw new Error(`${name} is required when CI=true (.ci/run sets it); refusing to skip`);
  }
}

export function describeWithPostgres(name: string, fn: () => void): void {
  requireInCi('TEST_POSTGRES_URL', Boolean(TEST_POSTGRES_URL));
  if (TEST_POSTGRES_URL) describe(name, fn);
  else describe.skip(`${name} (skipped: TEST_POSTGRES_URL is not set)`, fn);
}

export function describeWithRedis(name: string, fn: () => void): void {
  requireInCi('TEST_REDIS_URL', Boolean(TEST_REDIS_URL));
  if (TEST_REDIS_URL) describe(name, fn);
  else describe.skip(`${name} (skipped: TEST_REDIS_URL is not set)`, fn);
}

/** Runs a suite once per available dialect: always SQLite, PostgreSQL when configured. */
export function describeEachDialect(name: string, fn: (dialect: 'sqlite' | 'postgresql') => void): void {
  describe(`${name} [sqlite]`, () => fn('sqlite'));
  describeWithPostgres(`${name} [postgresql]`, () => fn('postgresql'));
}

export function describeWithChromium(name: string, fn: () => void): void {
  const present = existsSync(CHROMIUM_PATH);
  requireInCi(`Chromium at ${CHROMIUM_PATH}`, present);
  if (present) describe(name, fn);
  else
    describe.skip(
      `${name} (skipped: no Chromium at ${CHROMIUM_PATH}; apt-get install chromium or set CHROMIUM_PATH)`,
      fn,
    );
}

/** `promtool` (Debian package `prometheus`; `.ci/run` installs it), for the metrics lint. */
export const PROMTOOL_PATH = process.env.PROMTOOL_PATH ?? '/usr/bin/promtool';

export function describeWithPromtool(name: string, fn: () => void): void {
  const present = existsSync(PROMTOOL_PATH);
  requireInCi(`promtool at ${PROMTOOL_PATH}`, present);
  if (present) describe(name, fn);
  else
    describe.skip(
      `${name} (skipped: no promtool at ${PROMTOOL_PATH}; apt-get install prometheus or set PROMTOOL_PATH)`,
      fn,
    );
}
