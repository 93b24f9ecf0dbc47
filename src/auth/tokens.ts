import { createHash, randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/knex';
import { SignJWT } from 'jose';
import type { DomainEvent } from '../kernel/events.js';
import { stageEvents } from '../events/stage.js';
import type { ServiceDeps } from '../kernel/deps.js';
import type { Clock } from '../kernel/clock.js';
import { newSecret, sha256Hex } from '../kernel/crypto.js';
import { AccessTokenRecord, AuthorizationCode, OAuthClient, RefreshToken } from './entities.js';
import { SIGNING_ALG, type KeyStore } from './keys.js';
import { ACCESS_TOKEN_TTL_SECONDS, ID_TOKEN_TTL_SECONDS, REFRESH_TOKEN_TTL_MS } from './lifetimes.js';

export const REFRESH_TOKEN_PREFIX = 'tgr_';
export const ACCESS_TOKEN_TYPE = 'at+jwt';

/** The token endpoint's answer, exactly as the seed's token table. */
export interface TokenResponse {
  access_token: string;
  token_type: 'Bearer';
  expires_in: number;
  refresh_token?: string;
  scope: string;
  /** OpenID Connect, when the code grant holds `openid`. */
  id_token?: string;
}

export interface Grant {
  client: OAuthClient;
  /** Null for client_credentials: the token acts for the client's account, not a user. */
  userId: string | null;
  accountId: string;
  scopes: string[];
  familyId?: string | null;
  codeId?: string | null;
}

export interface Issuer {
  clock: Clock;
  keys: KeyStore;
  issuer: string;
  audience: string;
}

/** Signs an RFC 9068 access token and records its jti (for revocation by code, family or client). */
export async function issueAccessToken(em: EntityManager, issuer: Issuer, grant: Grant): Promise<string> {
  const now = issuer.clock.now();
  const iat = Math.floor(now.getTime() / 1000);
  const exp = iat + ACCESS_TOKEN_TTL_SECONDS;
  const jti = randomUUID();
  const { kid, key } = await issuer.keys.signingKey(em);
  const token = await new SignJWT({
    client_id: grant.client.clientId,
    scope: grant.scopes.join(' '),
    account_id: grant.accountId,
  })
    .setProtectedHeader({ alg: SIGNING_ALG, kid, typ: ACCESS_TOKEN_TYPE })
    .setIssuer(issuer.issuer)
    .setSubject(grant.userId ?? grant.client.clientId)
    .setAudience(issuer.audience)
    .setJti(jti)
    .setIssuedAt(iat)
    .setExpirationTime(exp)
    .sign(key);
  em.persist(
    em.create(AccessTokenRecord, {
      jti,
      clientId: grant.client.clientId,
      userId: grant.userId,
      accountId: grant.accountId,
      familyId: grant.familyId ?? null,
      codeId: grant.codeId ?? null,
      expiresAt: new Date(exp * 1000),
      revokedAt: null,
      createdAt: now,
    }),
  );
  return token;
}

/** What an ID token states about a sign-in (OpenID Connect Core §2). */
export interface SignIn {
  clientId: string;
  userId: string;
  /** When the user authenticated; null only for codes issued before it was recorded. */
  authTime: Date | null;
  nonce: string | null;
  /** The access token issued beside it, bound by `at_hash`. */
  accessToken: string;
}

/**
 * An OpenID Connect ID token: signed with the same key as access tokens but for the client
 * (`aud` = client_id) and typed `JWT`, so the gateway's verifier, which requires `at+jwt` and
 * its own audience, never takes one for an access token. Identity claims beyond `sub` are
 * served by userinfo, according to the granted scopes.
 */
export async function issueIdToken(em: EntityManager, issuer: Issuer, signIn: SignIn): Promise<string> {
  const iat = Math.floor(issuer.clock.now().getTime() / 1000);
  const { kid, key } = await issuer.keys.signingKey(em);
  // §3.1.3.6: the left half of the SHA-256 of the access token's ASCII, base64url.
  const atHash = createHash('sha256').update(signIn.accessToken, 'ascii').digest().subarray(0, 16);
  return new SignJWT({
    at_hash: atHash.toString('base64url'),
    ...(signIn.authTime ? { auth_time: Math.floor(signIn.authTime.getTime() / 1000) } : {}),
    ...(signIn.nonce !== null ? { nonce: signIn.nonce } : {}),
  })
    .setProtectedHeader({ alg: SIGNING_ALG, kid, typ: 'JWT' })
    .setIssuer(issuer.issuer)
    .setSubject(signIn.userId)
    .setAudience(signIn.clientId)
    .setIssuedAt(iat)
    .setExpirationTime(iat + ID_TOKEN_TTL_SECONDS)
    .sign(key);
}

/** A new member of a refresh-token family; the secret is returned, its hash stored. */
export function issueRefreshToken(
  { em, clock }: Pick<ServiceDeps, 'em' | 'clock'>,
  grant: Grant & { familyId: string; userId: string },
): string {
  const secret = newSecret(REFRESH_TOKEN_PREFIX, 32);
  const now = clock.now();
  em.persist(
    em.create(RefreshToken, {
      tokenHash: sha256Hex(secret),
      familyId: grant.familyId,
      clientId: grant.client.clientId,
      userId: grant.userId,
      accountId: grant.accountId,
      scopes: grant.scopes,
      codeId: grant.codeId ?? null,
      expiresAt: new Date(now.getTime() + REFRESH_TOKEN_TTL_MS),
      usedAt: null,
      revokedAt: null,
      createdAt: now,
    }),
  );
  return secret;
}

export async function findRefreshToken(em: EntityManager, secret: string): Promise<RefreshToken | null> {
  if (!secret.startsWith(REFRESH_TOKEN_PREFIX)) return null;
  return em.findOne(RefreshToken, { tokenHash: sha256Hex(secret) });
}

export async function findCode(em: EntityManager, code: string): Promise<AuthorizationCode | null> {
  return em.findOne(AuthorizationCode, { codeHash: sha256Hex(code) });
}

/** Time, and where the staged `credential.revoked` events go (see ServiceDeps). */
type EventDeps = Pick<ServiceDeps, 'clock' | 'events'>;

/** What a revocation changed: the jtis to deny (with their expiry) and the events to publish after commit. */
export interface Revocation {
  denied: Array<{ jti: string; expiresAt: Date }>;
  events: DomainEvent[];
}

export const NOTHING_REVOKED: Revocation = { denied: [], events: [] };

/**
 * Revokes the still-valid access tokens matching `where` and refresh tokens matching
 * `refreshWhere`, inside the caller's transaction, staging one credential.revoked event per
 * access token so live subscriptions using it are closed.
 */
export async function revokeTokens(
  em: EntityManager,
  deps: EventDeps,
  where: { accessTokens?: object; refreshTokens?: object },
): Promise<Revocation> {
  const now = deps.clock.now();
  if (where.refreshTokens) {
    await em.nativeUpdate(RefreshToken, { ...where.refreshTokens, revokedAt: null }, { revokedAt: now });
  }
  if (!where.accessTokens) return NOTHING_REVOKED;
  const rows = await em.find(AccessTokenRecord, {
    ...where.accessTokens,
    revokedAt: null,
    expiresAt: { $gt: now },
  });
  if (rows.length === 0) return NOTHING_REVOKED;
  await em.nativeUpdate(AccessTokenRecord, { jti: { $in: rows.map((r) => r.jti) } }, { revokedAt: now });
  const events = await stageEvents(
    em,
    deps,
    rows.map((r) => ({
      type: 'credential.revoked',
      accountId: r.accountId,
      // The expiry lets every process deny the token until then, whoever revoked it.
      payload: { credentialId: r.jti, expiresAt: r.expiresAt.toISOString() },
    })),
  );
  return { denied: rows.map((r) => ({ jti: r.jti, expiresAt: r.expiresAt })), events };
}

/** Refresh reuse or revocation of a refresh token: the whole family and everything issued from it. */
export function revokeFamily(em: EntityManager, deps: EventDeps, familyId: string): Promise<Revocation> {
  return revokeTokens(em, deps, { refreshTokens: { familyId }, accessTokens: { familyId } });
}

/** Code reuse (RFC 6749 §4.1.2): every token issued from that code, including later rotations. */
export async function revokeCodeDescendants(
  em: EntityManager,
  deps: EventDeps,
  codeId: string,
): Promise<Revocation> {
  const families = await em.find(RefreshToken, { codeId }, { fields: ['familyId'] });
  const familyIds = [...new Set(families.map((f) => f.familyId))];
  return revokeTokens(em, deps, {
    refreshTokens: { codeId },
    accessTokens: familyIds.length > 0 ? { $or: [{ codeId }, { familyId: { $in: familyIds } }] } : { codeId },
  });
}

/** Deletes a client and revokes everything issued to it. */
export async function deleteClient(
  em: EntityManager,
  deps: EventDeps,
  client: OAuthClient,
): Promise<Revocation> {
  return em.transactional(async (tx) => {
    const revocation = await revokeTokens(tx, deps, { accessTokens: { clientId: client.clientId } });
    await tx.nativeDelete(RefreshToken, { clientId: client.clientId });
    await tx.nativeDelete(AuthorizationCode, { clientId: client.clientId });
    await tx.nativeDelete(OAuthClient, { id: client.id });
    return revocation;
  });
}
