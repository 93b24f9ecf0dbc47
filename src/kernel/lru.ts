import type { Clock } from './clock.js';

/** Why an entry left the cache by itself (`delete` and `clear` call no one). */
export type EvictionReason = 'capacity' | 'expired';

export interface LruOptions<K, V> {
  /** Most entries kept; the least recently used goes first. */
  maxEntries?: number;
  /**
   * Most bytes kept, an entry's size given to `set` (or measured by `sizeOf`). An entry larger
   * than the whole bound is refused.
   */
  maxBytes?: number;
  /** An entry's size when `set` is given none (only read with `maxBytes`). */
  sizeOf?: (value: V, key: K) => number;
  /** An entry expires this long after it was set (unless `set` gives its own), by `clock`. */
  ttlMs?: number;
  /** Required with a time-to-live (here or per entry): the injected clock (tests move a ManualClock). */
  clock?: Clock;
  /** Told of every entry dropped for room or expiry. */
  onEvict?: (key: K, value: V, reason: EvictionReason) => void;
}

export interface LruStats {
  hits: number;
  misses: number;
  /** Dropped for room (entry or byte bound). */
  evictions: number;
  /** Found past their time-to-live. */
  expirations: number;
}

interface Entry<V> {
  value: V;
  /** `placed` when the entry was last put at the newest end. */
  stamp: number;
  bytes: number;
  /** Epoch ms after which the entry is gone; Infinity without a TTL. */
  expires: number;
}

/**
 * The one bounded map behind every cache: an entry bound, a byte bound or both, an optional
 * time-to-live read from the injected Clock. get, set and delete are O(1) (a Map in recency
 * order, oldest first; eviction takes the first key).
 *
 * Recency is nearly exact, for the caches read on every request (prepared operations, kept
 * answers): a hit moves its key to the newest end only when the key has fallen into the older
 * half, i.e. when at least half the map's size of moves and insertions happened since it was last
 * placed. A hot key therefore stays put instead of costing a delete and an insert of its (often
 * long) key on every hit. A key in the newer half still has at least half the map to age through
 * before it is the oldest, and a hit once it is in the older half moves it again, so a key used
 * that often is never the one dropped.
 */
export class Lru<K, V> {
  private readonly entries = new Map<K, Entry<V>>();
  private readonly maxEntries: number;
  private readonly maxBytes: number;
  private readonly ttlMs: number | undefined;
  private readonly clock: Clock | undefined;
  private readonly sizeOf: ((value: V, key: K) => number) | undefined;
  private readonly onEvict: ((key: K, value: V, reason: EvictionReason) => void) | undefined;
  /** Counts placements (inserts and moves): an entry's stamp is this count when it was placed. */
  private placed = 0;
  private totalBytes = 0;
  /** Loads in flight for `getOrLoad`, made on first use. */
  private loading: Map<K, Promise<V>> | undefined;
  readonly stats: LruStats = { hits: 0, misses: 0, evictions: 0, expirations: 0 };

  constructor(options: LruOptions<K, V>) {
    const { maxEntries, maxBytes, ttlMs } = options;
    if (maxEntries === undefined && maxBytes === undefined)
      throw new Error('Lru: give maxEntries, maxBytes or both');
    for (const [name, value] of Object.entries({ maxEntries, maxBytes, ttlMs }))
      if (value !== undefined && !(value > 0)) throw new Error(`Lru: ${name} must be greater than 0`);
    if (ttlMs !== undefined && !options.clock) throw new Error('Lru: ttlMs needs a clock');
    this.maxEntries = maxEntries ?? Infinity;
    this.maxBytes = maxBytes ?? Infinity;
    this.ttlMs = ttlMs;
    this.clock = options.clock;
    this.sizeOf = options.sizeOf;
    this.onEvict = options.onEvict;
  }

  /** Entries held (expired ones not yet met included). */
  get size(): number {
    return this.entries.size;
  }

  /** The sum of the held entries' sizes. */
  get bytes(): number {
    return this.totalBytes;
  }

