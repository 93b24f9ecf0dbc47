import type { EntityManager } from '@mikro-orm/knex';
import { badInput } from '../kernel/errors.js';
import type { Page } from '../gateway/schema/connection.js';
import { Protocol, ProtocolCategory, LiquidityTier } from './entities.js';
import type { Published } from './read-model.js';
import { badField, isSlug } from './fields.js';

/** Which protocols a caller sees: the listing filters, and a protocol by slug. */

export function parseCategory(raw: string, field = 'category'): ProtocolCategory {
  const value = raw.trim().toUpperCase().replace(/[-\s]/g, '_');
  if (!(value in ProtocolCategory)) {
    throw badInput(
      field,
      `must be one of ${Object.values(ProtocolCategory)
        .map((c) => c.toLowerCase())
        .join(', ')} (got '${raw}')`,
    );
  }
  return value as ProtocolCategory;
}

export function parseTier(raw: string, field = 'tier'): LiquidityTier {
  const value = raw.trim().toUpperCase();
  if (!(value in LiquidityTier))
    throw badInput(field, `must be one of ${Object.values(LiquidityTier).join(', ')} (got '${raw}')`);
  return value as LiquidityTier;
}

export interface ProtocolFilter {
  category?: string | null;
  tier?: string | null;
  minScore?: number | null;
  minAum?: number | null;
}

/** The filter as a test on a protocol; bad values are refused with the field named. */
function protocolTest(filter: ProtocolFilter): (p: Protocol) => boolean {
  const category = filter.category ? parseCategory(filter.category) : null;
  const tier = filter.tier ? parseTier(filter.tier) : null;
  const minScore = filter.minScore ?? null;
  const minAum = filter.minAum ?? null;
  if (minScore !== null && (minScore < 0 || minScore > 100))
    throw badField('minScore', `must be between 0 and 100 (got ${minScore})`);
  if (minAum !== null && minAum < 0) throw badField('minAum', `must be 0 or more (got ${minAum})`);
  return (p) =>
    (category === null || p.category === category) &&
    (tier === null || p.liquidityTier === tier) &&
    (minScore === null || (p.liquidityScore ?? -1) >= minScore) &&
    (minAum === null || p.aum >= minAum);
}

/** Active protocols by slug, from the published state. */
export function listProtocols(
  state: Published,
  filter: ProtocolFilter,
  page: Page,
): { items: Protocol[]; total: number } {
  const test = protocolTest(filter);
  const all = Object.values(filter).some((v) => v !== null && v !== undefined)
    ? state.active.filter(test)
    : state.active;
  return { items: all.slice(page.offset, page.offset + page.limit), total: all.length };
}

/** A published protocol, active or not. */
export function publishedProtocol(state: Published, slug: string): Protocol | null {
  return state.bySlug.get(slug.trim().toLowerCase()) ?? null;
}

/** The stored protocol, for writers (read inside their transaction). */
export async function protocolBySlug(em: EntityManager, slug: string): Promise<Protocol | null> {
  const value = slug.trim().toLowerCase();
  // Nothing that is not slug-shaped can be one: no query (PostgreSQL refuses a NUL in a parameter).
  return isSlug(value) ? em.findOne(Protocol, { slug: value }) : null;
}
