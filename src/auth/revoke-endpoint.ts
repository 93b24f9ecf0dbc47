import type { FastifyReply, FastifyRequest } from 'fastify';
import { clientRequest } from './client-auth.js';
import type { OAuthClient } from './entities.js';
import { requireParam } from './form.js';
import { OAuthError } from './oauth-error.js';
import type { AuthRuntime } from './runtime.js';
import {
  findRefreshToken,
  revokeFamily,
  revokeTokens,
  REFRESH_TOKEN_PREFIX,
  type Revocation,
} from './tokens.js';

/** RFC 7009 §2.1: a client may revoke only what was issued to it; anything else is refused. */
function checkIssuedToCaller(caller: OAuthClient, token: { clientId: string }): void {
  if (token.clientId !== caller.clientId) {
    throw new OAuthError('unauthorized_client', 'the token was not issued to this client');
  }
}

/**
 * POST /oauth/revoke (RFC 7009). 200 with an empty body for the caller's tokens and for tokens
 * that are unknown (§2.2: nothing left to do). A token we can tell was issued to another client
 * is refused with 400 unauthorized_client and left alone: a refresh token in any state (live,
 * rotated, revoked or expired, until its row is purged), an access token while it still verifies
 * (an expired or revoked JWT is indistinguishable from an unknown one, so it gets 200). Public
 * clients revoke with their client_id. token_type_hint is accepted but not needed: the two kinds
 * look different.
 */
export async function revokeEndpoint(
  runtime: AuthRuntime,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<string> {
  const { form, client } = await clientRequest(runtime, request, reply);
  const token = requireParam(form, 'token');
  const { clock, events } = runtime.services;

  let revocation: Revocation | null = null;
  if (token.startsWith(REFRESH_TOKEN_PREFIX)) {
    const refresh = await findRefreshToken(runtime.em, token);
    if (refresh) {
      checkIssuedToCaller(client, refresh);
      revocation = await runtime.em.transactional((tx) =>
        revokeFamily(tx, { clock, events }, refresh.familyId),
      );
    }
  } else if (runtime.handles(token)) {
    const access = await runtime.verifyToken(token);
    if (access) {
      checkIssuedToCaller(client, access);
      revocation = await runtime.em.transactional((tx) =>
        revokeTokens(tx, { clock, events }, { accessTokens: { jti: access.jti } }),
      );
    }
  }
  if (revocation) await runtime.applyRevocation(revocation);
  return '';
}
