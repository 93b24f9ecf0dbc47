import type { EntityManager } from '@mikro-orm/knex';
import { preparedIn } from '../db/prepared.js';
import type { ReadModelVersions } from '../db/versions.js';
import type { Page } from '../gateway/schema/connection.js';
import { andThen, type MaybePromise } from '../kernel/maybe-async.js';
import { isAdmin, type Principal } from '../kernel/principal.js';
import { PortCall, PortCallStatus, ServiceOrder, Vendor } from './entities.js';
import { ordersByCall } from './loaders.js';
import { portOpsVersionNames } from './answers.js';
import { versionParts, type ChangeLog } from './changes.js';

/*
 * The port-call read model: per account, every call of the account in (eta, id) order and its
 * vendors, kept for one version of the account's data (`port-ops:<account>` and `port-ops` in
 * `read_model_versions`, which the database's triggers move in every transaction that writes a
 * call, an order, a status change, a vendor, a vessel or a port), with the service orders of the
 * calls its lists have shown (oldest first), read the first time a list shows them. A list of calls
 * is then filtered, ordered and paged in memory, and its orders and vendors answered from the same
 * rows: no statement, no round trip, no row made by the driver.
 *
 * - Built on the second read of a version, not the first: a tenant that writes between every two
 *   reads keeps reading pages by statement, one that reads a version twice or more reads it from
 *   memory after the first. When the version moves under a model that served more than one read,
 *   the next model is built on the first read of the new version: such a tenant reads more than it
 *   writes.
 * - Carried over a move: when the version moves under a kept model and the log of what the moves
 *   changed (changes.ts) names the calls they changed and nothing that could change a list, the next
 *   model is the kept one with those calls read again (one statement) and their orders left to be
 *   read when next shown; everything else it holds is what the moves left as it was. A move the log
 *   cannot vouch for (a call added, moved in status or ETA, a vendor, a vessel or port) falls back
 *   to the rules above.
 * - Rows are read after the version, so they can be newer than it, never older (as with kept
 *   answers); a model whose version moved while it was read answers that one read and is not kept.
 * - Never inside a transaction (a mutation reads what it wrote), and never for an admin (whose
 *   lists span accounts): those read by statement.
 * - Bounded: at most MAX_ROWS calls and orders in all (about 1.2 KiB of heap each, measured on the
 *   demo account), the least recently read account dropped first; an account found with more than
 *   MAX_ACCOUNT_CALLS calls reads by statement from then on (while the process runs), so a large
 *   tenant's writes never make it read every call again.
 */

/** Calls and orders kept in all, over every account (about 60 MiB). */
export const MAX_ROWS = 50_000;
/** An account with more calls than this reads by statement. */
export const MAX_ACCOUNT_CALLS = 20_000;
/** Accounts whose version was seen once without a model built (bounded like the models). */
const MAX_SEEN = 10_000;

declare module '../gateway/schema/context.js' {
  interface AppServices {
    /** The port-call read model (one per app). */
    accountCalls: AccountCalls;
  }
}

/** Lists of matching calls a model keeps, one per distinct filter; past it they start afresh. */
const MAX_FILTERS = 64;

/** One account's calls for one version, with the orders and vendors read so far. */
export class CallsModel {
  /** The calls matching each filter read so far (`filterKey`), in the same order as `calls`. */
  private readonly matching = new Map<string, readonly PortCall[]>();
  /** Each call's orders read so far, oldest first (created at, then id); none is an empty list. */
  readonly orders = new Map<string, readonly ServiceOrder[]>();
  /** Calls and orders held. */
  rows: number;
  /** Reads this model answered, the one that built it included. */
  reads = 1;

  constructor(
    readonly accountId: string,
    readonly version: string,
    /** Every call of the account, by eta then id, ascending. */
    readonly calls: readonly PortCall[],
    /** The account's vendors by id (and any other an order names). */
    readonly vendors: Map<string, Vendor>,
  ) {
    this.rows = calls.length;
  }

  /** The calls that match `terms`, ascending by (eta, id); worked out once per filter. */
  callsMatching(terms: CallTerms): readonly PortCall[] {
    const { status, portId, vesselId } = terms;
    const from = terms.etaFrom?.getTime();
    const to = terms.etaTo?.getTime();
    if (!status && !portId && !vesselId && from === undefined && to === undefined) return this.calls;
    const key = `${status ?? ''}|${portId ?? ''}|${vesselId ?? ''}|${from ?? ''}|${to ?? ''}`;
    let found = this.matching.get(key);
    if (!found) {
      found = this.calls.filter(
        (c) =>
          (!status || c.status === status) &&
          (!portId || c.portId === portId) &&
          (!vesselId || c.vesselId === vesselId) &&
          (from === undefined || c.eta.getTime() >= from) &&
          (to === undefined || c.eta.getTime() < to),
      );
      if (this.matching.size >= MAX_FILTERS) this.matching.clear();
      this.matching.set(key, found);
    }
    return found;
  }
}

