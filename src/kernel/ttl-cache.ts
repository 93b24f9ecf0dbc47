import type { Clock } from './clock.js';

/**
 * A small bounded cache with a time-to-live, for reference data read far more often than it
 * changes (vessels by IMO, verified credentials). Concurrent misses for one key share a load.
 */
export class TtlCache<K, V> {
  private readonly entries = new Map<K, { value: V; until: number }>();
  private readonly loading = new Map<K, Promise<V>>();

  constructor(
    private readonly ttlMs: number,
    private readonly maxEntries: number,
    private readonly clock: Clock,
  ) {}

  get(key: K): V | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    if (entry.until <= this.clock.now().getTime()) {
      this.entries.delete(key);
      return undefined;
    }
    return entry.value;
  }

  set(key: K, value: V): void {
    if (this.entries.size >= this.maxEntries && !this.entries.has(key)) {
      const oldest = this.entries.keys().next();
      if (!oldest.done) this.entries.delete(oldest.value);
    }
    this.entries.set(key, { value, until: this.clock.now().getTime() + this.ttlMs });
  }

  delete(key: K): void {
    this.entries.delete(key);
  }

  clear(): void {
    this.entries.clear();
  }

  /** The cached value, or the result of `load` (cached, including null results). */
  async getOrLoad(key: K, load: () => Promise<V>): Promise<V> {
    const entry = this.entries.get(key);
    if (entry && entry.until > this.clock.now().getTime()) return entry.value;
    let pending = this.loading.get(key);
    if (!pending) {
      pending = load().then(
        (value) => {
          this.loading.delete(key);
          this.set(key, value);
          return value;
        },
        (error: unknown) => {
          this.loading.delete(key);
          throw error;
        },
      );
      this.loading.set(key, pending);
    }
    return pending;
  }
}