  /** The value, marking the key used; undefined when absent or expired. */
  get(key: K): V | undefined {
    const entry = this.entries.get(key);
    if (entry === undefined) {
      this.stats.misses++;
      return undefined;
    }
    if (entry.expires !== Infinity && entry.expires <= this.clock!.now().getTime()) {
      this.expire(key, entry);
      this.stats.misses++;
      return undefined;
    }
    this.stats.hits++;
    if (this.placed - entry.stamp >= this.entries.size / 2) {
      this.entries.delete(key);
      entry.stamp = ++this.placed;
      this.entries.set(key, entry);
    }
    return entry.value;
  }

  /** Whether a live entry is held, without marking it used or counting a hit or miss. */
  has(key: K): boolean {
    const entry = this.entries.get(key);
    if (entry === undefined) return false;
    if (entry.expires !== Infinity && entry.expires <= this.clock!.now().getTime()) {
      this.expire(key, entry);
      return false;
    }
    return true;
  }

  /** The live value, without marking it used or counting a hit or miss. */
  peek(key: K): V | undefined {
    return this.has(key) ? this.entries.get(key)!.value : undefined;
  }

  /**
   * Stores the value as the newest, then drops the least recently used until both bounds hold.
   * `bytes` is its size (else `sizeOf`'s, else 0); `ttlMs` its own time-to-live (else the
   * cache's). Returns false, keeping nothing for the key, when its size alone exceeds the byte bound.
   */
  set(key: K, value: V, bytes?: number, ttlMs: number | undefined = this.ttlMs): boolean {
    const size = bytes ?? (this.sizeOf !== undefined ? this.sizeOf(value, key) : 0);
    const previous = this.entries.get(key);
    if (previous !== undefined) {
      this.entries.delete(key);
      this.totalBytes -= previous.bytes;
    }
    if (size > this.maxBytes) return false;
    if (ttlMs !== undefined && this.clock === undefined) throw new Error('Lru: a time-to-live needs a clock');
    const expires = ttlMs === undefined ? Infinity : this.clock!.now().getTime() + ttlMs;
    this.entries.set(key, { value, stamp: ++this.placed, bytes: size, expires });
    this.totalBytes += size;
    while (this.entries.size > this.maxEntries || this.totalBytes > this.maxBytes) this.evictOldest();
    return true;
  }

  /** Removes the key; true when it was held. */
  delete(key: K): boolean {
    const entry = this.entries.get(key);
    if (entry === undefined) return false;
    this.entries.delete(key);
    this.totalBytes -= entry.bytes;
    return true;
  }

  /** Removes every entry whose value (or key) matches; for invalidation by something other than the key. */
  deleteWhere(matches: (value: V, key: K) => boolean): number {
    let removed = 0;
    for (const [key, entry] of this.entries) {
      if (!matches(entry.value, key)) continue;
      this.entries.delete(key);
      this.totalBytes -= entry.bytes;
      removed++;
    }
    return removed;
  }

  /** The held keys, least recently used first (expired ones not yet met included). */
  keys(): MapIterator<K> {
    return this.entries.keys();
  }

  clear(): void {
    this.entries.clear();
    this.totalBytes = 0;
  }

  /**
   * The held value, or the result of `load`, then held (null and undefined results included).
   * Concurrent misses for one key share one load; a failed load is not held.
   */
  getOrLoad(key: K, load: () => Promise<V>): Promise<V> {
    if (this.has(key)) return Promise.resolve(this.get(key) as V);
    this.loading ??= new Map();
    let pending = this.loading.get(key);
    if (pending === undefined) {
      const loading = this.loading;
      pending = load().then(
        (value) => {
          loading.delete(key);
          this.set(key, value);
          return value;
        },
        (error: unknown) => {
          loading.delete(key);
          throw error;
        },
      );
      loading.set(key, pending);
    }
    return pending;
  }

  private evictOldest(): void {
    const oldest = this.entries.entries().next();
    if (oldest.done) return;
    const [key, entry] = oldest.value;
    this.entries.delete(key);
    this.totalBytes -= entry.bytes;
    this.stats.evictions++;
    this.onEvict?.(key, entry.value, 'capacity');
  }

  private expire(key: K, entry: Entry<V>): void {
    this.entries.delete(key);
    this.totalBytes -= entry.bytes;
    this.stats.expirations++;
    this.onEvict?.(key, entry.value, 'expired');
  }
}
