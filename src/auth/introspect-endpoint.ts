import type { FastifyReply, FastifyRequest } from 'fastify';
import { authenticateCaller } from './client-auth.js';
import { formBody, requireParam } from './form.js';
import type { AuthRuntime } from './runtime.js';
import { findRefreshToken, REFRESH_TOKEN_PREFIX } from './tokens.js';

const INACTIVE = { active: false } as const;

/**
 * POST /oauth/introspect (RFC 7662) for resource servers. The caller authenticates as a client;
 * it learns about tokens of its own account only (anything else is `active: false`), so one
 * tenant cannot probe another's tokens.
 */
export async function introspectEndpoint(
  runtime: AuthRuntime,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<object> {
  reply.header('cache-control', 'no-store');
  const form = formBody(request);
  const caller = await authenticateCaller(runtime, request, form);
  const token = requireParam(form, 'token');
  const now = runtime.services.clock.now().getTime();

  if (token.startsWith(REFRESH_TOKEN_PREFIX)) {
    const refresh = await findRefreshToken(runtime.em, token);
    if (!refresh || refresh.accountId !== caller.accountId) return INACTIVE;
    if (refresh.usedAt || refresh.revokedAt || refresh.expiresAt.getTime() <= now) return INACTIVE;
    return {
      active: true,
      token_type: 'refresh_token',
      scope: refresh.scopes.join(' '),
      client_id: refresh.clientId,
      sub: refresh.userId,
      account_id: refresh.accountId,
      iat: Math.floor(refresh.createdAt.getTime() / 1000),
      exp: Math.floor(refresh.expiresAt.getTime() / 1000),
      iss: runtime.issuer.issuer,
    };
  }
  const access = runtime.handles(token) ? await runtime.verifyToken(token) : null;
  if (!access || access.accountId !== caller.accountId) return INACTIVE;
  return {
    active: true,
    token_type: 'Bearer',
    scope: access.scopes.join(' '),
    client_id: access.clientId,
    sub: access.sub,
    account_id: access.accountId,
    iat: access.iat,
    exp: access.exp,
    iss: access.iss,
    aud: access.aud,
    jti: access.jti,
  };
}
