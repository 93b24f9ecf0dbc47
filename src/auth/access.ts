import type { EntityManager } from '@mikro-orm/knex';
import { Account, ApiKey } from '../accounts/entities.js';
import { AuditRecord } from '../audit/entities.js';
import { stageEvents } from '../events/stage.js';
import type { ServiceDeps } from '../kernel/deps.js';
import type { DomainEvent } from '../kernel/events.js';
import { CREDENTIAL_REVOKED } from '../kernel/events.js';
import { AppError, notFound } from '../kernel/errors.js';
import { isUuid } from '../kernel/ids.js';
import type { Principal } from '../kernel/principal.js';
import { getClient, parseRedirectUris } from './clients.js';
import { AccessTokenRecord, AuthorizationCode, OAuthClient, RefreshToken } from './entities.js';
import { revokeTokens, type Revocation } from './tokens.js';

/**
 * Keys and apps of the signed-in user, as the schema serves them to the console: sandbox keys,
 * OAuth app registrations (secret rotation, redirect URIs) and the apps holding the user's tokens.
 * Credentials manage credentials only through a session: an API key or an OAuth token that could
 * revoke or re-secret its siblings would turn one leaked credential into all of them.
 */
export function requireSession(principal: Principal, what: string): Principal & { userId: string } {
  if (principal.credential.kind !== 'session' || !principal.userId) {
    throw new AppError(
      'FORBIDDEN',
      `${what} can be managed only by a signed-in user (the console's session), not with an ${principal.credential.kind === 'api_key' ? 'API key' : 'OAuth token'}`,
      { credentialKind: principal.credential.kind },
    );
  }
  return principal as Principal & { userId: string };
}

/** The sandbox account of the caller's account (null before the playground made one). */
async function sandboxOf(em: EntityManager, accountId: string): Promise<Account | null> {
  return em.findOne(Account, { sandboxOf: accountId });
}

/** Sandbox keys of the caller's sandbox, newest first; expired ones stay listed until the next one is made. */
export async function listSandboxKeys(em: EntityManager, principal: Principal): Promise<ApiKey[]> {
  const sandbox = await sandboxOf(em, principal.accountId);
  if (!sandbox) return [];
  return em.find(ApiKey, { account: sandbox.id }, { orderBy: { createdAt: 'desc', id: 'asc' } });
}

/**
 * Revokes one sandbox key of the caller's sandbox; a key of any other account (the caller's own
 * real keys included) is as unknown as a missing one. Returns the key and the event to publish
 * after commit, which drops it from every process's cache and ends its live subscriptions.
 */
export async function revokeSandboxKey(
  deps: Pick<ServiceDeps, 'em' | 'clock' | 'events'>,
  principal: Principal,
  id: string,
): Promise<{ key: ApiKey; events: DomainEvent[] }> {
  return deps.em.transactional(async (tx) => {
    const sandbox = await sandboxOf(tx, principal.accountId);
    const key = sandbox && isUuid(id) ? await tx.findOne(ApiKey, { id, account: sandbox.id }) : null;
    if (!key) throw notFound('Sandbox key', id);
    if (key.revokedAt) return { key, events: [] };
    key.revokedAt = deps.clock.now();
    const events = await stageEvents(tx, deps, [
      { type: CREDENTIAL_REVOKED, accountId: sandbox!.id, payload: { credentialId: key.id } },
    ]);
    return { key, events };
  });
}

/** Replaces the redirect URIs of an app of the caller's account, checked like a registration. */
export async function updateRedirectUris(
  em: EntityManager,
  principal: Principal,
  clientId: string,
  redirectUris: readonly string[],
): Promise<OAuthClient> {
  const client = await getClient(em, clientId, principal.accountId);
  client.redirectUris = parseRedirectUris(redirectUris, client.grantTypes);
  await em.flush();
  return client;
}

export interface ConnectedApp {
  client: OAuthClient;
  /** Every scope the user granted the app in its live grants (identity scopes included). */
  scopes: string[];
  /** When the oldest live grant was made. */
  grantedAt: Date;
  /** The app's last call with one of the user's tokens (audit log), else its last token issuance. */
  lastUsedAt: Date | null;
}

