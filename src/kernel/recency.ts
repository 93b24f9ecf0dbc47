/**
 * A Map in nearly least-recently-used order, oldest first, for caches read on every request (the
 * prepared operations, the kept answers).
 *
 * A hit moves its key to the newest end only when the key has fallen into the older half: when more
 * than half the map's size of moves and insertions happened since it was last moved or inserted.
 * A hot key therefore stays where it is instead of costing a delete and an insert of its (often
 * long) key on every hit. What this gives up: a hit on a key in the newer half is not recorded. Such
 * a key still has at least half the map to age through before it is the oldest, and a hit once it
 * is in the older half moves it again, so a key used that often is never the one dropped.
 */
export class RecencyMap<V> {
  private readonly entries = new Map<string, { value: V; stamp: number }>();
  /** Counts moves and insertions: a key's stamp is this count when it was last placed newest. */
  private clock = 0;

  get size(): number {
    return this.entries.size;
  }

  /** The value, marking the key used. */
  get(key: string): V | undefined {
    const entry = this.entries.get(key);
    if (entry === undefined) return undefined;
    if (this.clock - entry.stamp >= this.entries.size / 2) {
      this.entries.delete(key);
      entry.stamp = ++this.clock;
      this.entries.set(key, entry);
    }
    return entry.value;
  }

  /** Stores the value as the newest. */
  set(key: string, value: V): void {
    this.entries.delete(key);
    this.entries.set(key, { value, stamp: ++this.clock });
  }

  /** The value the key held, removed. */
  delete(key: string): V | undefined {
    const entry = this.entries.get(key);
    if (entry === undefined) return undefined;
    this.entries.delete(key);
    return entry.value;
  }

  /** The least recently used key and its value, removed; undefined when empty. */
  shift(): [string, V] | undefined {
    const oldest = this.entries.entries().next();
    if (oldest.done) return undefined;
    this.entries.delete(oldest.value[0]);
    return [oldest.value[0], oldest.value[1].value];
  }
}
