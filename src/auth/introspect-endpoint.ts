import type { FastifyReply, FastifyRequest } from 'fastify';
import { clientRequest } from './client-auth.js';
import type { OAuthClient } from './entities.js';
import { requireParam } from './form.js';
import { invalidClient } from './oauth-error.js';
import type { AuthRuntime } from './runtime.js';
import { findRefreshToken, REFRESH_TOKEN_PREFIX } from './tokens.js';

const INACTIVE = { active: false } as const;

/**
 * Who may learn about a token: the client it was issued to, and the confidential clients of the
 * account it acts for (that account's own resource servers). Anyone else — another tenant
 * probing — hears `active: false`, exactly as for an unknown token.
 */
function mayIntrospect(caller: OAuthClient, token: { clientId: string; accountId: string }): boolean {
  return token.clientId === caller.clientId || token.accountId === caller.accountId;
}

/**
 * POST /oauth/introspect (RFC 7662) for resource servers. The caller must authenticate as a
 * confidential client (§2.1): a public client proves nothing by sending its public client_id.
 */
export async function introspectEndpoint(
  runtime: AuthRuntime,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<object> {
  const { form, client: caller } = await clientRequest(runtime, request, reply);
  if (!caller.confidential) {
    throw invalidClient('introspection requires a confidential client authenticated with its secret');
  }
  const token = requireParam(form, 'token');
  const now = runtime.services.clock.now().getTime();

  if (token.startsWith(REFRESH_TOKEN_PREFIX)) {
    const refresh = await findRefreshToken(runtime.em, token);
    if (!refresh || !mayIntrospect(caller, refresh)) return INACTIVE;
    if (refresh.usedAt || refresh.revokedAt || refresh.expiresAt.getTime() <= now) return INACTIVE;
    // RFC 7662 §2.2: token_type is an access token's type (RFC 6749 §7.1); a refresh token has none.
    return {
      active: true,
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
  if (!access || !mayIntrospect(caller, access)) return INACTIVE;
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
