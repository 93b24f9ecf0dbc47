import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAIN, startListening } from '../helpers/processes.js';

const ROOT = join(import.meta.dirname, '..', '..');
const BIN = join(ROOT, 'src', 'bin', 'tidegate.mjs');
const RECORDER = pathToFileURL(join(import.meta.dirname, 'record-loads.mjs')).href;

/** Packages that cost most of a start-up; --help, --version and usage errors must load none of them. */
const HEAVY = ['@mikro-orm', 'knex', 'better-sqlite3', 'pg', 'type-graphql', 'graphql', 'fastify', '@apollo'];
const heavyIn = (urls: string[]) =>
  urls.filter((url) => HEAVY.some((name) => url.includes(`/node_modules/${name}/`)));

/**
 * The CLI starts quickly because its command tables load no ORM, GraphQL or service (src/cli.ts);
 * this spawns the compiled bin under a module-resolution hook and reads what it loaded.
 */
// The global setup builds dist/ when it is missing or stale (test/helpers/processes.ts).
describe('CLI start-up', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'tidegate-startup-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  let runs = 0;
  async function loadsOf(...args: string[]): Promise<{ code: number; urls: string[] }> {
    const log = join(dir, `loads-${++runs}.txt`);
    const result = await promisify(execFile)(process.execPath, ['--import', RECORDER, BIN, ...args], {
      cwd: ROOT,
      env: { ...process.env, RECORD_LOADS_TO: log, DATABASE_URL: join(dir, 'db.sqlite') },
    }).then(
      () => ({ code: 0 }),
      (e: { code?: number }) => ({ code: e.code ?? -1 }),
    );
    return { code: result.code, urls: readFileSync(log, 'utf8').split('\n').filter(Boolean) };
  }

  it.each([
    [['--version'], 0],
    [['help'], 0],
    [['keys', 'create', '--help'], 0],
    [['accounts', 'list', '--help'], 0],
    [['keys', 'create'], 2],
    [['frobnicate'], 2],
  ] as const)('`tidegate %s` loads no ORM, GraphQL or HTTP server', async (args, exit) => {
    const { code, urls } = await loadsOf(...args);
    expect(code).toBe(exit);
    // The hook saw the CLI itself, so an empty list cannot pass for a clean one.
    expect(urls.some((url) => url.endsWith('/dist/src/cli.js'))).toBe(true);
    expect(heavyIn(urls)).toEqual([]);
  });

  it('a database command loads the ORM, and the hook sees it (the check above can fail)', async () => {
    const { code, urls } = await loadsOf('accounts', 'list', '--json');
    expect(code).toBe(0);
    expect(heavyIn(urls).some((url) => url.includes('/node_modules/@mikro-orm/'))).toBe(true);
    // Only what the command needs: no GraphQL server, no HTTP framework.
    expect(urls.filter((url) => /\/node_modules\/(fastify|@apollo)\//.test(url))).toEqual([]);
  });

  it('the server loads the OpenTelemetry SDK only when tracing is on', async () => {
    const sdkIn = (urls: string[]) => urls.filter((url) => url.includes('/node_modules/@opentelemetry/sdk-'));
    const serve = async (env: Record<string, string>) => {
      const log = join(dir, `loads-${++runs}.txt`);
      const server = await startListening(['--import', RECORDER, MAIN], {
        RECORD_LOADS_TO: log,
        DATABASE_URL: join(dir, `serve-${runs}.sqlite`),
        DOCUMENTS_DIR: join(dir, `documents-${runs}`),
        DEMO_SEED: 'false',
        ...env,
      });
      await server.stop();
      return readFileSync(log, 'utf8').split('\n').filter(Boolean);
    };
    // Two processes at once: each records its own loads. Nothing listens at the second one's
    // endpoint: spans would be dropped, and the server starts all the same.
    const [off, on] = await Promise.all([
      serve({}),
      serve({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:9' }),
    ]);
    expect(off.some((url) => url.endsWith('/dist/src/app.js'))).toBe(true);
    expect(sdkIn(off)).toEqual([]);
    expect(sdkIn(on)).not.toEqual([]);
  });
});
