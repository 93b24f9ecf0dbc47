import type { EntityManager } from '@mikro-orm/knex';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { User } from '../accounts/entities.js';
import type { Clock } from '../kernel/clock.js';
import { constantTimeEqual, newSecret, sha256Hex } from '../kernel/crypto.js';
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
