import { isUniqueViolation } from '../db/errors.js';
import type { EntityManager } from '@mikro-orm/knex';
import { constantTimeEqual, hashPassword, newSecret, sha256Hex, verifyPassword } from '../kernel/crypto.js';
import { AppError, badInput, conflict, notFound } from '../kernel/errors.js';
import { isUuid } from '../kernel/ids.js';
import { checkText } from '../kernel/text.js';
import { parsePlan, type Plan } from '../kernel/plans.js';
import { DEFAULT_KEY_SCOPES, parseCredentialScopes } from '../kernel/scopes.js';
import { Account, ApiKey, User } from './entities.js';
import type { ServiceDeps } from '../kernel/deps.js';

/** Every API key starts with this, so leaked keys are easy to recognise and scan for. */
export const API_KEY_PREFIX = 'tg_';

export interface KeyPolicy {
  maxActiveKeys: number;
  rotationGraceMs: number;
}

function requireText(field: string, value: string | undefined, max: number): string {
  const text = value?.trim() ?? '';
  if (!text) throw badInput(field, 'is required');
  return checkText(text, field, { max });
}

export async function createAccount(
  { em, clock }: Pick<ServiceDeps, 'em' | 'clock'>,
  input: { name: string; plan: string },
): Promise<Account> {
  const name = requireText('name', input.name, 200);
  const plan = parsePlan(input.plan ?? '');
  if (!plan)
    throw badInput(
      'plan',
      `must be one of OBSERVER, ANALYST, PROFESSIONAL, INSTITUTIONAL (got '${input.plan}')`,
    );
  const account = em.create(Account, { name, plan, createdAt: clock.now() });
  await em.persistAndFlush(account);
  return account;
}

export async function changePlan(em: EntityManager, accountId: string, plan: Plan): Promise<Account> {
  const account = await getAccount(em, accountId);
  account.plan = plan;
  await em.flush();
  return account;
}

export async function getAccount(em: EntityManager, id: string): Promise<Account> {
  const account = isUuid(id) ? await em.findOne(Account, { id }) : null;
  if (!account) throw notFound('Account', id);
  return account;
}

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

export async function createUser(
  { em, clock }: Pick<ServiceDeps, 'em' | 'clock'>,
  input: { accountId: string; email: string; password: string; name?: string; admin?: boolean },
): Promise<User> {
  const account = await getAccount(em, input.accountId);
  const email = requireText('email', input.email, 320).toLowerCase();
  if (!EMAIL.test(email)) throw badInput('email', `'${input.email}' is not an email address`);
  if (!input.password || input.password.length < 10) {
    throw badInput('password', 'must be at least 10 characters');
  }
  if (await em.count(User, { email }))
    throw conflict(`A user with email '${email}' already exists`, { field: 'email' });
  const user = em.create(User, {
    account,
    email,
    name: input.name?.trim() || email.split('@')[0]!,
    passwordHash: await hashPassword(input.password),
    roles: input.admin ? ['admin'] : [],
    createdAt: clock.now(),
  });
  await em.persistAndFlush(user);
  return user;
}

/**
 * Replaces a user's password hash (the operator's recovery, `tidegate users reset-password`).
 * Ending what the old password opened is the authorization server's part (auth/sessions.ts), run
 * by the caller in the same transaction.
 */
export async function setUserPassword(em: EntityManager, email: string, password: string): Promise<User> {
  const normalized = email.trim().toLowerCase();
  const user = await em.findOne(User, { email: normalized });
  if (!user) throw notFound('User', normalized);
  user.passwordHash = await hashPassword(password);
  await em.flush();
  return user;
}

/** Checks an email and password; the same answer (null) for an unknown email and a wrong password. */
export async function verifyUserPassword(
  em: EntityManager,
  email: string,
  password: string,
): Promise<User | null> {
  const user = await em.findOne(User, { email: email.trim().toLowerCase() }, { populate: ['account'] });
  if (!user) {
    // Spend the same time as a real check so timing does not reveal which emails exist.
    await verifyPassword(password, DUMMY_HASH);
    return null;
  }
  return (await verifyPassword(password, user.passwordHash)) ? user : null;
}

const DUMMY_HASH =
  'scrypt$16384$8$1$AAAAAAAAAAAAAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA';

export function isKeyActive(key: ApiKey, now: Date): boolean {
  return !key.revokedAt && (!key.expiresAt || key.expiresAt.getTime() > now.getTime());
}

export async function activeKeyCount(em: EntityManager, accountId: string, now: Date): Promise<number> {
  return em.count(ApiKey, {
    account: accountId,
    revokedAt: null,
    $or: [{ expiresAt: null }, { expiresAt: { $gt: now } }],
  });
}

export interface CreatedKey {
  key: ApiKey;
  /** The whole secret. Returned once, never stored. */
  secret: string;
}

