import type { EntityManager } from '@mikro-orm/knex';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { User } from '../accounts/entities.js';
import type { Clock } from '../kernel/clock.js';
import { constantTimeEqual, newSecret, sha256Hex } from '../kernel/crypto.js';
import type { SecretBox } from '../kernel/secret-box.js';
import { AuthSession } from './entities.js';

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

export async function startSession(
  em: EntityManager,
  clock: Clock,
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
  em: EntityManager,
  clock: Clock,
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
  em: EntityManager,
  clock: Clock,
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
