import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import WebSocket from 'ws';
import { createSeededTestDatabase, createTestDatabase, emptyDatabase } from '../helpers/db.js';
import { describeEachDialect } from '../helpers/env.js';
import { listeningUrl, MAIN } from '../helpers/processes.js';

/**
 * A first start prints the demo banner on stderr and then logs `listening on` on stdout: separate
 * pipes, read in no fixed order, so a test that needs the banner waits for its last line too.
 */
const WITH_BANNER = [/listening on/, /Try:\s+curl/];

/** The compiled service on a port the system picks; `port` is the one it printed. */
async function startProcess(
  dir: string,
  databaseUrl: string,
  env: Record<string, string> = {},
  /** What the output must show before the process counts as started (a fresh database adds the banner). */
  ready: RegExp[] = [/listening on/],
): Promise<{ child: ChildProcess; output: () => string; port: number }> {
  mkdirSync(dir, { recursive: true });
  const child = spawn(process.execPath, [MAIN], {
    env: {
      ...process.env,
      PORT: '0',
      DATABASE_URL: databaseUrl,
      DOCUMENTS_DIR: join(dir, 'documents'),
      LOG_LEVEL: 'info',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (out += d));
  // A loaded machine can take over 30 s to start a process; wait as long as the other process tests do.
  for (let i = 0; i < 600; i++) {
    if (ready.every((r) => r.test(out)))
      return { child, output: () => out, port: Number(new URL(listeningUrl(out)!).port) };
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`server did not start:\n${out}`);
}

describeEachDialect('process lifecycle', (dialect) => {
  let dir: string;
  const databases: Array<{ url: string; drop(): Promise<void> }> = [];
  /** A database no process has touched yet: a file under dir, or a new PostgreSQL database. */
  const freshDatabase = async (name: string) => {
    if (dialect === 'sqlite') return join(dir, name, 'db.sqlite');
    const database = await emptyDatabase('postgresql');
    databases.push(database);
    return database.url;
  };
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'tidegate-life-'));
  });
  afterAll(async () => {
    for (const database of databases) await database.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  it(
    'prints demo credentials on the first start only, and serves /healthz and /readyz',
    { timeout: 180_000 },
    async () => {
      const databaseUrl = await freshDatabase('first');
      const first = await startProcess(join(dir, 'first'), databaseUrl, {}, WITH_BANNER);
      const { port } = first;
      expect(first.output()).toMatch(/demo credentials/);
      // The hint names the address the server really listens on.
      expect(first.output()).toContain(
        `curl -H "X-API-Key: <key>" "http://127.0.0.1:${port}/v1/vessels/lookup`,
      );
      expect(first.output()).toMatch(/Analyst\s+account \S+\s+API key tg_/);
      expect(await (await fetch(`http://127.0.0.1:${port}/healthz`)).json()).toEqual({ status: 'ok' });
      expect((await fetch(`http://127.0.0.1:${port}/readyz`)).status).toBe(200);
      first.child.kill('SIGTERM');
      await new Promise((r) => first.child.once('exit', r));

      const second = await startProcess(join(dir, 'first'), databaseUrl);
      expect(second.output()).not.toMatch(/demo credentials|tg_|password/);
      second.child.kill('SIGINT');
      expect(await new Promise((r) => second.child.once('exit', (code) => r(code)))).toBe(0);
    },
  );

  it(
    'on SIGTERM finishes in-flight requests, closes WebSockets with 1001 and exits 0',
    { timeout: 180_000 },
    async () => {
      const seeded = await createSeededTestDatabase(dialect);
      databases.push(seeded.database);
      const key = seeded.demo.accounts.find((a) => a.plan === 'ANALYST')!.apiKey;
      const { child, port } = await startProcess(join(dir, 'seeded'), seeded.database.url);

      // A request whose body is still arriving when the signal lands.
      const body = JSON.stringify({ query: '{ vessel(imo: "9074729") { name } }' });
      const socket = connect(port, '127.0.0.1');
      await new Promise((r) => socket.once('connect', r));
      let response = '';
      socket.on('data', (d) => (response += d));
      socket.write(
        `POST /graphql HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nX-API-Key: ${key}\r\nContent-Length: ${body.length}\r\n\r\n`,
      );
      socket.write(body.slice(0, 10));

      const ws = new WebSocket(`ws://127.0.0.1:${port}/graphql`, 'graphql-transport-ws');
      await new Promise((r) => ws.once('open', r));
      ws.send(JSON.stringify({ type: 'connection_init', payload: { apiKey: key } }));
      await new Promise((r) => ws.once('message', r));
      const wsClosed = new Promise<number>((r) => ws.once('close', (code) => r(code)));

      const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
      child.kill('SIGTERM');
      expect(await wsClosed).toBe(1001);
      await new Promise((r) => setTimeout(r, 200));
      socket.write(body.slice(10));
      for (let i = 0; i < 100 && !response.includes('Northern Tern'); i++)
        await new Promise((r) => setTimeout(r, 50));
      socket.end();
      expect(response).toMatch(/^HTTP\/1.1 200/);
      expect(response).toContain('Northern Tern');
      expect(await exited).toBe(0);
      await expect(fetch(`http://127.0.0.1:${port}/healthz`)).rejects.toThrow();
    },
  );

  it(
    'after SIGTERM, a request on a kept-alive connection is answered with Connection: close, not reset',
    { timeout: 180_000 },
    async () => {
      // No demo: the connection's requests are health checks.
      const migrated = await createTestDatabase(dialect);
      databases.push(migrated);
      const { child, port } = await startProcess(join(dir, 'keepalive'), migrated.url, {
        SHUTDOWN_DRAIN_MS: '1500',
        DEMO_SEED: 'false',
      });
      const socket = connect(port, '127.0.0.1');
      await new Promise((r) => socket.once('connect', r));
      let received = '';
      let error: Error | undefined;
      socket.on('data', (d) => (received += d));
      socket.on('error', (e) => (error = e));
      const ended = new Promise((r) => socket.once('close', r));
      const request = 'GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\n\r\n';
      const responses = () => received.match(/HTTP\/1\.1 \d{3} /g)?.length ?? 0;
      const waitFor = async (n: number) => {
        for (let i = 0; i < 100 && responses() < n; i++) await new Promise((r) => setTimeout(r, 20));
      };

      socket.write(request);
      await waitFor(1);
      expect(received).toMatch(/^HTTP\/1.1 200/);
      expect(received.toLowerCase()).toContain('connection: keep-alive');

      const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
      child.kill('SIGTERM');
      await new Promise((r) => setTimeout(r, 300));
      // The connection sat idle across the signal; its next request still gets an answer.
      socket.write(request);
      await waitFor(2);
      await ended;
      expect(error).toBeUndefined();
      // Without the drain the idle connection is closed at once and the request is lost unanswered.
      expect(responses()).toBe(2);
      const second = received.slice(received.lastIndexOf('HTTP/1.1'));
      expect(second).toMatch(/^HTTP\/1.1 200/);
      expect(second.toLowerCase()).toContain('connection: close');
      expect(await exited).toBe(0);
    },
  );
});
