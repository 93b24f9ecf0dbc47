import type { FastifyReply, FastifyRequest } from 'fastify';
import { authenticateCaller } from './client-auth.js';
import { formBody, requireParam } from './form.js';
import type { AuthRuntime } from './runtime.js';
import {
  findRefreshToken,
  revokeFamily,
  revokeTokens,
  REFRESH_TOKEN_PREFIX,
  type Revocation,
} from './tokens.js';

/**
 * POST /oauth/revoke (RFC 7009). 200 with an empty body whether or not the token existed, so the
 * answer tells nothing about tokens. A token issued to another client is left alone, also with 200.
 * token_type_hint is accepted but not needed: the two token kinds look different.
 */
export async function revokeEndpoint(
  runtime: AuthRuntime,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<string> {
  reply.header('cache-control', 'no-store');
  const form = formBody(request);
  const client = await authenticateCaller(runtime, request, form);
  const token = requireParam(form, 'token');
  const { clock } = runtime.services;

  let revocation: Revocation | null = null;
  if (token.startsWith(REFRESH_TOKEN_PREFIX)) {
    const refresh = await findRefreshToken(runtime.em, token);
    if (refresh && refresh.clientId === client.clientId) {
      revocation = await runtime.em.transactional((tx) => revokeFamily(tx, clock, refresh.familyId));
    }
  } else if (runtime.handles(token)) {
    const access = await runtime.verifyToken(token);
    if (access && access.clientId === client.clientId) {
      revocation = await runtime.em.transactional((tx) =>
        revokeTokens(tx, clock, { accessTokens: { jti: access.jti } }),
      );
    }
  }
  if (revocation) await runtime.applyRevocation(revocation);
  return '';
}
