import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';

const ROOT = join(import.meta.dirname, '..', '..');

/** A port nobody listens on right now (PORT=0 would work but the URL is then not printed up front). */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as AddressInfo;
  await new Promise((r) => server.close(r));
  return port;
}

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
 * Starts `node --import tsx src/main.ts` as an operator would, and waits until it listens. The free
 * port can be taken by another test file between `freePort` and the child's listen: that start is
 * tried again on a new port (a few times), any other failure is thrown at once.
 */
export async function startGatewayProcess(
  env: Record<string, string>,
  timeoutMs = 60_000,
): Promise<GatewayProcess> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await startGatewayOnce(env, timeoutMs);
    } catch (e) {
      if (attempt >= 3 || !String(e).includes('EADDRINUSE') || env.PORT !== undefined) throw e;
    }
  }
}

async function startGatewayOnce(env: Record<string, string>, timeoutMs: number): Promise<GatewayProcess> {
  const port = await freePort();
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/main.ts'], {
    cwd: ROOT,
    env: {
      ...process.env,
      HOST: '127.0.0.1',
      PORT: String(port),
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
      if (output.includes('tidegate listening on')) {
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
    url: `http://127.0.0.1:${port}`,
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
