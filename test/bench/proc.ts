/**
 * CPU time of processes on this machine, from /proc (Linux; undefined elsewhere): the bench's
 * gateways and ceilings (`cpuTicks`), and a local PostgreSQL server as a whole (`serverTicks`).
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import pg from 'pg';

/** Clock ticks per second of /proc's CPU times (`getconf CLK_TCK`; 100 on Linux). */
export const CLOCK_TICKS = (() => {
  try {
    return Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
  } catch {
    return 100;
  }
})();

/**
 * A process's CPU time so far (user + system, all its threads) in clock ticks, from /proc/<pid>/stat
 * (fields 14 and 15, counted after the parenthesised command name); undefined elsewhere. On a shared
 * machine the load generator takes CPU from the server: req/s move with it, a request's CPU much less.
 */
export function cpuTicks(pid: number | undefined): number | undefined {
  const fields = pid === undefined ? undefined : procStat(pid);
  return fields && Number(fields[11]) + Number(fields[12]);
}

/**
 * The CPU time so far of a process's main thread alone (the thread whose id is the pid: in Node, the
 * event loop, where every request's JavaScript runs), in clock ticks; undefined elsewhere. The rest
 * of `cpuTicks` is V8's garbage-collection helpers, SQLite's checkpoint worker and libuv's pool,
 * which run beside it: while the loop is busy nearly all the time, its share is what bounds req/s.
 */
export function mainThreadTicks(pid: number | undefined): number | undefined {
  const fields = pid === undefined ? undefined : procStat(`${pid}/task/${pid}`);
  return fields && Number(fields[11]) + Number(fields[12]);
}

/**
 * The fields of /proc/<pid>/stat (`entry` a pid, or a thread's `<pid>/task/<tid>`) from the state on
 * (index 0 is field 3), or undefined.
 */
export function procStat(entry: number | string): string[] | undefined {
  try {
    const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  } catch {
    return undefined;
  }
}

/**
 * A local PostgreSQL server's CPU time so far in clock ticks: the postmaster's own and that of the
 * children it has reaped (fields 14–17: backends of closed connections, autovacuum workers), plus that
 * of its live children (backends, WAL writer, checkpointer). Every database on the server counts; the
 * bench's is the only one at work.
 */
export function serverTicks(postmaster: number | undefined): number | undefined {
  const own = postmaster === undefined ? undefined : procStat(postmaster);
  if (!own) return undefined;
  let ticks = Number(own[11]) + Number(own[12]) + Number(own[13]) + Number(own[14]);
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const fields = procStat(Number(entry));
    if (fields && Number(fields[1]) === postmaster) ticks += Number(fields[11]) + Number(fields[12]);
  }
  return ticks;
}

/**
 * The pid of the PostgreSQL server's postmaster when it runs on this machine (a loopback host whose
 * backend's /proc entry can be read): the parent of this connection's backend. Undefined otherwise.
 */
export async function localPostmaster(url: string): Promise<number | undefined> {
  if (!['127.0.0.1', 'localhost', '[::1]'].includes(new URL(url).hostname)) return undefined;
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    const { rows } = await client.query<{ pid: number }>('select pg_backend_pid() as pid');
    const parent = procStat(rows[0]!.pid)?.[1];
    return parent === undefined ? undefined : Number(parent);
  } catch {
    return undefined;
  } finally {
    await client.end();
  }
}
