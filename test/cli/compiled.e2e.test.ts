import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../events/process.js';

const ROOT = join(import.meta.dirname, '..', '..');
const ENTRY = join(ROOT, 'dist', 'src', 'main.js');
const built = existsSync(ENTRY);
if (process.env.CI === 'true' && !built) throw new Error('dist/ is missing under CI=true: npm ci builds it');

/**
 * Production runs the compiled JavaScript (`npm start`): it must find what it reads at run time
 * (REST operations, the OpenAPI document, console assets, the README, the playground bundle) from
 * dist/ as it does from the sources.
 */
(built ? describe : describe.skip)(
  `the compiled server and CLI${built ? '' : ' (skipped: run npm run build)'}`,
  () => {
    let dir: string;
    let child: ChildProcess;
    let url: string;
    beforeAll(async () => {
      dir = mkdtempSync(join(tmpdir(), 'tidegate-compiled-'));
      const port = await freePort();
      url = `http://127.0.0.1:${port}`;
      child = spawn(process.execPath, [ENTRY], {
        cwd: ROOT,
        env: {
          ...process.env,
          HOST: '127.0.0.1',
          PORT: String(port),
          DATABASE_URL: join(dir, 'db.sqlite'),
          DOCUMENTS_DIR: join(dir, 'documents'),
          LOG_LEVEL: 'warn',
        },
        stdio: 'ignore',
      });
      for (let i = 0; i < 600; i++) {
        if ((await fetch(`${url}/healthz`).catch(() => null))?.ok) return;
        await new Promise((r) => setTimeout(r, 100));
      }
      throw new Error('the compiled server did not start');
    }, 90_000);
    afterAll(async () => {
      if (child?.exitCode === null) {
        child.kill('SIGTERM');
        await new Promise((r) => child.once('exit', r));
      }
      rmSync(dir, { recursive: true, force: true });
    });

    it('serves the API, the OpenAPI document, the landing page, the README and the playground', async () => {
      for (const path of ['/healthz', '/openapi.json', '/', '/readme', '/playground']) {
        expect((await fetch(`${url}${path}`)).status, path).toBe(200);
      }
      const res = await fetch(`${url}/graphql`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ query: '{ __typename }' }),
      });
      expect(((await res.json()) as { data: unknown }).data).toEqual({ __typename: 'Query' });
    });

    it('the tidegate bin runs the compiled CLI', async () => {
      const { stdout } = await promisify(execFile)(process.execPath, [
        join(ROOT, 'src', 'bin', 'tidegate.mjs'),
        '--version',
      ]);
      expect(stdout.trim()).toMatch(/^tidegate \d+\.\d+\.\d+$/);
    });
  },
);
