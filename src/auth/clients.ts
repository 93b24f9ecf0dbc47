import type { EntityManager } from '@mikro-orm/knex';
import type { User } from '../accounts/entities.js';
import { getAccount } from '../accounts/service.js';
import { constantTimeEqual, newSecret, sha256Hex } from '../kernel/crypto.js';
import { badInput, conflict, notFound } from '../kernel/errors.js';
import { parseCredentialScopes } from '../kernel/scopes.js';
import { OAuthClient } from './entities.js';
import type { ServiceDeps } from '../kernel/deps.js';

export const GRANT_TYPES = ['authorization_code', 'refresh_token', 'client_credentials'] as const;
export type GrantType = (typeof GRANT_TYPES)[number];
export const DEFAULT_GRANT_TYPES: GrantType[] = ['authorization_code', 'refresh_token'];

const CLIENT_ID_PREFIX = 'tgc_';
const CLIENT_SECRET_PREFIX = 'tgcs_';
const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]']);

export interface ClientInput {
  accountId: string;
  name: string;
  redirectUris: readonly string[];
  scopes: string | readonly string[];
  grantTypes?: string | readonly string[];
  confidential: boolean;
}

export interface CreatedClient {
  client: OAuthClient;
  /** The client secret (confidential clients). Returned once, stored only as SHA-256. */
  secret: string | null;
}

/**
 * Who registers: a console user (admin scope only for users with the admin role) or an operator
 * on the CLI (null: the operator already has the database).
 */
export type Registrar = User | null;

function parseGrantTypes(input: string | readonly string[] | undefined): GrantType[] {
  if (input === undefined) return DEFAULT_GRANT_TYPES;
  const tokens = (typeof input === 'string' ? input.split(/[\s,]+/) : input)
    .map((g) => g.trim())
    .filter(Boolean);
  const unknown = tokens.filter((g) => !(GRANT_TYPES as readonly string[]).includes(g));
  if (unknown.length > 0)
    throw badInput('grantTypes', `unknown grant type: ${unknown.join(', ')} (use ${GRANT_TYPES.join(', ')})`);
  if (tokens.length === 0) throw badInput('grantTypes', 'must name at least one grant type');
  return GRANT_TYPES.filter((g) => tokens.includes(g));
}

/** Exact-match redirect URIs (RFC 9700): https, or http on loopback for native apps and development. */
function parseRedirectUri(raw: string): string {
  const value = raw.trim();
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw badInput('redirectUris', `'${value}' is not an absolute URL`);
  }
  if (url.hash || value.includes('#'))
    throw badInput('redirectUris', `'${value}' must not contain a fragment`);
  if (url.protocol === 'http:' && !LOOPBACK.has(url.hostname)) {
    throw badInput(
      'redirectUris',
      `'${value}' must use https (http is allowed only for localhost and loopback addresses)`,
    );
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw badInput('redirectUris', `'${value}' must use https or http`);
  }
  if (value.length > 2000) throw badInput('redirectUris', 'each URI must be at most 2000 characters');
  return value;
}

/** The redirect URIs of a registration or of an edit: each checked, duplicates dropped, 0–10 of them. */
export function parseRedirectUris(raw: readonly string[], grantTypes: readonly string[]): string[] {
  const redirectUris = [...new Set(raw.map(parseRedirectUri))];
  if (grantTypes.includes('authorization_code') && redirectUris.length === 0) {
    throw badInput('redirectUris', 'at least one redirect URI is required for authorization_code');
  }
  if (redirectUris.length > 10) throw badInput('redirectUris', 'at most 10 redirect URIs');
  return redirectUris;
}

/** An http redirect URI on a loopback IP literal: host, optional port, then path and query. */
const LOOPBACK_REDIRECT = /^http:\/\/(127\.0\.0\.1|\[::1\])(?::(\d{1,5}))?([/?].*)?$/;

/**
 * Exact string match, except that a registered http://127.0.0.1 or http://[::1] URI matches any
 * port (RFC 8252 §7.3: a native app listens on whatever port the OS gives it); host, path and
 * query must still be identical. `localhost` gets no such leeway: it is a name that may resolve
 * elsewhere (RFC 8252 §8.3), so such URIs match exactly.
 */