/**
 * The apps that hold a live grant of the user: an unexpired, unrevoked refresh token or access
 * token issued for the user, whichever account registered the app.
 */
export async function listConnectedApps(
  em: EntityManager,
  principal: Principal & { userId: string },
  now: Date,
): Promise<ConnectedApp[]> {
  const { userId } = principal;
  const [refresh, access] = await Promise.all([
    em.find(RefreshToken, { userId, revokedAt: null, expiresAt: { $gt: now } }),
    em.find(AccessTokenRecord, { userId, revokedAt: null, expiresAt: { $gt: now } }),
  ]);
  const byClient = new Map<
    string,
    { scopes: Set<string>; grantedAt: Date; issuedAt: Date; jtis: string[] }
  >();
  const note = (clientId: string, createdAt: Date, scopes: readonly string[], jti?: string) => {
    const entry = byClient.get(clientId) ?? {
      scopes: new Set<string>(),
      grantedAt: createdAt,
      issuedAt: createdAt,
      jtis: [],
    };
    for (const s of scopes) entry.scopes.add(s);
    if (createdAt < entry.grantedAt) entry.grantedAt = createdAt;
    if (createdAt > entry.issuedAt) entry.issuedAt = createdAt;
    if (jti) entry.jtis.push(jti);
    byClient.set(clientId, entry);
  };
  for (const r of refresh) note(r.clientId, r.createdAt, r.scopes);
  for (const a of access) note(a.clientId, a.createdAt, [], a.jti);
  if (byClient.size === 0) return [];
  const clients = await em.find(OAuthClient, { clientId: { $in: [...byClient.keys()] } });
  const apps: ConnectedApp[] = [];
  for (const client of clients) {
    const entry = byClient.get(client.clientId)!;
    // Access tokens carry no scope row: a grant with no refresh token shows the scopes of its code.
    if (entry.scopes.size === 0) {
      const code = await em.findOne(
        AuthorizationCode,
        { clientId: client.clientId, userId },
        { orderBy: { createdAt: 'desc' } },
      );
      for (const s of code?.scopes ?? []) entry.scopes.add(s);
    }
    const lastCall =
      entry.jtis.length > 0
        ? await em.findOne(
            AuditRecord,
            { accountId: principal.accountId, credentialId: { $in: entry.jtis } },
            { orderBy: { at: 'desc' }, fields: ['at'] },
          )
        : null;
    apps.push({
      client,
      scopes: [...entry.scopes],
      grantedAt: entry.grantedAt,
      lastUsedAt: lastCall?.at ?? entry.issuedAt,
    });
  }
  return apps.sort((a, b) => a.client.name.localeCompare(b.client.name));
}

/**
 * Revokes every grant the user gave one app: its refresh tokens, its access tokens (denied at
 * once, their live subscriptions ended) and its unused codes. Other users' grants to the app, and
 * the app itself, stay. Unknown when the app holds nothing of the user.
 */
export async function revokeConnectedApp(
  deps: Pick<ServiceDeps, 'em' | 'clock' | 'events'>,
  principal: Principal & { userId: string },
  clientId: string,
): Promise<{ client: OAuthClient; revocation: Revocation; refreshTokens: number }> {
  const { userId } = principal;
  const now = deps.clock.now();
  return deps.em.transactional(async (tx) => {
    const client = clientId ? await tx.findOne(OAuthClient, { clientId }) : null;
    const held =
      client &&
      ((await tx.count(RefreshToken, { clientId, userId, revokedAt: null, expiresAt: { $gt: now } })) > 0 ||
        (await tx.count(AccessTokenRecord, { clientId, userId, revokedAt: null, expiresAt: { $gt: now } })) >
          0);
    if (!client || !held) throw notFound('Connected app', clientId);
    const refreshTokens = await tx.count(RefreshToken, {
      clientId,
      userId,
      revokedAt: null,
      expiresAt: { $gt: now },
    });
    await tx.nativeUpdate(AuthorizationCode, { clientId, userId, usedAt: null }, { usedAt: now });
    const revocation = await revokeTokens(tx, deps, {
      refreshTokens: { clientId, userId },
      accessTokens: { clientId, userId },
    });
    return { client, revocation, refreshTokens };
  });
}
