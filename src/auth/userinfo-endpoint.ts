import type { FastifyReply, FastifyRequest } from 'fastify';
import { User } from '../accounts/entities.js';
import { extractCredential } from '../gateway/doors/credentials.js';
import { OAuthError } from './oauth-error.js';
import type { AuthRuntime } from './runtime.js';

const invalidToken = (): OAuthError =>
  new OAuthError(
    'invalid_token',
    'The access token is missing, invalid, expired, revoked or not a user token',
    401,
    {
      'WWW-Authenticate':
        'Bearer realm="tidegate", error="invalid_token", error_description="The access token is missing, invalid, expired, revoked or not a user token"',
    },
  );

/** GET|POST /oauth/userinfo: the user behind a user token (client_credentials tokens have none). */
export async function userinfoEndpoint(
  runtime: AuthRuntime,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<object> {
  reply.header('cache-control', 'no-store');
  const presented = extractCredential(request.headers);
  if (!presented || presented === 'malformed' || presented.presentation !== 'bearer') throw invalidToken();
  const token = runtime.handles(presented.secret) ? await runtime.verifyToken(presented.secret) : null;
  if (!token?.userId) throw invalidToken();
  const user = await runtime.em.findOne(User, { id: token.userId }, { populate: ['account'] });
  if (!user) throw invalidToken();
  return {
    sub: user.id,
    email: user.email,
    name: user.name,
    account_id: user.account.id,
    plan: user.account.plan,
  };
}
