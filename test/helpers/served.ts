/**
 * What `read` gives once `done` holds, or the last reading when `boundMs` has passed (0: the first
 * reading). For changes another process, or a connection of the test, makes on PostgreSQL: a
 * gateway serves them once the version's notice arrives (src/db/versions.ts), not on the very next
 * request; the caller asserts on the value returned.
 */
export async function servedWithin<T>(
  read: () => T | Promise<T>,
  done: (value: T) => boolean,
  boundMs: number,
): Promise<T> {
  const deadline = Date.now() + boundMs;
  for (;;) {
    const value = await read();
    if (done(value) || Date.now() >= deadline) return value;
    await new Promise((r) => setTimeout(r, 10));
  }
}

/**
 * How long a gateway on PostgreSQL may serve data from before a change it did not write: a
 * notice's latency on loopback is milliseconds (test/db/versions.test.ts); the rest is slack for
 * a loaded machine.
 */
export const NOTICE_BOUND_MS = 2_000;

/**
 * How long a gateway may serve data from before a change that did not come through its own pipeline
 * (raw SQL, the CLI, another process): on SQLite the poll's POLL_MS (src/db/versions.ts), on
 * PostgreSQL the notice's latency; both with slack for a loaded machine. A write through the
 * gateway's pipeline is served to its caller on the next request.
 */
export function otherWriterBoundMs(dialect: 'sqlite' | 'postgresql'): number {
  return dialect === 'sqlite' ? 500 : NOTICE_BOUND_MS;
}
