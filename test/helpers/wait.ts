export interface WaitOptions<T> {
  /** How long the condition may take (default 10 s): past it the wait fails. */
  timeoutMs?: number;
  /** Pause between two probes (default 20 ms). */
  intervalMs?: number;
  /** What is awaited, for the failure message; a function is given the last value probed. */
  what?: string | ((last: T) => string);
}

/**
 * Probes until `done` holds for the probed value and returns that value; fails past the deadline.
 * Anything a test can observe (a row, a span, a status, a log line) is awaited this way rather
 * than by a fixed sleep, which is wasted time on a quiet machine and too short on a loaded one.
 */
export async function waitFor<T>(
  probe: () => T | Promise<T>,
  done: (value: T) => boolean,
  options: WaitOptions<T> = {},
): Promise<T> {
  const { timeoutMs = 10_000, intervalMs = 20, what = 'the condition' } = options;
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (done(value)) return value;
    if (Date.now() >= deadline) {
      const described = typeof what === 'function' ? what(value) : what;
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${described}`);
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
