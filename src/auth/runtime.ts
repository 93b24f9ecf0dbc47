import type { EntityManager } from '@mikro-orm/knex';
import { decodeProtectedHeader, jwtVerify } from 'jose';
import { Account } from '../accounts/entities.js';
import type { AppServices } from '../gateway/schema/context.js';
import type { TokenVerifier } from '../gateway/doors/credentials.js';
import type { Principal } from '../kernel/principal.js';
import { CREDENTIAL_REVOKED } from '../kernel/events.js';
import { isIdentityScope } from '../kernel/scopes.js';
import { Lru } from '../kernel/lru.js';
import { AccessTokenRecord, AuthorizationCode, AuthSession, RefreshToken } from './entities.js';
import { KeyStore, SIGNING_ALG } from './keys.js';
import type { CounterStore } from '../kernel/counters.js';
import { FailureThrottle } from './throttle.js';
import { ACCESS_TOKEN_TYPE, type Issuer, type Revocation } from './tokens.js';

/** Claims of a verified access token, kept until exp. */
export interface VerifiedToken {
  jti: string;
  sub: string;
  clientId: string;
  accountId: string;
  userId: string | null;
  scopes: string[];
  iat: number;
  exp: number;
  iss: string;
  aud: string;
}

interface CacheEntry {
  token: VerifiedToken;
  principal: Principal;
  planCheckedAt: number;
}

const MAX_CACHED_TOKENS = 10_000;
const PURGE_EVERY_MS = 60 * 60 * 1000;
/** Used codes are kept this long after expiry so a late replay still revokes what the code issued. */
const CODE_RETENTION_MS = 30 * 24 * 60 * 60 * 1000;

/**
 * The authorization server's in-process state: signing keys, the jti deny-list, the verified
 * token cache and the throttles. One per app; created in the module's start().
 */
export class AuthRuntime implements TokenVerifier {
  readonly keys: KeyStore;
  readonly issuer: Issuer;
  readonly loginThrottle: FailureThrottle;
  readonly clientThrottle: FailureThrottle;
  /**
   * jti → expiry (ms). Not a cache: every entry must stay until the token would have expired
   * anyway, when reloadDenyList drops it.
   */
  private readonly denied = new Map<string, number>();
  /** Verified tokens, by the token; an entry ends with its token (exp) or is dropped for room. */
  private readonly cache = new Lru<string, CacheEntry>({ maxEntries: MAX_CACHED_TOKENS });
  private refreshTimer: NodeJS.Timeout | undefined;
  private stopListening: (() => void) | undefined;
  /** Housekeeping is scheduled on wall time (first run an hour after start); what is expired follows the clock. */
  private lastPurge = Date.now();

  constructor(
    readonly services: AppServices,
    /** Failure counters of both throttles (the rate limiter's kind of store); closed with the runtime. */
    private readonly throttleStore: CounterStore,
  ) {
    const { config, clock } = services;
    this.keys = new KeyStore(() => services.db.em(), clock, services.secrets);
    this.issuer = { clock, keys: this.keys, issuer: config.publicUrl, audience: config.resourceUrl };
    const windowMs = config.authThrottleWindowMs;
    this.loginThrottle = new FailureThrottle('login', this.throttleStore, {
      perSubject: config.authLoginMaxFailures,
      perIp: config.authLoginMaxFailuresPerIp,
      windowMs,
    });
    this.clientThrottle = new FailureThrottle('client', this.throttleStore, {
      perSubject: config.authClientMaxFailures,
      perIp: config.authClientMaxFailuresPerIp,
      windowMs,
    });
  }

  get em(): EntityManager {
    return this.services.db.em();
  }

  async start(): Promise<void> {
    try {
      const sealed = await this.keys.sealPlaintextKeys();
      if (sealed > 0) this.services.logger.info({ sealed }, 'sealed signing keys stored in plaintext');
      await this.keys.ensureKey();
      // Opens the signing key now: a wrong SECRETS_KEY stops the start with a clear error, not issuance later.
      await this.keys.signingKey(this.em);
      await this.keys.reload();
      await this.reloadDenyList();
    } catch (e) {
      // stop() is never called for a runtime that did not start: release the Redis connection here.
      await this.throttleStore.close();
      throw e;
    }
    // A revocation committed anywhere (a schema mutation, another process) carries the token's
    // expiry: deny it here as soon as the event arrives, not at the next deny-list reload.
    this.stopListening = this.services.bus.subscribe((event) => {
      if (event.type !== CREDENTIAL_REVOKED) return;
      const { credentialId, expiresAt } = event.payload as { credentialId?: unknown; expiresAt?: unknown };
      const until = typeof expiresAt === 'string' ? Date.parse(expiresAt) : NaN;
      if (typeof credentialId === 'string' && Number.isFinite(until)) this.denied.set(credentialId, until);
    });
    this.refreshTimer = setInterval(() => {
      // Revocations by other processes (or the CLI) arrive here within one interval.
      this.tick().catch((e) => this.services.logger.warn({ err: e }, 'auth housekeeping failed'));
    }, this.services.config.authDenyListRefreshMs);
    this.refreshTimer.unref();
  }