export function redirectUriMatches(registered: string, presented: string): boolean {
  if (registered === presented) return true;
  const reg = LOOPBACK_REDIRECT.exec(registered);
  const pre = LOOPBACK_REDIRECT.exec(presented);
  if (!reg || !pre) return false;
  const port = pre[2] === undefined ? 80 : Number(pre[2]);
  return reg[1] === pre[1] && (reg[3] ?? '') === (pre[3] ?? '') && port >= 1 && port <= 65535;
}

export async function createClient(
  { em, clock }: Pick<ServiceDeps, 'em' | 'clock'>,
  registrar: Registrar,
  input: ClientInput,
): Promise<CreatedClient> {
  const account = await getAccount(em, input.accountId);
  const name = input.name?.trim() ?? '';
  if (!name) throw badInput('name', 'is required');
  if (name.length > 200) throw badInput('name', 'must be at most 200 characters');
  const grantTypes = parseGrantTypes(input.grantTypes);
  if (grantTypes.includes('refresh_token') && !grantTypes.includes('authorization_code')) {
    throw badInput('grantTypes', 'refresh_token is only issued with authorization_code');
  }
  if (grantTypes.includes('client_credentials') && !input.confidential) {
    throw badInput(
      'grantTypes',
      'client_credentials needs a confidential client (public clients cannot keep a secret)',
    );
  }
  const redirectUris = parseRedirectUris(input.redirectUris, grantTypes);
  const scopes = parseCredentialScopes(input.scopes);
  if (scopes.length === 0) throw badInput('scopes', 'must name at least one scope');
  if (scopes.includes('admin') && registrar && !registrar.roles.includes('admin')) {
    throw badInput('scopes', 'admin may only be allowed by a user with the admin role');
  }
  const secret = input.confidential ? newSecret(CLIENT_SECRET_PREFIX, 32) : null;
  const client = em.create(OAuthClient, {
    clientId: newSecret(CLIENT_ID_PREFIX, 16),
    accountId: account.id,
    createdByUserId: registrar?.id ?? null,
    name,
    redirectUris,
    scopes,
    grantTypes,
    confidential: input.confidential,
    secretHash: secret ? sha256Hex(secret) : null,
    createdAt: clock.now(),
  });
  await em.persistAndFlush(client);
  return { client, secret };
}

/** By public client_id; `accountId` scopes the lookup to one tenant (console). */
export async function getClient(
  em: EntityManager,
  clientId: string,
  accountId?: string,
): Promise<OAuthClient> {
  const client = await em.findOne(OAuthClient, { clientId });
  if (!client || (accountId && client.accountId !== accountId)) throw notFound('OAuth client', clientId);
  return client;
}

export async function listClients(em: EntityManager, accountId: string): Promise<OAuthClient[]> {
  return em.find(OAuthClient, { accountId }, { orderBy: { createdAt: 'desc', id: 'asc' } });
}

/** Replaces the secret at once: the old one stops working immediately (shown once, like at registration). */
export async function rotateClientSecret(
  em: EntityManager,
  clientId: string,
  accountId?: string,
): Promise<{ client: OAuthClient; secret: string }> {
  const client = await getClient(em, clientId, accountId);
  if (!client.confidential)
    throw conflict(`OAuth client '${clientId}' is public and has no secret to rotate`, { clientId });
  const secret = newSecret(CLIENT_SECRET_PREFIX, 32);
  client.secretHash = sha256Hex(secret);
  await em.flush();
  return { client, secret };
}

/** Null for an unknown client, a wrong secret, or a secret where none (or none where one) belongs. */
export async function authenticateClient(
  em: EntityManager,
  clientId: string,
  secret: string | undefined,
): Promise<OAuthClient | null> {
  const client = clientId ? await em.findOne(OAuthClient, { clientId }) : null;
  if (!client) {
    // Spend the same hashing work as a real comparison.
    constantTimeEqual(sha256Hex(secret ?? ''), sha256Hex('unknown-client'));
    return null;
  }
  if (!client.confidential) return secret === undefined ? client : null;
  if (secret === undefined || !client.secretHash) return null;
  return constantTimeEqual(sha256Hex(secret), client.secretHash) ? client : null;
}
