import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI, MAIN, startListening, type ListeningProcess } from '../helpers/processes.js';

/**
 * Production runs the compiled JavaScript (`npm start`): it must find what it reads at run time
 * (REST operations, the OpenAPI document, console assets, the README, the playground bundle) from
 * dist/ as it does from the sources. The global setup builds dist/ when it is older than src/.
 */
describe('the compiled server and CLI', () => {
  let dir: string;
  let server: ListeningProcess;
  let url: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tidegate-compiled-'));
    server = await startListening([MAIN], {
      DATABASE_URL: join(dir, 'db.sqlite'),
      DOCUMENTS_DIR: join(dir, 'documents'),
    });
    url = server.url;
  }, 90_000);
  afterAll(async () => {
    await server?.stop();
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
    const { stdout } = await promisify(execFile)(process.execPath, [CLI, '--version']);
    expect(stdout.trim()).toMatch(/^tidegate \d+\.\d+\.\d+$/);
  });
});
