import type { FastifyReply, FastifyRequest } from 'fastify';
import { User } from '../accounts/entities.js';
import { extractCredential } from '../gateway/doors/credentials.js';
import { OAuthError } from './oauth-error.js';
import type { AuthRuntime } from './runtime.js';

const REALM = 'Bearer realm="tidegate"';

/**
 * RFC 6750 §3.1: a request that sent no token gets a challenge with no error code. The body keeps
 * the endpoint's one JSON error shape (`invalid_token`, as for every other 401 here).
 */
const tokenRequired = (): OAuthError =>
  new OAuthError('invalid_token', 'A user access token is required (Authorization: Bearer …)', 401, {
    'WWW-Authenticate': REALM,
  });

const invalidToken = (): OAuthError =>
  new OAuthError('invalid_token', 'The access token is invalid, expired, revoked or not a user token', 401, {
    'WWW-Authenticate': `${REALM}, error="invalid_token", error_description="The access token is invalid, expired, revoked or not a user token"`,
  });

/**
 * GET|POST /oauth/userinfo: the user behind a user token (client_credentials tokens have none).
 * `sub`, `account_id` and `plan` always (the token already names the account it acts for);
 * `name` with `profile`; `email` and `email_verified` with `email`.
 */
export async function userinfoEndpoint(
  runtime: AuthRuntime,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<object> {
  reply.header('cache-control', 'no-store');
  const presented = extractCredential(request.headers);
  if (!presented) throw tokenRequired();
  if (presented === 'malformed' || presented.presentation !== 'bearer') throw invalidToken();
  const token = runtime.handles(presented.secret) ? await runtime.verifyToken(presented.secret) : null;
  if (!token?.userId) throw invalidToken();
  const user = await runtime.em.findOne(User, { id: token.userId }, { populate: ['account'] });
  if (!user) throw invalidToken();
  const granted = new Set(token.scopes);
  return {
    sub: user.id,
    ...(granted.has('profile') ? { name: user.name } : {}),
    // Addresses are typed in by operators and never confirmed by mail: not verified.
    ...(granted.has('email') ? { email: user.email, email_verified: false } : {}),
    account_id: user.account.id,
    plan: user.account.plan,
  };
}
