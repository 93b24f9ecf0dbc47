import type { CounterStore } from '../kernel/counters.js';
import { sha256Hex } from '../kernel/crypto.js';

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
    /** The same counters as the rate limiter: in Redis when configured, else in this process. */
    private readonly store: CounterStore,
    private readonly limits: ThrottleLimits,
  ) {}

  /** The subject is hashed: it is caller-chosen text of any length, and keys live in memory or Redis. */
  private keys(ip: string, subject: string): [string, string] {
    return [`${this.name}:ip:${ip}`, `${this.name}:pair:${ip}|${sha256Hex(subject)}`];
  }

  /** Seconds until this IP may try this subject again; 0 when it may now. */
  async retryAfter(ip: string, subject: string): Promise<number> {
    const [byIp, byPair] = this.keys(ip, subject);
    const waits = await Promise.all([
      this.blockedFor(byIp, this.limits.perIp),
      this.blockedFor(byPair, this.limits.perSubject),
    ]);
    const ms = Math.max(...waits);
    return ms <= 0 ? 0 : Math.max(1, Math.ceil(ms / 1000));
  }

  /** Failures count in windows that start at a key's first failure. */
  async fail(ip: string, subject: string): Promise<void> {
    await Promise.all(this.keys(ip, subject).map((key) => this.store.increment(key, this.limits.windowMs)));
  }

  /** Milliseconds until the key leaves its window when it is at or over `max`; 0 otherwise. */
  private async blockedFor(key: string, max: number): Promise<number> {
    return (await this.store.get(key)) >= max ? this.store.remaining(key) : 0;
  }
}
