import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../events/process.js';

const ROOT = join(import.meta.dirname, '..', '..');

/** `tidegate serve --subgraph port-ops`, as README's "Running as subgraphs" starts it. */
describe('tidegate serve --subgraph', () => {
  let dir: string;
  let child: ChildProcess;
  let url: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tidegate-subgraph-'));
    const port = await freePort();
    url = `http://127.0.0.1:${port}`;
    child = spawn(
      process.execPath,
      ['--import', 'tsx', join(ROOT, 'src', 'cli.ts'), 'serve', '--subgraph', 'port-ops'],
      {
        cwd: ROOT,
        env: {
          ...process.env,
          HOST: '127.0.0.1',
          PORT: String(port),
          DATABASE_URL: join(dir, 'db.sqlite'),
          DOCUMENTS_DIR: join(dir, 'documents'),
          SECRETS_KEY_FILE: join(dir, 'secrets.key'),
          LOG_LEVEL: 'warn',
        },
        stdio: 'ignore',
      },
    );
    for (let i = 0; i < 600; i++) {
      if ((await fetch(`${url}/healthz`).catch(() => null))?.ok) return;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error('the subgraph process did not start');
  }, 90_000);
  afterAll(async () => {
    if (child?.exitCode === null) {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    }
    rmSync(dir, { recursive: true, force: true });
  });

  it('answers _service { sdl } with the checked-in SDL of that subgraph', async () => {
    const res = await fetch(`${url}/graphql`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ query: '{ _service { sdl } }' }),
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as { data: { _service: { sdl: string } } };
    expect(body.data._service.sdl).toBe(
      readFileSync(join(ROOT, 'schema', 'subgraphs', 'port-ops.graphql'), 'utf8'),
    );
  });

  it('serves GraphQL only: the REST shims and OAuth stay with the whole gateway', async () => {
    expect((await fetch(`${url}/v1/vessels/lookup?imo=9074729`)).status).toBe(404);
    expect((await fetch(`${url}/.well-known/oauth-authorization-server`)).status).toBe(404);
  });
});
