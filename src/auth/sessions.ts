import type { EntityManager } from '@mikro-orm/knex';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { User } from '../accounts/entities.js';
import type { Clock } from '../kernel/clock.js';
import type { Principal } from '../kernel/principal.js';
import { DEFAULT_KEY_SCOPES, SESSION_ONLY_SCOPES } from '../kernel/scopes.js';
import { constantTimeEqual, newSecret, sha256Hex } from '../kernel/crypto.js';
import type { SecretBox } from '../kernel/secret-box.js';
import { AuthorizationCode, AuthSession, RefreshToken } from './entities.js';
import { revokeTokens, type Revocation } from './tokens.js';
import type { ServiceDeps } from '../kernel/deps.js';

export const SESSION_COOKIE = 'tg_session';
/** Double-submit token for the sign-in form, which is posted before any session exists. */
export const LOGIN_CSRF_COOKIE = 'tg_login_csrf';

export interface CookieSecurity {
  secure: boolean;
}

function cookieOptions(security: CookieSecurity, maxAgeSeconds?: number) {
  return {
    path: '/',
    httpOnly: true,
    sameSite: 'lax' as const,
    secure: security.secure,
    ...(maxAgeSeconds !== undefined ? { maxAge: maxAgeSeconds } : {}),
  };
}

export interface SignedIn {
  session: AuthSession;
  user: User;
}

/**
 * The signed-in user as a caller of the gateway: the console runs its operations with this
 * principal, so the schema's scope and plan rules, admission and audit apply to it as to a key.
 * A user holds every scope a new key gets, and `admin` with the admin role.
 */
export function sessionPrincipal({ session, user }: SignedIn): Principal {
  return {
    accountId: user.account.id,
    plan: user.account.plan,
    scopes: new Set([
      ...DEFAULT_KEY_SCOPES,
      ...SESSION_ONLY_SCOPES,
      ...(user.roles.includes('admin') ? ['admin'] : []),
    ]),
    credential: { kind: 'session', id: session.id, expiresAt: session.expiresAt },
    userId: user.id,
  };
}

export async function startSession(
  { em, clock }: Pick<ServiceDeps, 'em' | 'clock'>,
  ttlMs: number,
  user: User,
  reply: FastifyReply,
  security: CookieSecurity,
): Promise<void> {
  const token = newSecret('', 32);
  const now = clock.now();
  em.persist(
    em.create(AuthSession, {
      tokenHash: sha256Hex(token),
      userId: user.id,
      accountId: user.account.id,
      csrfToken: newSecret('', 24),
      expiresAt: new Date(now.getTime() + ttlMs),
      createdAt: now,
    }),
  );
  await em.flush();
  reply.setCookie(SESSION_COOKIE, token, cookieOptions(security, Math.floor(ttlMs / 1000)));
}

export async function currentSession(
  { em, clock }: Pick<ServiceDeps, 'em' | 'clock'>,
  request: FastifyRequest,
): Promise<SignedIn | null> {
  const token = request.cookies[SESSION_COOKIE];
  if (!token) return null;
  const session = await em.findOne(AuthSession, { tokenHash: sha256Hex(token) });
  if (!session || session.expiresAt.getTime() <= clock.now().getTime()) return null;
  const user = await em.findOne(User, { id: session.userId }, { populate: ['account'] });
  return user ? { session, user } : null;
}

export async function endSession(
  em: EntityManager,
  request: FastifyRequest,
  reply: FastifyReply,
  security: CookieSecurity,
): Promise<void> {
  const token = request.cookies[SESSION_COOKIE];
  if (token) await em.nativeDelete(AuthSession, { tokenHash: sha256Hex(token) });
  reply.clearCookie(SESSION_COOKIE, cookieOptions(security));
}

/** What ending a user's sign-ins changed. */
export interface EndedSignIns {
  /** Console sessions deleted. */
  sessions: number;
  /** OAuth grants (refresh-token families) that still had a live refresh token, now revoked. */
  grants: number;
  /** Access tokens denied, with the credential.revoked events staged for them. */
  revocation: Revocation;
}

/**
 * Ends everything a user's password opened, inside the caller's transaction (a password reset):
 * the console sessions, the refresh tokens and the still-valid access tokens issued through the
 * user's consent, and authorization codes not yet exchanged. Used codes are kept so that a later
 * replay is still recognised as reuse.
 */
export async function endUserSignIns(
  em: EntityManager,
  deps: Pick<ServiceDeps, 'clock' | 'events'>,
  userId: string,
): Promise<EndedSignIns> {
  const now = deps.clock.now();
  const sessions = await em.nativeDelete(AuthSession, { userId });
  const live = await em.find(
    RefreshToken,
    { userId, revokedAt: null, usedAt: null, expiresAt: { $gt: now } },
    { fields: ['familyId'] },
  );
  await em.nativeDelete(AuthorizationCode, { userId, usedAt: null });
  const revocation = await revokeTokens(em, deps, { refreshTokens: { userId }, accessTokens: { userId } });
  return { sessions, grants: new Set(live.map((r) => r.familyId)).size, revocation };
}

export function sessionCsrfValid(signedIn: SignedIn, presented: unknown): boolean {
  return typeof presented === 'string' && constantTimeEqual(presented, signedIn.session.csrfToken);
}

/** The sign-in form's CSRF token: reuses the cookie's value or sets a new one. */
export function loginCsrfToken(
  request: FastifyRequest,
  reply: FastifyReply,
  security: CookieSecurity,
): string {
  const existing = request.cookies[LOGIN_CSRF_COOKIE];
  if (existing && /^[A-Za-z0-9_-]{32,}$/.test(existing)) return existing;
  const token = newSecret('', 24);
  reply.setCookie(LOGIN_CSRF_COOKIE, token, cookieOptions(security));
  return token;
}

export function loginCsrfValid(request: FastifyRequest, presented: unknown): boolean {
  const cookie = request.cookies[LOGIN_CSRF_COOKIE];
  return typeof presented === 'string' && !!cookie && constantTimeEqual(presented, cookie);
}

/** How long a flash waits for the page the redirect leads to; a browser follows at once. */
const FLASH_TTL_MS = 5 * 60 * 1000;

/** Keeps `value` (sealed) in the session for the next page, replacing any earlier flash. */
export async function setFlash(
  { em, clock }: Pick<ServiceDeps, 'em' | 'clock'>,
  box: SecretBox,
  session: AuthSession,
  value: unknown,
): Promise<void> {
  const sealed = box.seal(JSON.stringify({ expiresAt: clock.now().getTime() + FLASH_TTL_MS, value }));
  await em.nativeUpdate(AuthSession, { id: session.id }, { flash: sealed });
}

/**
 * The session's flash, at most once: it is cleared with a conditional update, so of two
 * concurrent reads (two tabs, a reload racing the first load) only one gets it.
 */
export async function takeFlash<T>(
  em: EntityManager,
  clock: Clock,
  box: SecretBox,
  session: AuthSession,
): Promise<T | null> {
  const sealed = session.flash;
  if (!sealed) return null;
  const taken = await em.nativeUpdate(AuthSession, { id: session.id, flash: sealed }, { flash: null });
  if (taken !== 1) return null;
  const { expiresAt, value } = JSON.parse(box.open(sealed)) as { expiresAt: number; value: T };
  return expiresAt > clock.now().getTime() ? value : null;
}
