import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { waitFor } from './wait.js';

/*
 * Tests that need a real process (signals, the request log on stdout, SIGKILL, several gateways)
 * run the compiled service, as `npm start` and the `tidegate` bin do: `dist/` is what operators
 * run, and a process started from it needs no TypeScript loader (tsx transpiles every module of
 * `src/` on a start, seconds on a loaded machine). `ensureBuilt()` (the global setup) rebuilds
 * `dist/` when the sources changed since it was built, so a test never runs yesterday's build.
 */

export const ROOT = join(import.meta.dirname, '..', '..');
/** The service's entry point, compiled (`npm start`). */
export const MAIN = join(ROOT, 'dist', 'src', 'main.js');
/** The operator CLI (`tidegate`), which runs the compiled CLI. */
export const CLI = join(ROOT, 'src', 'bin', 'tidegate.mjs');

/**
 * Builds `dist/` (`npm run build`) when it is missing or was built from other sources than these
 * (`src/bin/build-stamp.mjs --check` compares a digest of them with the one the build wrote).
 */
export function ensureBuilt(): void {
  try {
    execFileSync(process.execPath, [join(ROOT, 'src', 'bin', 'build-stamp.mjs'), '--check']);
    return;
  } catch {
    process.stderr.write('dist/ was built from other sources (or is missing): npm run build\n');
  }
  execFileSync('npm', ['run', 'build'], { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] });
}

/** The address a server process printed in its `… listening on <url>` log line, once it has. */
export function listeningUrl(output: string): string | undefined {
  return /listening on (http:\/\/[^\s"]+)/.exec(output)?.[1];
}

export interface ListeningProcess {
  child: ChildProcess;
  /** Where it listens, from its `listening on` line. */
  url: string;
  /** Everything it wrote so far, stdout and stderr. */
  output: () => string;
  /** SIGTERM (when still running) and wait for the exit. */
  stop(): Promise<void>;
}

/**
 * Runs `node <args>` (the compiled service or the CLI's `serve`) on a port the system picks
 * (`PORT=0`) with the log at info level, and waits for its `listening on` line.
 */
export async function startListening(
  args: string[],
  env: Record<string, string>,
  timeoutMs = 60_000,
): Promise<ListeningProcess> {
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    env: { ...process.env, HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  const exited = new Promise<void>((r) => child.once('exit', () => r()));
  const url = await waitFor(
    () => (child.exitCode !== null ? 'exited' : listeningUrl(output)),
    (found) => found !== undefined,
    { timeoutMs, what: () => `${args.join(' ')} to listen:\n${output}` },
  );
  if (url === 'exited') throw new Error(`${args.join(' ')} exited with ${child.exitCode}:\n${output}`);
  return {
    child,
    url: url!,
    output: () => output,
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}
