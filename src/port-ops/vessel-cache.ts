import type { EntityManager } from '@mikro-orm/core';
import type {} from '../gateway/schema/context.js';
import type { Clock } from '../kernel/clock.js';
import { Lru } from '../kernel/lru.js';
import { Vessel } from './entities.js';

/**
 * Vessels are shared reference data read on nearly every dashboard and lookup and written a few
 * times a day (admin mutation, `tidegate vessels add`). Lookups by IMO are served from a per-process
 * cache of detached snapshots for up to VESSEL_CACHE_TTL_MS; unknown IMOs are cached too (as null),
 * so a register added from another process becomes visible within that time. A vessel created
 * through this process is visible at once.
 */
export const VESSEL_CACHE_TTL_MS = 60_000;
const MAX_ENTRIES = 20_000;

/** A detached copy: cached values must not hold on to (or be changed through) a request's EntityManager. */
function snapshot(vessel: Vessel): Vessel {
  const copy = Object.create(Vessel.prototype) as Vessel;
  Object.assign(copy, {
    id: vessel.id,
    imo: vessel.imo,
    name: vessel.name,
    flag: vessel.flag,
    type: vessel.type,
    grossTonnage: vessel.grossTonnage,
    deadweight: vessel.deadweight,
    yearBuilt: vessel.yearBuilt,
    createdAt: vessel.createdAt,
  });
  return copy;
}

declare module '../gateway/schema/context.js' {
  interface AppServices {
    /** Vessels by IMO (made by the composition root, one per app). */
    vessels: VesselCache;
  }
}

export class VesselCache {
  private readonly cache: Lru<string, Vessel | null>;

  constructor(clock: Clock) {
    this.cache = new Lru({ maxEntries: MAX_ENTRIES, ttlMs: VESSEL_CACHE_TTL_MS, clock });
  }

  /**
   * The vessel with this (already validated) IMO, or null. `em` is asked for only on a miss: a
   * request's EntityManager is forked lazily, and a cache hit should not pay for the fork. A hit is
   * returned synchronously, so a lookup served from the cache executes without a promise.
   */
  find(em: () => EntityManager, imo: string): Vessel | null | Promise<Vessel | null> {
    const hit = this.cache.get(imo);
    if (hit !== undefined) return hit;
    return this.cache.getOrLoad(imo, async () => {
      const vessel = await em().findOne(Vessel, { imo });
      return vessel ? snapshot(vessel) : null;
    });
  }

  /** Called after a vessel is written through this process. */
  forget(imo: string): void {
    this.cache.delete(imo);
  }
}
