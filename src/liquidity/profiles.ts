import type { EntityManager } from '@mikro-orm/knex';
import type { Clock } from '../kernel/clock.js';
import { badInput, conflict, notFound } from '../kernel/errors.js';
import type { Principal } from '../kernel/principal.js';
import type { Page } from '../gateway/schema/connection.js';
import { ScoringProfile, ScoringProfileChange } from './entities.js';
import { isUuid } from '../kernel/ids.js';
import { checkText } from '../kernel/text.js';
import { badField } from './fields.js';
import {
  COMPONENTS,
  DEFAULT_CAPS,
  MAX_PENALTY_CAP,
  PENALTIES,
  type ComponentName,
  type PenaltyCaps,
  type PenaltyName,
  type Weights,
} from './engine/score.js';

/** Custom weights and penalty caps. Every create, update and delete writes a change row with before and after. */

export interface ProfileInput {
  name?: string | null;
  weights?: Partial<Record<ComponentName, number | null>> | null;
  penaltyCaps?: Partial<Record<PenaltyName, number | null>> | null;
}

const WEIGHT_TOLERANCE = 1e-6;

export function validateWeights(weights: NonNullable<ProfileInput['weights']>): Weights {
  for (const key of Object.keys(weights)) {
    if (!(COMPONENTS as readonly string[]).includes(key))
      throw badInput(`weights.${key}`, `unknown component (expected ${COMPONENTS.join(', ')})`);
  }
  const out = {} as Weights;
  for (const c of COMPONENTS) {
    const w = weights[c];
    if (w === undefined || w === null) throw badInput(`weights.${c}`, 'is required (give all five weights)');
    if (typeof w !== 'number' || !Number.isFinite(w) || w < 0)
      throw badInput(`weights.${c}`, `must be a non-negative number (got ${String(w)})`);
    out[c] = w;
  }
  const sum = COMPONENTS.reduce((s, c) => s + out[c], 0);
  if (Math.abs(sum - 1) > WEIGHT_TOLERANCE)
    throw badInput('weights', `must sum to 1 (got ${Math.round(sum * 1e6) / 1e6})`);
  return out;
}

export function validateCaps(
  caps: NonNullable<ProfileInput['penaltyCaps']>,
  base: PenaltyCaps = DEFAULT_CAPS,
): PenaltyCaps {
  for (const key of Object.keys(caps)) {
    if (!(PENALTIES as readonly string[]).includes(key))
      throw badField(`penaltyCaps.${key}`, `unknown penalty (expected ${PENALTIES.join(', ')})`);
  }
  const out = { ...base };
  for (const p of PENALTIES) {
    const v = caps[p];
    if (v === undefined || v === null) continue;
    if (typeof v !== 'number' || !Number.isFinite(v) || v < 0 || v > MAX_PENALTY_CAP) {
      throw badField(`penaltyCaps.${p}`, `must be between 0 and ${MAX_PENALTY_CAP} (got ${String(v)})`);
    }
    out[p] = v;
  }
  return out;
}

function validateName(name: string | null | undefined): string {
  const value = (name ?? '').trim();
  if (value.length < 1 || value.length > 100) throw badInput('name', 'must be 1–100 characters');
  return checkText(value, 'name');
}

function stateOf(p: ScoringProfile): Record<string, unknown> {
  return { name: p.name, weights: { ...p.weights }, penaltyCaps: { ...p.penaltyCaps } };
}

/** Who made a change, for audit rows: `api_key:<id>`, `oauth_token:<jti>`, `session:<id>`. */
export const actorOf = (principal: Principal) => `${principal.credential.kind}:${principal.credential.id}`;

function logChange(
  em: EntityManager,
  clock: Clock,
  principal: Principal,
  profileId: string,
  action: ScoringProfileChange['action'],
  before: Record<string, unknown> | null,
  after: Record<string, unknown> | null,
): void {
  em.persist(
    em.create(ScoringProfileChange, {
      profileId,
      accountId: principal.accountId,
      actor: actorOf(principal),
      action,
      before,
      after,
      at: clock.now(),
    }),
  );
}

async function ensureUniqueName(
  em: EntityManager,
  accountId: string,
  name: string,
  exceptId?: string,
): Promise<void> {
  const clash = await em.findOne(ScoringProfile, { accountId, name });
  if (clash && clash.id !== exceptId)
    throw conflict(`A scoring profile named '${name}' already exists`, { field: 'name' });
}

export async function createProfile(
  em: EntityManager,
  principal: Principal,
  clock: Clock,
  input: ProfileInput,
): Promise<ScoringProfile> {
  const name = validateName(input.name);
  const weights = validateWeights(input.weights ?? {});
  const penaltyCaps = validateCaps(input.penaltyCaps ?? {});
  return em.transactional(async (tx) => {
    await ensureUniqueName(tx, principal.accountId, name);
    const now = clock.now();
    const profile = tx.create(ScoringProfile, {
      accountId: principal.accountId,
      name,
      weights,
      penaltyCaps,
      createdAt: now,
      updatedAt: now,
    });
    tx.persist(profile);
    logChange(tx, clock, principal, profile.id, 'CREATE', null, stateOf(profile));
    return profile;
  });
}

async function owned(em: EntityManager, principal: Principal, id: string): Promise<ScoringProfile> {
  const profile = isUuid(id)
    ? await em.findOne(ScoringProfile, { id, accountId: principal.accountId })
    : null;
  if (!profile) throw notFound('Scoring profile', id);
  return profile;
}

export async function updateProfile(
  em: EntityManager,
  principal: Principal,
  clock: Clock,
  id: string,
  input: ProfileInput,
): Promise<ScoringProfile> {
  return em.transactional(async (tx) => {
    const profile = await owned(tx, principal, id);
    const before = stateOf(profile);
    if (input.name !== undefined && input.name !== null) {
      profile.name = validateName(input.name);
      await ensureUniqueName(tx, principal.accountId, profile.name, profile.id);
    }
    if (input.weights) profile.weights = validateWeights(input.weights);
    if (input.penaltyCaps) profile.penaltyCaps = validateCaps(input.penaltyCaps, profile.penaltyCaps);
    profile.updatedAt = clock.now();
    logChange(tx, clock, principal, profile.id, 'UPDATE', before, stateOf(profile));
    return profile;
  });
}

export async function deleteProfile(
  em: EntityManager,
  principal: Principal,
  clock: Clock,
  id: string,
): Promise<boolean> {
  return em.transactional(async (tx) => {
    const profile = await owned(tx, principal, id);
    logChange(tx, clock, principal, profile.id, 'DELETE', stateOf(profile), null);
    tx.remove(profile);
    return true;
  });
}

export async function listProfiles(
  em: EntityManager,
  principal: Principal,
  page: Page,
): Promise<{ items: ScoringProfile[]; total: number }> {
  const [items, total] = await em.findAndCount(
    ScoringProfile,
    { accountId: principal.accountId },
    { orderBy: { name: 'asc' }, limit: page.limit, offset: page.offset },
  );
  return { items, total };
}

export async function profileChanges(
  em: EntityManager,
  principal: Principal,
  id: string,
): Promise<ScoringProfileChange[]> {
  // Not a UUID: no such profile (PostgreSQL would reject the comparison rather than match nothing).
  const changes = isUuid(id)
    ? await em.find(
        ScoringProfileChange,
        { profileId: id, accountId: principal.accountId },
        { orderBy: { at: 'asc', id: 'asc' } },
      )
    : [];
  if (changes.length === 0) throw notFound('Scoring profile', id);
  return changes;
}