  async stop(): Promise<void> {
    if (this.refreshTimer) clearInterval(this.refreshTimer);
    this.refreshTimer = undefined;
    this.stopListening?.();
    await this.throttleStore.close();
  }

  private async tick(): Promise<void> {
    await this.reloadDenyList();
    if (Date.now() - this.lastPurge >= PURGE_EVERY_MS) {
      this.lastPurge = Date.now();
      await this.purgeExpired(this.services.clock.now());
    }
  }

  /** Rows that can no longer matter; every process may run this, the deletes are idempotent. */
  async purgeExpired(now: Date): Promise<void> {
    const em = this.em;
    await em.nativeDelete(AccessTokenRecord, { expiresAt: { $lte: now } });
    await em.nativeDelete(RefreshToken, { expiresAt: { $lte: now } });
    await em.nativeDelete(AuthSession, { expiresAt: { $lte: now } });
    await em.nativeDelete(AuthorizationCode, {
      expiresAt: { $lte: new Date(now.getTime() - CODE_RETENTION_MS) },
    });
  }

  async reloadDenyList(): Promise<void> {
    const now = this.services.clock.now();
    const rows = await this.em.find(
      AccessTokenRecord,
      { revokedAt: { $ne: null }, expiresAt: { $gt: now } },
      { fields: ['jti', 'expiresAt'] },
    );
    for (const row of rows) this.denied.set(row.jti, row.expiresAt.getTime());
    for (const [jti, exp] of this.denied) if (exp <= now.getTime()) this.denied.delete(jti);
  }

  /** After a revoking transaction commits: deny here at once, then tell live subscriptions. */
  async applyRevocation(revocation: Revocation): Promise<void> {
    for (const { jti, expiresAt } of revocation.denied) this.denied.set(jti, expiresAt.getTime());
    if (revocation.events.length > 0) await this.services.events.publish(revocation.events);
  }

  isDenied(jti: string): boolean {
    return this.denied.has(jti);
  }

  handles(token: string): boolean {
    return token.startsWith('eyJ') && token.split('.').length === 3;
  }

  async verify(token: string): Promise<Principal | null> {
    return (await this.verifyEntry(token))?.principal ?? null;
  }

  forgetAccount(accountId: string): void {
    this.cache.deleteWhere((entry) => entry.token.accountId === accountId);
  }

  /** The token's claims, or null when it is malformed, forged, expired or revoked. */
  async verifyToken(token: string): Promise<VerifiedToken | null> {
    return (await this.verifyEntry(token))?.token ?? null;
  }

  private async verifyEntry(token: string): Promise<CacheEntry | null> {
    const now = this.services.clock.now().getTime();
    let entry = this.cache.get(token);
    const cached = entry !== undefined;
    if (!entry) {
      const verified = await this.verifySignature(token);
      if (!verified) return null;
      const principal = await this.principalFor(verified);
      if (!principal) return null;
      entry = { token: verified, principal, planCheckedAt: now };
    }
    if (entry.token.exp * 1000 <= now || this.denied.has(entry.token.jti)) {
      this.cache.delete(token);
      return null;
    }
    if (now - entry.planCheckedAt > this.services.config.credentialCacheTtlMs) {
      const principal = await this.principalFor(entry.token);
      if (!principal) {
        this.cache.delete(token);
        return null;
      }
      entry = { ...entry, principal, planCheckedAt: now };
    } else if (cached) return entry;
    this.cache.set(token, entry);
    return entry;
  }

  private async verifySignature(token: string): Promise<VerifiedToken | null> {
    try {
      const { kid } = decodeProtectedHeader(token);
      const key = kid ? await this.keys.verificationKey(kid) : undefined;
      if (!key) return null;
      const { payload } = await jwtVerify(token, key, {
        algorithms: [SIGNING_ALG],
        typ: ACCESS_TOKEN_TYPE,
        issuer: this.issuer.issuer,
        audience: this.issuer.audience,
        currentDate: this.services.clock.now(),
        requiredClaims: ['jti', 'sub', 'exp', 'iat', 'client_id', 'account_id'],
      });
      const clientId = String(payload.client_id);
      return {
        jti: payload.jti!,
        sub: payload.sub!,
        clientId,
        accountId: String(payload.account_id),
        userId: payload.sub === clientId ? null : payload.sub!,
        scopes: typeof payload.scope === 'string' ? payload.scope.split(' ').filter(Boolean) : [],
        iat: payload.iat!,
        exp: payload.exp!,
        iss: payload.iss!,
        aud: this.issuer.audience,
      };
    } catch {
      return null;
    }
  }

  /** The plan is the account's current one (an upgrade applies to live tokens), re-read every cache TTL. */
  private async principalFor(token: VerifiedToken): Promise<Principal | null> {
    const account = await this.em.findOne(Account, { id: token.accountId }, { fields: ['plan'] });
    if (!account) return null;
    return {
      accountId: token.accountId,
      plan: account.plan,
      // Identity scopes (openid, profile, email) govern userinfo, not the API.
      scopes: new Set(token.scopes.filter((s) => !isIdentityScope(s))),
      credential: { kind: 'oauth_token', id: token.jti, expiresAt: new Date(token.exp * 1000) },
      ...(token.userId ? { userId: token.userId } : {}),
      clientId: token.clientId,
    };
  }
}