/** The terms of a list of calls, checked and looked up (port and vessel by id). */
export interface CallTerms {
  status?: PortCallStatus;
  portId?: string;
  vesselId?: string;
  etaFrom?: Date;
  etaTo?: Date;
}

export class AccountCalls {
  /** By account, least recently read first. */
  private readonly models = new Map<string, CallsModel>();
  /** Per account, the version last read by statement (its first read), so the next builds the model. */
  private readonly seen = new Map<string, string>();
  private readonly building = new Map<string, Promise<CallsModel | undefined>>();
  /** Accounts found past MAX_ACCOUNT_CALLS: they read by statement while the process runs. */
  private readonly large = new Set<string>();
  private rows = 0;

  constructor(
    private readonly versions: ReadModelVersions,
    private readonly changes: ChangeLog,
    private readonly limits: { maxRows: number; maxAccountCalls: number } = {
      maxRows: MAX_ROWS,
      maxAccountCalls: MAX_ACCOUNT_CALLS,
    },
  ) {}

  /** Calls and orders kept now, over every account. */
  get size(): number {
    return this.rows;
  }

  /**
   * The model of the principal's account as its data stands now, or undefined where the list reads
   * by statement: an admin (whose lists span accounts), a transaction, the version's first read, an
   * account past the bound.
   */
  model(
    em: EntityManager,
    principal: Pick<Principal, 'accountId' | 'scopes'>,
  ): MaybePromise<CallsModel | undefined> {
    const { accountId } = principal;
    if (isAdmin(principal) || em.getTransactionContext() || this.large.has(accountId)) return undefined;
    return andThen(this.versions.read(portOpsVersionNames(accountId)), (version) => {
      const kept = this.models.get(accountId);
      if (kept?.version === version) {
        kept.reads++;
        this.models.delete(accountId); // most recently read last
        this.models.set(accountId, kept);
        return kept;
      }
      if (!kept) return this.fresh(em, accountId, version, undefined);
      // Concurrent first reads of the new version share one carrying.
      const key = `carry:${accountId}@${version}`;
      const carrying = this.building.get(key);
      if (carrying) return carrying;
      const carried = this.carried(em, kept, version);
      if (!carried) return this.fresh(em, accountId, version, kept);
      const next = carried
        .then((model) => model ?? this.fresh(em, accountId, version, kept))
        .finally(() => this.building.delete(key));
      this.building.set(key, next);
      return next;
    });
  }

  /**
   * A new model of the account at `version`, or undefined where its list reads by statement: the
   * version's first read, unless the model it replaces served more than one read.
   */
  private fresh(
    em: EntityManager,
    accountId: string,
    version: string,
    kept: CallsModel | undefined,
  ): MaybePromise<CallsModel | undefined> {
    if (kept) this.drop(accountId, kept);
    // A model that served more than one read is rebuilt on the first read of the next version:
    // the tenant reads more than it writes, and that read would otherwise execute by statement.
    if ((kept?.reads ?? 0) < 2 && this.seen.get(accountId) !== version) {
      this.seen.delete(accountId);
      this.seen.set(accountId, version);
      if (this.seen.size > MAX_SEEN) this.seen.delete(this.seen.keys().next().value!);
      return undefined;
    }
    const key = `${accountId}@${version}`;
    let build = this.building.get(key);
    if (!build) {
      build = this.build(em, accountId, version).finally(() => this.building.delete(key));
      this.building.set(key, build);
    }
    return build;
  }

  /**
   * `kept` brought to `version` when the log says which calls the moves since changed and that none
   * of them could change a list: those calls read again, their orders dropped (read when next
   * shown), the rest as kept. Undefined when the log cannot vouch for the moves.
   */
  private carried(
    em: EntityManager,
    kept: CallsModel,
    version: string,
  ): Promise<CallsModel | undefined> | undefined {
    const before = versionParts(kept.version);
    const now = versionParts(version);
    if (before.shared !== now.shared) return undefined;
    const { accountId } = kept;
    return Promise.resolve(this.changes.callsChanged(em, accountId, before.account, now.account)).then(
      async (changed) => {
        if (!changed) return undefined;
        const ids = [...changed];
        const fresh = ids.length ? await preparedIn(em, PortCall, 'id', ids, {}, { accountId }) : [];
        // A call the log names that is gone or not the account's: the log is not the whole story.
        if (fresh.length !== ids.length) return undefined;
        const byId = new Map(fresh.map((c) => [c.id, c]));
        const calls = kept.calls.map((c) => byId.get(c.id) ?? c);
        const next = new CallsModel(accountId, version, calls, kept.vendors);
        for (const [id, orders] of kept.orders) if (!changed.has(id)) next.orders.set(id, orders);
        next.rows += [...next.orders.values()].reduce((n, orders) => n + orders.length, 0);
        next.reads = kept.reads;
        await this.keep(next, kept);
        return next;
      },
    );
  }

