import { Redis } from 'ioredis';
import { MINUTE, type Clock } from './clock.js';
import type { MaybePromise } from './maybe-async.js';

/**
 * Counters with expiry, in this process or shared by every process on one Redis: the one store
 * behind the rate limiter (src/gateway/pipeline/limits.ts) and the sign-in and client-authentication
 * throttles (src/auth/throttle.ts).
 */

/** Atomic counter with expiry: `increment` returns the value after incrementing. */
export interface CounterStore {
  /** Starts the key's window (`ttlMs`) on its first increment. */
  increment(key: string, ttlMs: number): MaybePromise<number>;
  /** The current value (0 when absent or expired), without changing it. */
  get(key: string): MaybePromise<number>;
  /** Milliseconds until the key's window ends (0 when absent or expired). */
  remaining(key: string): MaybePromise<number>;
  close(): Promise<void>;
}

/** Keys tracked in memory before the expired ones are swept; past it, under a flood of distinct keys, forgetting beats running out of memory. */
const MAX_TRACKED = 100_000;

export class MemoryCounterStore implements CounterStore {
  private readonly counters = new Map<string, { count: number; expiresAt: number }>();
  private calls = 0;

  constructor(private readonly clock: Clock) {}

  increment(key: string, ttlMs: number): number {
    const now = this.clock.now().getTime();
    // Window keys embed their window, so expired ones are never read again; sweep them now and then.
    if (++this.calls % 1000 === 0 || this.counters.size > MAX_TRACKED) this.sweep(now);
    const current = this.counters.get(key);
    if (!current || current.expiresAt <= now) {
      this.counters.set(key, { count: 1, expiresAt: now + ttlMs });
      return 1;
    }
    return ++current.count;
  }

  get(key: string): number {
    const current = this.counters.get(key);
    return current && current.expiresAt > this.clock.now().getTime() ? current.count : 0;
  }

  remaining(key: string): number {
    const current = this.counters.get(key);
    return current ? Math.max(0, current.expiresAt - this.clock.now().getTime()) : 0;
  }

  async close(): Promise<void> {}

  private sweep(now: number): void {
    for (const [k, v] of this.counters) if (v.expiresAt <= now) this.counters.delete(k);
    if (this.counters.size > MAX_TRACKED) this.counters.clear();
  }
}

const INCREMENT_SCRIPT = `
local count = redis.call('INCR', KEYS[1])
if count == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return count`;

/**
 * A Redis client for counters a request waits on: commands fail after `commandTimeoutMs`, or at
 * once while disconnected (no offline queue behind the reconnect), so the caller can fall back to
 * counting locally. Not connected yet: call `connect()`.
 */
export function fastFailingRedis(url: string, commandTimeoutMs: number): Redis {
  const redis = new Redis(url, {
    lazyConnect: true,
    maxRetriesPerRequest: 1,
    commandTimeout: commandTimeoutMs,
    enableOfflineQueue: false,
  });
  // Connection errors surface on the commands; ioredis would otherwise print each retry.
  redis.on('error', () => {});
  return redis;
}

/** INCR and PEXPIRE in one Lua script: atomic on the server, shared by every process. */
export class RedisCounterStore implements CounterStore {
  private readonly redis: Redis;

  constructor(
    url: string,
    private readonly prefix: string,
    /** A request waits at most this long for Redis (then ResilientCounterStore counts locally). */
    commandTimeoutMs = 500,
  ) {
    this.redis = fastFailingRedis(url, commandTimeoutMs);
  }

  /** Connects; a server whose REDIS_URL does not answer at start refuses to start. */
  async connect(): Promise<void> {
    await this.redis.connect();
  }

  async increment(key: string, ttlMs: number): Promise<number> {
    return Number(await this.redis.eval(INCREMENT_SCRIPT, 1, `${this.prefix}${key}`, String(ttlMs)));
  }

  async get(key: string): Promise<number> {
    return Number((await this.redis.get(`${this.prefix}${key}`)) ?? 0);
  }

  async remaining(key: string): Promise<number> {
    return Math.max(0, await this.redis.pttl(`${this.prefix}${key}`));
  }

  async close(): Promise<void> {
    await this.redis.quit().catch(() => this.redis.disconnect());
  }
}

/**
 * The shared store first; when it fails or does not answer in time, this process's own counters.
 * A Redis outage then loosens limits to per-process budgets instead of failing or stalling every
 * request; the outage is reported (at most once a minute) and healing needs nothing.
 */
export class ResilientCounterStore implements CounterStore {
  private lastReported = 0;

  constructor(
    private readonly primary: CounterStore,
    private readonly fallback: CounterStore,
    private readonly clock: Clock,
    private readonly report: (error: unknown) => void,
  ) {}

  async increment(key: string, ttlMs: number): Promise<number> {
    try {
      return await this.primary.increment(key, ttlMs);
    } catch (e) {
      return this.failOver(e, () => this.fallback.increment(key, ttlMs));
    }
  }

  async get(key: string): Promise<number> {
    try {
      return await this.primary.get(key);
    } catch (e) {
      return this.failOver(e, () => this.fallback.get(key));
    }
  }

  async remaining(key: string): Promise<number> {
    try {
      return await this.primary.remaining(key);
    } catch (e) {
      return this.failOver(e, () => this.fallback.remaining(key));
    }
  }

  private failOver(error: unknown, local: () => MaybePromise<number>): MaybePromise<number> {
    const now = this.clock.now().getTime();
    if (now - this.lastReported >= MINUTE) {
      this.lastReported = now;
      this.report(error);
    }
    return local();
  }

  async close(): Promise<void> {
    await Promise.all([this.primary.close(), this.fallback.close()]);
  }
}

/**
 * In Redis when `redisUrl` is set (one count across processes, falling back to this process's while
 * Redis does not answer), otherwise in this process. Connects before returning.
 */
export async function openCounterStore(options: {
  redisUrl?: string;
  prefix: string;
  clock: Clock;
  report: (error: unknown) => void;
}): Promise<CounterStore> {
  const local = new MemoryCounterStore(options.clock);
  if (!options.redisUrl) return local;
  const shared = new RedisCounterStore(options.redisUrl, options.prefix);
  await shared.connect();
  return new ResilientCounterStore(shared, local, options.clock, options.report);
}
