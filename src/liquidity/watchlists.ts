import type { EntityManager } from '@mikro-orm/knex';
import type { Clock } from '../kernel/clock.js';
import { badInput, notFound } from '../kernel/errors.js';
import type { Principal } from '../kernel/principal.js';
import type { Page } from '../gateway/schema/connection.js';
import { Protocol, Watchlist, WatchlistAlert, WatchlistItem } from './entities.js';
import { badField } from './fields.js';
import { protocolBySlug } from './protocol-queries.js';
import type { ServiceDeps } from '../kernel/deps.js';

/** One watchlist per account, created on first change; reading before then shows the defaults. */

export interface WatchlistInput {
  add?: string[] | null;
  /** Points; null or 0 turns score alerts off. */
  scoreChangeThreshold?: number | null;
  tierShift?: boolean | null;
  /** Percent; null or 0 turns AUM alerts off. */
  aumChangePct?: number | null;
  complianceEvents?: boolean | null;
}

export interface WatchlistView {
  watchlist: Watchlist;
  /** False while the account has never changed its watchlist (defaults shown). */
  persisted: boolean;
  protocols: Protocol[];
}

function draft(accountId: string, clock: Clock): Watchlist {
  const now = clock.now();
  return Object.assign(new Watchlist(), { accountId, createdAt: now, updatedAt: now });
}

export async function getWatchlist(
  { em, clock }: Pick<ServiceDeps, 'em' | 'clock'>,
  principal: Principal,
): Promise<WatchlistView> {
  const stored = await em.findOne(Watchlist, { accountId: principal.accountId });
  if (!stored) return { watchlist: draft(principal.accountId, clock), persisted: false, protocols: [] };
  const items = await em.find(WatchlistItem, { watchlistId: stored.id });
  const protocols = items.length
    ? await em.find(Protocol, { id: { $in: items.map((i) => i.protocolId) } }, { orderBy: { slug: 'asc' } })
    : [];
  return { watchlist: stored, persisted: true, protocols };
}

/**
 * A threshold to store: undefined keeps the current one, 0 turns the alert off (stored as null).
 * null also keeps it: compiled operations hand an unset variable inside an input object to the
 * resolver as null, so null cannot mean "off" without a partial update switching alerts off.
 */
function threshold(field: string, value: number | null | undefined, max: number): number | null | undefined {
  if (value === undefined || value === null) return undefined;
  if (value === 0) return null;
  if (!Number.isFinite(value) || value < 0 || value > max)
    throw badField(field, `must be between 0 and ${max} (0 or null turns the alert off; got ${value})`);
  return value;
}

/** Adds protocols and/or changes the alert configuration; unknown slugs fail the whole call. */
export async function updateWatchlist(
  { em, clock }: Pick<ServiceDeps, 'em' | 'clock'>,
  principal: Principal,
  input: WatchlistInput,
): Promise<WatchlistView> {
  const score = threshold('scoreChangeThreshold', input.scoreChangeThreshold, 100);
  const aum = threshold('aumChangePct', input.aumChangePct, 1000);
  const slugs = input.add ?? [];
  if (slugs.length > 100) throw badInput('add', `at most 100 protocols per call (got ${slugs.length})`);
  await em.transactional(async (tx) => {
    const protocols: Protocol[] = [];
    for (const slug of slugs) {
      const p = await protocolBySlug(tx, slug);
      if (!p) throw notFound('Protocol', slug);
      protocols.push(p);
    }
    let watchlist = await tx.findOne(Watchlist, { accountId: principal.accountId });
    if (!watchlist) {
      watchlist = tx.create(Watchlist, { ...draft(principal.accountId, clock) });
      // Items reference the watchlist; the ORM knows no relation between them to order the inserts.
      await tx.persist(watchlist).flush();
    }
    if (score !== undefined) watchlist.scoreChangeThreshold = score;
    if (aum !== undefined) watchlist.aumChangePct = aum;
    if (input.tierShift !== undefined && input.tierShift !== null) watchlist.tierShift = input.tierShift;
    if (input.complianceEvents !== undefined && input.complianceEvents !== null)
      watchlist.complianceEvents = input.complianceEvents;
    watchlist.updatedAt = clock.now();
    const existing = new Set(
      (await tx.find(WatchlistItem, { watchlistId: watchlist.id })).map((i) => i.protocolId),
    );
    for (const p of protocols) {
      if (existing.has(p.id)) continue;
      existing.add(p.id);
      tx.persist(
        tx.create(WatchlistItem, { watchlistId: watchlist.id, protocolId: p.id, addedAt: clock.now() }),
      );
    }
  });
  return getWatchlist({ em, clock }, principal);
}

/** Removes one protocol; 404 when it is not on the watchlist. */
export async function removeFromWatchlist(
  em: EntityManager,
  principal: Principal,
  slug: string,
): Promise<boolean> {
  const protocol = await protocolBySlug(em, slug);
  const watchlist = await em.findOne(Watchlist, { accountId: principal.accountId });
  if (!protocol || !watchlist) throw notFound('Watchlist entry', slug);
  const deleted = await em.nativeDelete(WatchlistItem, {
    watchlistId: watchlist.id,
    protocolId: protocol.id,
  });
  if (deleted === 0) throw notFound('Watchlist entry', slug);
  return true;
}

export async function listAlerts(
  em: EntityManager,
  principal: Principal,
  page: Page,
): Promise<{ items: WatchlistAlert[]; total: number }> {
  const [items, total] = await em.findAndCount(
    WatchlistAlert,
    { accountId: principal.accountId },
    { orderBy: { createdAt: 'desc', id: 'asc' }, limit: page.limit, offset: page.offset },
  );
  return { items, total };
}
