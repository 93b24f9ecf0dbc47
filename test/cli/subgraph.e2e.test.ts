import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI, ROOT, startListening, type ListeningProcess } from '../helpers/processes.js';

/** `tidegate serve --subgraph port-ops`, as README's "Running as subgraphs" starts it. */
describe('tidegate serve --subgraph', () => {
  let dir: string;
  let subgraph: ListeningProcess;
  let url: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tidegate-subgraph-'));
    subgraph = await startListening([CLI, 'serve', '--subgraph', 'port-ops'], {
      DATABASE_URL: join(dir, 'db.sqlite'),
      DOCUMENTS_DIR: join(dir, 'documents'),
      SECRETS_KEY_FILE: join(dir, 'secrets.key'),
    });
    url = subgraph.url;
  }, 90_000);
  afterAll(async () => {
    await subgraph?.stop();
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
