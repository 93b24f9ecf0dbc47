import type { Clock } from '../kernel/clock.js';

const MAX_TRACKED = 100_000;

/**
 * Counts failures (wrong passwords, wrong client secrets) per key in a fixed window. Only
 * failures count, so a legitimate caller is never slowed by its own successful requests.
 * In-memory: each process throttles on its own, which bounds guessing per process.
 */
export class FailureThrottle {
  private readonly failures = new Map<string, { count: number; windowEnd: number }>();

  constructor(
    private readonly clock: Clock,
    private readonly maxFailures: number,
    private readonly windowMs: number,
  ) {}

  /** Seconds until every key may try again; 0 when none is blocked. */
  retryAfter(keys: string[]): number {
    const now = this.clock.now().getTime();
    let until = 0;
    for (const key of keys) {
      const entry = this.failures.get(key);
      if (entry && entry.windowEnd > now && entry.count >= this.maxFailures)
        until = Math.max(until, entry.windowEnd);
    }
    return until === 0 ? 0 : Math.max(1, Math.ceil((until - now) / 1000));
  }

  fail(keys: string[]): void {
    const now = this.clock.now().getTime();
    if (this.failures.size > MAX_TRACKED) this.prune(now);
    for (const key of keys) {
      const entry = this.failures.get(key);
      if (entry && entry.windowEnd > now) entry.count += 1;
      else this.failures.set(key, { count: 1, windowEnd: now + this.windowMs });
    }
  }

  private prune(now: number): void {
    for (const [key, entry] of this.failures) if (entry.windowEnd <= now) this.failures.delete(key);
    // Under a flood of distinct keys, forgetting beats running out of memory.
    if (this.failures.size > MAX_TRACKED) this.failures.clear();
  }
}
