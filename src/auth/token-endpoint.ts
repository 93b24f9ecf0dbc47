import { createHash, randomUUID } from 'node:crypto';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { EntityManager } from '@mikro-orm/knex';
import { constantTimeEqual } from '../kernel/crypto.js';
import {
  GRANT_SCOPES,
  IDENTITY_SCOPES,
  isIdentityScope,
  normalizeGrantScope,
  type GrantScope,
} from '../kernel/scopes.js';
import { clientRequest } from './client-auth.js';
import { GRANT_TYPES, type GrantType } from './clients.js';
import { AuthorizationCode, RefreshToken, type OAuthClient } from './entities.js';
import { requireParam, type Form } from './form.js';
import { invalidGrant, invalidRequest, invalidScope, OAuthError } from './oauth-error.js';
import type { AuthRuntime } from './runtime.js';
import {
  findCode,
  findRefreshToken,
  issueAccessToken,
  issueIdToken,
  issueRefreshToken,
  revokeCodeDescendants,
  revokeFamily,
  type Grant,
  type TokenResponse,
} from './tokens.js';
import { ACCESS_TOKEN_TTL_SECONDS } from './lifetimes.js';

/**
 * POST /oauth/token. The whole flow, in order:
 *   form → client authentication (throttled) → grant_type known → grant enabled for client → grant.
 */
