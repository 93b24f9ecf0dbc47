import type { EntityClass } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/knex';
import type { ReadModelVersions } from '../db/versions.js';
import { preparedIn } from '../db/prepared.js';
import type { GatewayContext } from '../gateway/schema/context.js';
import { andThen, type MaybePromise } from '../kernel/maybe-async.js';
import { Port, Vessel } from './entities.js';

/*
 * Vessels and ports by id, for the relations every port call has (`PortCall.vessel`, `.port`,
 * `.vesselImo`, `.portLocode`). They are shared reference data, read by nearly every list of calls
 * and written a few times a day, so a process keeps the rows it has read for one version of the
 * `port-ops` row of `read_model_versions`, which database triggers move whenever a vessel or port
 * is written, by anyone (src/db/README.md, version rows). A request reads that version once
 * (PostgreSQL: from memory; SQLite: two probes of the connection while nothing changed), and a row
 * kept for it is answered at once, without a statement or a promise; a row not yet kept is loaded by
 * the request's DataLoader batch and kept for the version read before the batch ran. A row kept this
 * way can be newer than its version, never older, as with kept answers.
 */

/** Rows kept per version at most; past it the next version read starts afresh. */
const MAX_ROWS = 50_000;
const VERSION_NAMES = ['port-ops', 'port-ops'] as const;

/** The rows kept for one version of the reference data. */
class Snapshot {
  readonly vessels = new Map<string, Vessel>();
  readonly ports = new Map<string, Port>();
  constructor(readonly version: string) {}
  get size(): number {
    return this.vessels.size + this.ports.size;
  }
}

declare module '../gateway/schema/context.js' {
  interface AppServices {
    /** Vessels and ports by id for the version of the data a request reads (one per app). */
    referenceRows: ReferenceRows;
  }
}

export class ReferenceRows {
  private current: Snapshot | undefined;

  constructor(private readonly versions: ReadModelVersions) {}

  /** The rows kept for the version of the data as it stands now. */
  snapshot(): MaybePromise<Snapshot> {
    return andThen(this.versions.read(VERSION_NAMES), (version) => {
      const current = this.current;
      if (current && current.version === version && current.size < MAX_ROWS) return current;
      return (this.current = new Snapshot(version));
    });
  }
}

/** One version read per request: the snapshot its loads are answered from. */
function requestSnapshot(ctx: GatewayContext): MaybePromise<Snapshot> {
  return ctx.loaders.once('port-ops.reference', () => ctx.services.referenceRows.snapshot());
}

function byId<T extends Vessel | Port>(
  ctx: GatewayContext,
  entity: EntityClass<T>,
  kept: (snapshot: Snapshot) => Map<string, T>,
  id: string,
): MaybePromise<T> {
  return andThen(requestSnapshot(ctx), (snapshot) => {
    const row = kept(snapshot).get(id);
    if (row) return row;
    return ctx.loaders
      .get<string, T>(
        `port-ops.reference.${entity.name}`,
        async (em: EntityManager, ids) => {
          const rows = await preparedIn(em, entity, 'id', ids);
          const map = kept(snapshot);
          for (const r of rows) map.set(r.id, r);
          return ids.map((key) => map.get(key) ?? new Error(`${entity.name} ${key} vanished`));
        },
        { prepared: true },
      )
      .load(id);
  });
}

export const loadVessel = (ctx: GatewayContext, id: string): MaybePromise<Vessel> =>
  byId(ctx, Vessel, (s) => s.vessels, id);
export const loadPort = (ctx: GatewayContext, id: string): MaybePromise<Port> =>
  byId(ctx, Port, (s) => s.ports, id);
