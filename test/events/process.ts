import { spawn, type ChildProcess } from 'node:child_process';
import type { DemoCredentials } from '../../src/seed.js';
import { listeningUrl, MAIN, ROOT } from '../helpers/processes.js';

export interface GatewayProcess {
  url: string;
  child: ChildProcess;
  output: () => string;
  /** What the process wrote to stdout alone (the JSON log). */
  stdout: () => string;
  /** SIGKILL: no graceful shutdown, in-flight work is simply lost. */
  kill(): Promise<void>;
  /** SIGTERM and wait for exit. */
  stop(): Promise<void>;
}

/**
 * Starts the compiled service (`npm start`) as an operator would, and waits until it listens. It
 * listens on a port the system picks (`PORT=0`, unless `env` names one) and the URL is read from its
 * `listening on` line: a port chosen beforehand could be taken by another test file in between.
 */
export async function startGatewayProcess(
  env: Record<string, string>,
  timeoutMs = 60_000,
): Promise<GatewayProcess> {
  const child = spawn(process.execPath, [MAIN], {
    cwd: ROOT,
    env: {
      ...process.env,
      HOST: '127.0.0.1',
      PORT: '0',
      LOG_LEVEL: 'info',
      DEMO_SEED: 'false',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  let stdout = '';
  child.stdout!.on('data', (d: Buffer) => {
    output += d.toString();
    stdout += d.toString();
  });
  child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`gateway did not start within ${timeoutMs} ms:\n${output}`)),
      timeoutMs,
    );
    const check = () => {
      if (/tidegate listening on/.test(output)) {
        clearTimeout(timer);
        // The demo banner goes to stderr before this line goes to stdout (pipes are written
        // synchronously on Linux), but the two pipes are read independently: one more turn of the
        // event loop reads what stderr already holds.
        setTimeout(resolve, 50);
      }
    };
    child.stdout!.on('data', check);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`gateway exited with ${code}:\n${output}`));
    });
  });
  return {
    url: listeningUrl(output)!,
    child,
    output: () => output,
    stdout: () => stdout,
    async kill() {
      child.kill('SIGKILL');
      await exited;
    },
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

/** Reads the demo accounts and API keys a gateway prints once when it seeds an empty database. */
export function demoKeys(output: string): Record<string, { accountId: string; key: string }> {
  const keys: Record<string, { accountId: string; key: string }> = {};
  for (const match of output.matchAll(/^\s+(\w+)\s+account (\S+)\s+API key (tg_\S+)/gm))
    keys[match[1]!.toUpperCase()] = { accountId: match[2]!, key: match[3]! };
  return keys;
}

/**
 * The same, from the credentials of a seeded copy (test/helpers/db.ts, createSeededTestDatabase):
 * for processes started on a database that already holds the demo, which print no banner.
 */
export function keysOf(demo: DemoCredentials): Record<string, { accountId: string; key: string }> {
  return Object.fromEntries(demo.accounts.map((a) => [a.plan, { accountId: a.accountId, key: a.apiKey }]));
}
