import type { Redis } from 'ioredis';
import { fastFailingRedis } from '../gateway/limits.js';
import { MINUTE, type Clock } from '../kernel/clock.js';
import { sha256Hex } from '../kernel/crypto.js';

const MAX_TRACKED = 100_000;

/** Failure counters in fixed windows that start at a key's first failure. */
export interface FailureStore {
  /** Milliseconds until every key at or over its limit leaves its window; 0 when none is. */
  blockedFor(limits: ReadonlyArray<{ key: string; max: number }>): Promise<number>;
  /** Counts one failure against each key. */
  fail(keys: readonly string[], windowMs: number): Promise<void>;
  close(): Promise<void>;
}

/** In this process only: N processes allow N times the failures (see README, Abuse). */
export class MemoryFailureStore implements FailureStore {
  private readonly failures = new Map<string, { count: number; windowEnd: number }>();

  constructor(private readonly clock: Clock) {}

  async blockedFor(limits: ReadonlyArray<{ key: string; max: number }>): Promise<number> {
    const now = this.clock.now().getTime();
    let until = now;
    for (const { key, max } of limits) {
      const entry = this.failures.get(key);
      if (entry && entry.windowEnd > now && entry.count >= max) until = Math.max(until, entry.windowEnd);
    }
    return until - now;
  }

  async fail(keys: readonly string[], windowMs: number): Promise<void> {
    const now = this.clock.now().getTime();
    if (this.failures.size > MAX_TRACKED) this.prune(now);
    for (const key of keys) {
      const entry = this.failures.get(key);
      if (entry && entry.windowEnd > now) entry.count += 1;
      else this.failures.set(key, { count: 1, windowEnd: now + windowMs });
    }
  }

  async close(): Promise<void> {}

  private prune(now: number): void {
    for (const [key, entry] of this.failures) if (entry.windowEnd <= now) this.failures.delete(key);
    // Under a flood of distinct keys, forgetting beats running out of memory.
    if (this.failures.size > MAX_TRACKED) this.failures.clear();
  }
}

const BLOCKED_FOR_SCRIPT = `
local wait = 0
for i, key in ipairs(KEYS) do
  local count = tonumber(redis.call('GET', key) or '0')
  if count >= tonumber(ARGV[i]) then
    local ttl = redis.call('PTTL', key)
    if ttl > wait then wait = ttl end
  end
end
return wait`;

const FAIL_SCRIPT = `
for _, key in ipairs(KEYS) do
  if redis.call('INCR', key) == 1 then redis.call('PEXPIRE', key, ARGV[1]) end
end
return 0`;

/**
 * Shared by every process on one Redis (REDIS_URL), so running more processes does not multiply
 * the failures an attacker may try. Windows follow Redis's clock, not the injected one.
 * Configured like the rate limiter's store (src/gateway/limits.ts): commands fail after
 * `commandTimeoutMs` or at once while disconnected, and ResilientFailureStore counts locally then.
 */
export class RedisFailureStore implements FailureStore {
  private readonly redis: Redis;

  constructor(
    url: string,
    private readonly prefix: string,
    commandTimeoutMs = 500,
  ) {
    this.redis = fastFailingRedis(url, commandTimeoutMs);
  }

  /** Connects; a server whose REDIS_URL does not answer at start refuses to start. */
  async connect(): Promise<void> {
    await this.redis.connect();
  }

  async blockedFor(limits: ReadonlyArray<{ key: string; max: number }>): Promise<number> {
    const keys = limits.map((l) => this.prefix + l.key);
    const maxes = limits.map((l) => String(l.max));
    return Number(await this.redis.eval(BLOCKED_FOR_SCRIPT, keys.length, ...keys, ...maxes));
  }

  async fail(keys: readonly string[], windowMs: number): Promise<void> {
    const prefixed = keys.map((k) => this.prefix + k);
    await this.redis.eval(FAIL_SCRIPT, prefixed.length, ...prefixed, String(windowMs));
  }

  async close(): Promise<void> {
    await this.redis.quit().catch(() => this.redis.disconnect());
  }
}

/**
 * The shared store first; when it fails or does not answer in time, this process's own counters
 * (as the rate limiter does). A Redis outage then loosens the throttle to per-process counts
 * instead of failing sign-ins and token requests; it is reported at most once a minute.
 */
export class ResilientFailureStore implements FailureStore {
  private lastReported = 0;

  constructor(
    private readonly primary: FailureStore,
    private readonly fallback: FailureStore,
    private readonly clock: Clock,
    private readonly report: (error: unknown) => void,
  ) {}

  async blockedFor(limits: ReadonlyArray<{ key: string; max: number }>): Promise<number> {
    try {
      return await this.primary.blockedFor(limits);
    } catch (e) {
      this.reported(e);
      return this.fallback.blockedFor(limits);
    }
  }

  async fail(keys: readonly string[], windowMs: number): Promise<void> {
    try {
      await this.primary.fail(keys, windowMs);
    } catch (e) {
      this.reported(e);
      await this.fallback.fail(keys, windowMs);
    }
  }

  private reported(error: unknown): void {
    const now = this.clock.now().getTime();
    if (now - this.lastReported >= MINUTE) {
      this.lastReported = now;
      this.report(error);
    }
  }

  async close(): Promise<void> {
    await Promise.all([this.primary.close(), this.fallback.close()]);
  }
}

interface ThrottleLimits {
  /** Failures allowed per source IP and subject (email or client_id) within the window. */
  perSubject: number;
  /** Failures allowed per source IP, whatever the subject (spraying many emails or clients). */
  perIp: number;
  windowMs: number;
}

/**
 * Counts failed credentials (wrong passwords, wrong client secrets) per source IP and per
 * (IP, subject) pair — never per subject alone: a counter anyone can bump for an email or a
 * client_id (which is public) would let an attacker lock the real owner out from elsewhere.
 * Only failures count, so a caller is never slowed by its own successful requests.
 */
export class FailureThrottle {
  constructor(
    private readonly name: string,
    private readonly store: FailureStore,
    private readonly limits: ThrottleLimits,
  ) {}

  /** The subject is hashed: it is caller-chosen text of any length, and keys live in memory or Redis. */
  private keys(ip: string, subject: string): [string, string] {
    return [`${this.name}:ip:${ip}`, `${this.name}:pair:${ip}|${sha256Hex(subject)}`];
  }

  /** Seconds until this IP may try this subject again; 0 when it may now. */
  async retryAfter(ip: string, subject: string): Promise<number> {
    const [byIp, byPair] = this.keys(ip, subject);
    const ms = await this.store.blockedFor([
      { key: byIp, max: this.limits.perIp },
      { key: byPair, max: this.limits.perSubject },
    ]);
    return ms <= 0 ? 0 : Math.max(1, Math.ceil(ms / 1000));
  }

  fail(ip: string, subject: string): Promise<void> {
    return this.store.fail(this.keys(ip, subject), this.limits.windowMs);
  }
}