export async function createApiKey(
  { em, clock }: Pick<ServiceDeps, 'em' | 'clock'>,
  policy: KeyPolicy,
  input: {
    accountId: string;
    name?: string;
    scopes?: string | readonly string[];
    expiresAt?: Date | null;
    /** A longer prefix that marks a kind of key (sandbox keys); it must start with API_KEY_PREFIX. */
    secretPrefix?: string;
  },
): Promise<CreatedKey> {
  const account = await getAccount(em, input.accountId);
  const name = input.name === undefined ? 'API key' : requireText('name', input.name, 200);
  const scopes = input.scopes === undefined ? DEFAULT_KEY_SCOPES : parseCredentialScopes(input.scopes);
  if (scopes.length === 0) throw badInput('scopes', 'must name at least one scope');
  const now = clock.now();
  if (input.expiresAt && input.expiresAt.getTime() <= now.getTime()) {
    throw badInput('expiresAt', 'must be in the future');
  }
  return em.transactional(async (tx) => {
    const active = await activeKeyCount(tx, account.id, now);
    if (active >= policy.maxActiveKeys) {
      throw conflict(
        `Account already has ${active} active API keys (the limit is ${policy.maxActiveKeys}); revoke one first`,
        { limit: policy.maxActiveKeys },
      );
    }
    return issueKey(tx, account, name, scopes, now, input.expiresAt ?? null, null, input.secretPrefix);
  });
}

function issueKey(
  em: EntityManager,
  account: Account,
  name: string,
  scopes: string[],
  now: Date,
  expiresAt: Date | null,
  rotatedFromId: string | null,
  secretPrefix = API_KEY_PREFIX,
): CreatedKey {
  // The credential resolver routes secrets by API_KEY_PREFIX: any other prefix would never resolve.
  if (!secretPrefix.startsWith(API_KEY_PREFIX))
    throw new Error(`key prefix must start with ${API_KEY_PREFIX}`);
  const secret = newSecret(secretPrefix, 32);
  const key = em.create(ApiKey, {
    account,
    name,
    scopes,
    prefix: secret.slice(0, 10),
    secretHash: sha256Hex(secret),
    createdAt: now,
    expiresAt,
    rotatedFromId,
    lastUsedAt: null,
    revokedAt: null,
  });
  em.persist(key);
  return { key, secret };
}

async function getKey(em: EntityManager, id: string, accountId?: string): Promise<ApiKey> {
  const key = isUuid(id) ? await em.findOne(ApiKey, { id }, { populate: ['account'] }) : null;
  if (!key || (accountId && key.account.id !== accountId)) throw notFound('API key', id);
  return key;
}

export async function revokeApiKey(
  { em, clock }: Pick<ServiceDeps, 'em' | 'clock'>,
  id: string,
  accountId?: string,
): Promise<ApiKey> {
  const key = await getKey(em, id, accountId);
  if (!key.revokedAt) {
    key.revokedAt = clock.now();
    await em.flush();
  }
  return key;
}

/**
 * Replaces a key: the new key has the same name, scopes and expiry; the old one keeps working
 * for the grace period so deployments can switch over. Rotation is allowed at the active-key
 * limit, since it replaces a key rather than adding one. A key is rotated at most once: rotating
 * it again would add keys past the limit and give the next successor the grace deadline as its
 * expiry, so the caller is sent to the successor instead.
 */
export async function rotateApiKey(
  { em, clock }: Pick<ServiceDeps, 'em' | 'clock'>,
  policy: KeyPolicy,
  id: string,
  accountId?: string,
): Promise<CreatedKey & { previous: ApiKey }> {
  return em.transactional(async (tx) => {
    const old = await getKey(tx, id, accountId);
    const now = clock.now();
    if (!isKeyActive(old, now)) {
      throw new AppError('CONFLICT', `API key ${id} is revoked or expired and cannot be rotated`, { id });
    }
    const successor = await tx.findOne(ApiKey, { rotatedFromId: old.id }, { fields: ['id'] });
    if (successor) {
      throw new AppError(
        'CONFLICT',
        `API key ${id} was already rotated; rotate its successor ${successor.id} instead`,
        { id, successorId: successor.id },
      );
    }
    const graceEnd = new Date(now.getTime() + policy.rotationGraceMs);
    const created = issueKey(tx, old.account, old.name, old.scopes, now, old.expiresAt ?? null, old.id);
    if (!old.expiresAt || old.expiresAt > graceEnd) old.expiresAt = graceEnd;
    try {
      await tx.flush();
    } catch (e) {
      // A concurrent rotation of the same key committed first (unique rotated_from_id).
      if (isUniqueViolation(e)) throw new AppError('CONFLICT', `API key ${id} was already rotated`, { id });
      throw e;
    }
    return { ...created, previous: old };
  });
}

export async function listApiKeys(em: EntityManager, accountId: string): Promise<ApiKey[]> {
  return em.find(ApiKey, { account: accountId }, { orderBy: { createdAt: 'desc', id: 'asc' } });
}

/** Finds the key for a presented secret by its hash (the lookup is by a unique hash index). */
export async function findKeyBySecret(em: EntityManager, secret: string): Promise<ApiKey | null> {
  if (!secret.startsWith(API_KEY_PREFIX)) return null;
  const hash = sha256Hex(secret);
  const key = await em.findOne(ApiKey, { secretHash: hash }, { populate: ['account'] });
  // The index lookup already matched; compare again in constant time as defence in depth.
  return key && constantTimeEqual(key.secretHash, hash) ? key : null;
}
