import type { Database } from '../db/orm.js';
import type { CredentialResolver, TokenVerifier } from '../gateway/doors/credentials.js';
import type { Clock } from '../kernel/clock.js';
import { Lru } from '../kernel/lru.js';
import { sha256Hex } from '../kernel/crypto.js';
import type { MaybePromise } from '../kernel/maybe-async.js';
import type { Principal } from '../kernel/principal.js';
import { Account, ApiKey } from './entities.js';
import { API_KEY_PREFIX, findKeyBySecret, isKeyActive } from './service.js';

interface CachedKey {
  principal: Principal;
  keyId: string;
}

const MAX_CACHED_KEYS = 10_000;

/**
 * Turns a presented secret into a Principal. Verified API keys are cached briefly (the per-request
 * cost is then one SHA-256, or a string comparison when the connection presented the same key last
 * time). Revocation evicts at once in this process; keys revoked elsewhere (the CLI, another
 * gateway) are found by the auth module's revocation watch every REVOCATION_POLL and evicted
 * through `invalidateKey`; the cache TTL bounds anything else.
 */
export class AccountCredentials implements CredentialResolver {
  /** Verified keys by SHA-256, each for the cache TTL. */
  private readonly keyCache: Lru<string, CachedKey>;
  /** SHA-256 of presented keys that were refused, each refusal reused for the cache TTL. */
  private readonly refusedKeys: Lru<string, true>;
  private readonly pendingLastUsed = new Map<string, Date>();
  private readonly verifiers: TokenVerifier[] = [];
  /**
   * The last API key each live connection presented, with its SHA-256: a keep-alive connection
   * sends the same key on every request, and comparing it costs less than hashing it again. Held
   * no longer than the connection (a WeakMap on its socket); the hash still goes through the key
   * cache below, so expiry and revocation apply exactly as without it.
   */
  private readonly connectionKeys = new WeakMap<object, { secret: string; hash: string }>();
  private flushTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly db: Database,
    private readonly clock: Clock,
    cacheTtlMs: number,
  ) {
    this.keyCache = new Lru({ maxEntries: MAX_CACHED_KEYS, ttlMs: cacheTtlMs, clock });
    this.refusedKeys = new Lru({ maxEntries: MAX_CACHED_KEYS, ttlMs: cacheTtlMs, clock });
  }

  addTokenVerifier(verifier: TokenVerifier): void {
    this.verifiers.push(verifier);
  }

  /** The principal, at once when the credential is cached (the common case), else after a lookup. */
  resolve(secret: string, connection?: object): MaybePromise<Principal | null> {
    if (secret.startsWith(API_KEY_PREFIX))
      return this.resolveApiKey(secret, this.keyHash(secret, connection));
    const verifier = this.verifiers.find((v) => v.handles(secret));
    return verifier ? verifier.verify(secret) : null;
  }

  /** SHA-256 of a presented API key: the key cache's and the database's lookup key. */
  private keyHash(secret: string, connection: object | undefined): string {
    if (!connection) return sha256Hex(secret);
    const last = this.connectionKeys.get(connection);
    if (last !== undefined && last.secret === secret) return last.hash;
    const hash = sha256Hex(secret);
    this.connectionKeys.set(connection, { secret, hash });
    return hash;
  }

  private resolveApiKey(secret: string, hash: string): MaybePromise<Principal | null> {
    const now = this.clock.now();
    const cached = this.keyCache.get(hash);
    if (cached) {
      const expiresAt = cached.principal.credential.expiresAt;
      if (!expiresAt || expiresAt > now) {
        this.noteUsed(cached.keyId, now);
        return cached.principal;
      }
      this.keyCache.delete(hash);
    }
    if (this.refusedKeys.get(hash)) return null;
    return this.lookUpApiKey(secret, hash, now);
  }

  private async lookUpApiKey(secret: string, hash: string, now: Date): Promise<Principal | null> {
    const key = await findKeyBySecret(this.db.em(), secret);
    if (!key || !isKeyActive(key, now)) {
      // Unknown, revoked and expired keys never become valid again: remember the refusal briefly
      // so a client retrying a dead key (or someone guessing) does not cost a query per request.
      this.refusedKeys.set(hash, true);
      return null;
    }
    const owner = key.account.sandboxOf
      ? await this.db.em().findOne(Account, { id: key.account.sandboxOf })
      : undefined;
    if (owner === null) return null;
    const principal = principalForKey(key, owner);
    this.keyCache.set(hash, { principal, keyId: key.id });
    this.noteUsed(key.id, now);
    return principal;
  }

  /** Drops a key from the cache (called on revoke/rotate, here or — via the bus — elsewhere). */
  invalidateKey(keyId: string): void {
    this.keyCache.deleteWhere((entry) => entry.keyId === keyId);
  }

  invalidateAccount(accountId: string): void {
    this.keyCache.deleteWhere(
      ({ principal }) => principal.accountId === accountId || principal.sandboxOf === accountId,
    );
    for (const verifier of this.verifiers) verifier.forgetAccount(accountId);
  }

  private noteUsed(keyId: string, at: Date): void {
    this.pendingLastUsed.set(keyId, at);
    if (!this.flushTimer) {
      // last_used_at is advisory: write it in batches, not on every request.
      this.flushTimer = setTimeout(() => void this.flushLastUsed(), 5_000);
      this.flushTimer.unref();
    }
  }

  async flushLastUsed(): Promise<void> {
    if (this.flushTimer) clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    if (this.pendingLastUsed.size === 0) return;
    const batch = [...this.pendingLastUsed];
    this.pendingLastUsed.clear();
    try {
      await this.db.em().transactional(async (tx) => {
        for (const [id, at] of batch) await tx.nativeUpdate(ApiKey, { id }, { lastUsedAt: at });
      });
    } catch {
      // The database may be closing; losing a last-used timestamp is harmless.
    }
  }
}

/**
 * A sandbox key (its account has `sandboxOf`) acts with the real account's current plan, so a
 * sandbox never reaches more than its owner's plan, and a downgrade applies to it too.
 */
export function principalForKey(key: ApiKey, sandboxOwner?: Account): Principal {
  return {
    accountId: key.account.id,
    plan: sandboxOwner?.plan ?? key.account.plan,
    scopes: new Set(key.scopes),
    credential: { kind: 'api_key', id: key.id, expiresAt: key.expiresAt ?? undefined },
    ...(sandboxOwner ? { sandboxOf: sandboxOwner.id } : {}),
  };
}
