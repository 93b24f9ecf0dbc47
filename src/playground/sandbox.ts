import { Account, ApiKey } from '../accounts/entities.js';
import { createApiKey } from '../accounts/service.js';
import type { Config } from '../config.js';
import { isUniqueViolation } from '../db/errors.js';
import { AppError, conflict } from '../kernel/errors.js';
import { ALL_SCOPES, type Scope } from '../kernel/scopes.js';
import { seedPortOpsSandbox } from '../port-ops/seed.js';
import type { ServiceDeps } from '../kernel/deps.js';

/**
 * Sandbox keys: what the playground hands a signed-in user in one click.
 *
 * - The secret starts with `tg_sandbox_`, so a leaked one is recognisable (and harmless).
 * - It belongs to the real account's sandbox account: a separate tenant, created on first use
 *   with demo port-operations data and nothing else. Tenant isolation does the rest: the key can
 *   neither read nor write the real account's port calls, orders, invoices, documents,
 *   watchlists or profiles; to it they do not exist (404 / empty lists).
 * - It acts with the real account's current plan, never more; its plan-gated (liquidity) calls
 *   spend the real account's plan budget and monthly quota, like any of its keys.
 * - It expires after SANDBOX_KEY_TTL (24 h), makes at most SANDBOX_PER_MINUTE calls a minute, and
 *   a sandbox holds at most SANDBOX_MAX_ACTIVE_KEYS unexpired keys; expired ones are deleted when
 *   the next key is generated.
 * - Its scopes are every scope but `admin`, `webhooks:manage` (no calls out of the service from a
 *   throwaway key) and `export:liquidity` (no bulk export).
 * - Shown once, stored as a SHA-256 hash like every API key.
 */
export const SANDBOX_KEY_PREFIX = 'tg_sandbox_';

const EXCLUDED: readonly Scope[] = ['admin', 'webhooks:manage', 'export:liquidity', 'credentials:manage'];
export const SANDBOX_SCOPES: readonly Scope[] = ALL_SCOPES.filter((s) => !EXCLUDED.includes(s));

export interface SandboxKey {
  secret: string;
  key: ApiKey;
  sandbox: Account;
}

/** The sandbox account of a real account, created (with its demo data) on first use. */
export async function sandboxAccountOf(
  { em, clock }: Pick<ServiceDeps, 'em' | 'clock'>,
  owner: Account,
): Promise<Account> {
  const existing = await em.findOne(Account, { sandboxOf: owner.id });
  if (existing) return existing;
  try {
    return await em.transactional(async (tx) => {
      const sandbox = tx.create(Account, {
        name: `${owner.name.slice(0, 189)} (sandbox)`,
        plan: owner.plan,
        sandboxOf: owner.id,
        createdAt: clock.now(),
      });
      // Written first: the demo rows reference it by a plain id, so the ORM cannot order them.
      await tx.persistAndFlush(sandbox);
      await seedPortOpsSandbox({ em: tx, clock }, sandbox.id);
      return sandbox;
    });
  } catch (e) {
    // Two first clicks at once: the unique sandbox_of index let one through; use that one.
    if (!isUniqueViolation(e)) throw e;
    return em.fork().findOneOrFail(Account, { sandboxOf: owner.id });
  }
}

export async function createSandboxKey(
  { em, clock }: Pick<ServiceDeps, 'em' | 'clock'>,
  config: Pick<Config, 'sandboxKeyTtlMs' | 'sandboxMaxActiveKeys'>,
  owner: Account,
  userEmail: string,
): Promise<SandboxKey> {
  const sandbox = await sandboxAccountOf({ em, clock }, owner);
  // Expired sandbox keys can never work again: drop them rather than keep a row per click forever.
  await em.nativeDelete(ApiKey, { account: sandbox.id, expiresAt: { $lte: clock.now() } });
  try {
    const { key, secret } = await createApiKey(
      { em, clock },
      { maxActiveKeys: config.sandboxMaxActiveKeys, rotationGraceMs: 0 },
      {
        accountId: sandbox.id,
        name: `Sandbox key of ${userEmail}`.slice(0, 200),
        scopes: SANDBOX_SCOPES,
        expiresAt: new Date(clock.now().getTime() + config.sandboxKeyTtlMs),
        secretPrefix: SANDBOX_KEY_PREFIX,
      },
    );
    return { key, secret, sandbox };
  } catch (e) {
    if (!(e instanceof AppError) || e.code !== 'CONFLICT') throw e;
    // Say when the next one frees up, and that revoking one (console, Keys and apps) frees one now.
    const oldest = await em.findOne(
      ApiKey,
      { account: sandbox.id, revokedAt: null, expiresAt: { $gt: clock.now() } },
      { orderBy: { expiresAt: 'asc' } },
    );
    throw conflict(
      `Your sandbox already has ${config.sandboxMaxActiveKeys} unexpired sandbox keys (the limit); the oldest expires at ${oldest?.expiresAt?.toISOString() ?? 'soon'}, or revoke one under Keys and apps in the console`,
      { limit: config.sandboxMaxActiveKeys, nextFreeAt: oldest?.expiresAt?.toISOString() ?? null },
    );
  }
}