export async function tokenEndpoint(
  runtime: AuthRuntime,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<TokenResponse> {
  // RFC 6749 §5.1 asks the token response for Pragma as well, for HTTP/1.0 caches.
  reply.header('pragma', 'no-cache');
  const { form, client } = await clientRequest(runtime, request, reply);
  const grantType = checkGrantTypeKnown(form);
  checkGrantEnabled(client, grantType);
  return GRANTS[grantType](runtime, client, form);
}

function checkGrantTypeKnown(form: Form): GrantType {
  const grantType = requireParam(form, 'grant_type');
  if (!(GRANT_TYPES as readonly string[]).includes(grantType)) {
    throw new OAuthError('unsupported_grant_type', `grant_type '${grantType}' is not supported`);
  }
  return grantType as GrantType;
}

function checkGrantEnabled(client: OAuthClient, grantType: GrantType): void {
  if (!client.grantTypes.includes(grantType)) {
    throw new OAuthError('unauthorized_client', `grant_type '${grantType}' is not enabled for this client`);
  }
}

const GRANTS: Record<
  GrantType,
  (runtime: AuthRuntime, client: OAuthClient, form: Form) => Promise<TokenResponse>
> = {
  authorization_code: authorizationCodeGrant,
  refresh_token: refreshTokenGrant,
  client_credentials: clientCredentialsGrant,
};

const IDENTITY = Object.keys(IDENTITY_SCOPES);

/** RFC 7636 §4.1: 43–128 unreserved characters. */
const CODE_VERIFIER = /^[A-Za-z0-9\-._~]{43,128}$/;

async function authorizationCodeGrant(
  runtime: AuthRuntime,
  client: OAuthClient,
  form: Form,
): Promise<TokenResponse> {
  const presentedCode = requireParam(form, 'code');
  const redirectUri = requireParam(form, 'redirect_uri');
  const verifier = requireParam(form, 'code_verifier');
  if (!CODE_VERIFIER.test(verifier))
    throw invalidRequest('code_verifier must be 43-128 characters of [A-Za-z0-9-._~]');

  const code = await findCode(runtime.em, presentedCode);
  if (!code || code.clientId !== client.clientId) throw invalidGrant('the authorization code is invalid');
  if (code.usedAt) await rejectCodeReuse(runtime, code);
  if (code.expiresAt.getTime() <= runtime.services.clock.now().getTime()) {
    throw invalidGrant('the authorization code has expired; restart the authorization flow');
  }
  if (code.redirectUri !== redirectUri)
    throw invalidGrant('redirect_uri does not match the one in the authorization request');
  if (!constantTimeEqual(s256(verifier), code.codeChallenge))
    throw invalidGrant('code_verifier does not match the code_challenge');

  const familyId = randomUUID();
  const grant: Grant = {
    client,
    userId: code.userId,
    accountId: code.accountId,
    scopes: code.scopes,
    familyId,
    codeId: code.id,
  };
  const issued = await runtime.em.transactional(async (tx) => {
    if (!(await claim(tx, AuthorizationCode, code.id, runtime))) return null;
    const response = await issue(tx, runtime, grant, client.grantTypes.includes('refresh_token'));
    if (!code.scopes.includes('openid')) return response;
    const signIn = {
      clientId: client.clientId,
      userId: code.userId,
      authTime: code.authTime ?? null,
      nonce: code.nonce ?? null,
      accessToken: response.access_token,
    };
    return { ...response, id_token: await issueIdToken(tx, runtime.issuer, signIn) };
  });
  // Lost a race with a concurrent exchange of the same code: that is reuse too.
  return issued ?? rejectCodeReuse(runtime, code);
}

async function rejectCodeReuse(runtime: AuthRuntime, code: AuthorizationCode): Promise<never> {
  const revocation = await runtime.em.transactional((tx) =>
    revokeCodeDescendants(tx, runtime.services, code.id),
  );
  await runtime.applyRevocation(revocation);
  throw invalidGrant('the authorization code was already used; every token issued from it has been revoked');
}

async function refreshTokenGrant(
  runtime: AuthRuntime,
  client: OAuthClient,
  form: Form,
): Promise<TokenResponse> {
  const presented = requireParam(form, 'refresh_token');
  const token = await findRefreshToken(runtime.em, presented);
  if (!token || token.clientId !== client.clientId) throw invalidGrant('the refresh token is invalid');
  if (token.revokedAt) throw invalidGrant('the refresh token has been revoked');
  if (token.usedAt) await rejectRefreshReuse(runtime, token);
  if (token.expiresAt.getTime() <= runtime.services.clock.now().getTime())
    throw invalidGrant('the refresh token has expired');
  const scopes =
    form.scope === undefined ? token.scopes : requestedScopes(form.scope, token.scopes, 'the original grant');

  const grant = {
    client,
    userId: token.userId,
    accountId: token.accountId,
    familyId: token.familyId,
    codeId: token.codeId,
  };
  const issued = await runtime.em.transactional(async (tx) => {
    if (!(await claim(tx, RefreshToken, token.id, runtime))) return null;
    // The new refresh token keeps the family's grant (RFC 6749 §6); only the access token narrows.
    const refreshToken = issueRefreshToken(
      { em: tx, clock: runtime.services.clock },
      { ...grant, scopes: token.scopes },
    );
    const accessToken = await issueAccessToken(tx, runtime.issuer, { ...grant, scopes });
    return tokenResponse(accessToken, scopes, refreshToken);
  });
  return issued ?? rejectRefreshReuse(runtime, token);
}

async function rejectRefreshReuse(runtime: AuthRuntime, token: RefreshToken): Promise<never> {
  const revocation = await runtime.em.transactional((tx) =>
    revokeFamily(tx, runtime.services, token.familyId),
  );
  await runtime.applyRevocation(revocation);
  throw invalidGrant('the refresh token was already used; the whole token family has been revoked');
}

async function clientCredentialsGrant(
  runtime: AuthRuntime,
  client: OAuthClient,
  form: Form,
): Promise<TokenResponse> {
  if (!client.confidential)
    throw new OAuthError('unauthorized_client', 'client_credentials needs a confidential client');
  const scopes =
    form.scope === undefined
      ? client.scopes
      : requestedScopes(form.scope, [...client.scopes, ...IDENTITY], "the client's allowed scopes");
  const identity = scopes.filter(isIdentityScope);
  if (identity.length > 0)
    throw invalidScope(`${identity.join(', ')} describe a signed-in user; client_credentials has none`);
  return runtime.em.transactional((tx) =>
    issue(tx, runtime, { client, userId: null, accountId: client.accountId, scopes }, false),
  );
}

/**
 * Canonical names of a requested scope string that must stay within `allowed`. Identity scopes
 * (`openid`, `profile`, `email`) are known here but allowed only where `allowed` holds them.
 */
export function requestedScopes(raw: string, allowed: readonly string[], allowedName: string): GrantScope[] {
  const tokens = raw.split(' ').filter(Boolean);
  if (tokens.length === 0) throw invalidScope('scope must name at least one scope');
  const unknown = tokens.filter((t) => normalizeGrantScope(t) === undefined);
  if (unknown.length > 0) throw invalidScope(`unknown scope: ${unknown.join(', ')}`);
  const wanted = new Set(tokens.map((t) => normalizeGrantScope(t)!));
  const beyond = [...wanted].filter((s) => !allowed.includes(s));
  if (beyond.length > 0) throw invalidScope(`scope exceeds ${allowedName}: ${beyond.join(', ')}`);
  return GRANT_SCOPES.filter((s) => wanted.has(s));
}

/** Marks a code or refresh token used, atomically: only one concurrent exchange can win. */
async function claim(
  tx: EntityManager,
  entity: typeof AuthorizationCode | typeof RefreshToken,
  id: string,
  runtime: AuthRuntime,
): Promise<boolean> {
  const changed = await tx.nativeUpdate(
    entity,
    { id, usedAt: null },
    { usedAt: runtime.services.clock.now() },
  );
  return changed === 1;
}

async function issue(
  tx: EntityManager,
  runtime: AuthRuntime,
  grant: Grant,
  withRefresh: boolean,
): Promise<TokenResponse> {
  const accessToken = await issueAccessToken(tx, runtime.issuer, grant);
  const refreshToken =
    withRefresh && grant.userId
      ? issueRefreshToken(
          { em: tx, clock: runtime.services.clock },
          {
            ...grant,
            userId: grant.userId,
            familyId: grant.familyId ?? randomUUID(),
          },
        )
      : undefined;
  return tokenResponse(accessToken, grant.scopes, refreshToken);
}

function tokenResponse(
  accessToken: string,
  scopes: readonly string[],
  refreshToken: string | undefined,
): TokenResponse {
  return {
    access_token: accessToken,
    token_type: 'Bearer',
    expires_in: ACCESS_TOKEN_TTL_SECONDS,
    ...(refreshToken ? { refresh_token: refreshToken } : {}),
    scope: scopes.join(' '),
  };
}

export function s256(verifier: string): string {
  return createHash('sha256').update(verifier).digest('base64url');
}
