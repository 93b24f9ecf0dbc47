import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listeningUrl, MAIN } from '../helpers/processes.js';
import { gql, rest } from '../helpers/server.js';
import { waitFor } from '../helpers/wait.js';

/*
 * The request log is the real process's stdout (pino at info level), so this test runs the
 * real entry point and reads what an operator would see.
 */
describe('signed upload URLs stay out of the request log', () => {
  let dir: string;
  let child: ChildProcess;
  let output = '';
  let url: string;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'tidegate-uplog-'));
    child = spawn(process.execPath, [MAIN], {
      env: {
        ...process.env,
        PORT: '0',
        HOST: '127.0.0.1',
        DATABASE_URL: join(dir, 'db.sqlite'),
        DOCUMENTS_DIR: join(dir, 'documents'),
        LOG_LEVEL: 'info',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout!.on('data', (d) => (output += d));
    child.stderr!.on('data', (d) => (output += d));
    // The demo banner (stderr) and the listening line (stdout) come through separate pipes: wait for both.
    await waitFor(
      () => output,
      (out) => /listening on/.test(out) && /Try:\s+curl/.test(out),
      { timeoutMs: 50_000, what: (out) => `the server to start:\n${out}` },
    );
    url = listeningUrl(output)!;
  }, 60_000);

  afterAll(async () => {
    if (child && child.exitCode === null) {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    }
    rmSync(dir, { recursive: true, force: true });
  });

  it('logs the PUT with the token redacted, whether it succeeds or is refused', async () => {
    const key = /Institutional\s+account \S+\s+API key (\S+)/.exec(output)?.[1];
    expect(key, output).toBeTruthy();
    const call = (await rest(url, '/v1/port-calls?status=SCHEDULED&limit=1', { key })).body.data[0];
    const ticket = await gql(
      url,
      'mutation($input: DocumentUploadInput!) { createDocumentUpload(input: $input) { uploadUrl } }',
      {
        key,
        variables: {
          input: {
            kind: 'OTHER',
            attachedType: 'PORT_CALL',
            attachedId: call.id,
            fileName: 'log.txt',
            contentType: 'text/plain',
          },
        },
      },
    );
    const uploadUrl = (ticket.body.data!.createDocumentUpload as { uploadUrl: string }).uploadUrl;
    const token = new URL(uploadUrl, url).searchParams.get('token')!;
    const put = (path: string) =>
      fetch(`${url}${path}`, { method: 'PUT', headers: { 'content-type': 'text/plain' }, body: 'hello\n' });
    expect((await put(uploadUrl)).status).toBe(201);
    expect((await put(uploadUrl)).status).toBe(409);
    expect((await put(`/api${uploadUrl}`)).status).toBe(409);

    // Log lines are written asynchronously; wait until the last request's line is there.
    await waitFor(
      () => output,
      (out) => (out.match(/token=\[REDACTED\]/g) ?? []).length >= 3,
      { timeoutMs: 5_000, what: 'the third redacted upload line' },
    );
    expect((output.match(/"url":"\/(api\/)?v1\/documents\/uploads\?token=\[REDACTED\]"/g) ?? []).length).toBe(
      3,
    );
    expect(output).not.toContain(token);
    expect(output).not.toContain(token.split('.')[1]!);
  });
});