  private async build(
    em: EntityManager,
    accountId: string,
    version: string,
  ): Promise<CallsModel | undefined> {
    const calls = await preparedIn(em, PortCall, 'accountId', [accountId], { eta: 'asc', id: 'asc' });
    if (calls.length > this.limits.maxAccountCalls) return this.tooLarge(accountId);
    const vendors = new Map((await preparedIn(em, Vendor, 'accountId', [accountId])).map((v) => [v.id, v]));
    const model = new CallsModel(accountId, version, calls, vendors);
    await this.keep(model, this.models.get(accountId));
    return model;
  }

  /**
   * Keeps `model` in place of `before` when nothing moved the version while its rows were read;
   * otherwise it answers the read that made it and is not kept.
   */
  private async keep(model: CallsModel, before: CallsModel | undefined): Promise<boolean> {
    const now = await this.versions.read(portOpsVersionNames(model.accountId));
    if (now !== model.version) return false;
    if (before) this.drop(model.accountId, before);
    const current = this.models.get(model.accountId);
    if (current) this.drop(model.accountId, current);
    this.seen.delete(model.accountId);
    this.models.set(model.accountId, model);
    this.rows += model.rows;
    this.evict();
    return true;
  }

  /**
   * Reads the orders of those of `calls` whose orders the model does not hold yet, in one statement,
   * and keeps them with it: the orders of the calls pages show are read once per version, not the
   * whole account's when the model is built. The vendors come with the model (an account's few);
   * one of another account that an order names is read by id.
   */
  readOrders(em: EntityManager, model: CallsModel, calls: readonly PortCall[]): Promise<void> | undefined {
    const ids = calls.filter((c) => !model.orders.has(c.id)).map((c) => c.id);
    return ids.length === 0 ? undefined : this.readOrdersOf(em, model, ids);
  }

  private async readOrdersOf(em: EntityManager, model: CallsModel, ids: string[]): Promise<void> {
    const groups = await ordersByCall(em, ids);
    const elsewhere = [
      ...new Set(
        groups
          .flat()
          .map((o) => o.vendorId)
          .filter((id) => !model.vendors.has(id)),
      ),
    ];
    if (elsewhere.length)
      for (const vendor of await preparedIn(em, Vendor, 'id', elsewhere))
        model.vendors.set(vendor.id, vendor);
    let added = 0;
    ids.forEach((id, i) => {
      if (model.orders.has(id)) return; // another request read them meanwhile
      model.orders.set(id, groups[i]!);
      added += groups[i]!.length;
    });
    model.rows += added;
    if (this.models.get(model.accountId) === model) {
      this.rows += added;
      this.evict();
    }
  }

  /** Drops the least recently read accounts until the rows kept are within the bound. */
  private evict(): void {
    for (const [account, oldest] of this.models) {
      if (this.rows <= this.limits.maxRows) break;
      this.drop(account, oldest);
    }
  }

  private tooLarge(accountId: string): undefined {
    if (this.large.size < MAX_SEEN) this.large.add(accountId);
    return undefined;
  }

  private drop(accountId: string, model: CallsModel): void {
    if (this.models.get(accountId) !== model) return;
    this.models.delete(accountId);
    this.rows -= model.rows;
  }
}

/**
 * One page of the model's calls that match `terms`, ascending by (eta, id) or descending, with the
 * number that match: what the statement of `listPortCalls` answers from the tables.
 */
export function pageOfModel(
  model: CallsModel,
  terms: CallTerms,
  direction: 'asc' | 'desc',
  page: Page,
): { items: PortCall[]; total: number } {
  const matching = model.callsMatching(terms);
  const total = matching.length;
  const items: PortCall[] = [];
  const end = Math.min(total, page.offset + page.limit);
  for (let i = page.offset; i < end; i++) items.push(matching[direction === 'asc' ? i : total - 1 - i]!);
  return { items, total };
}
