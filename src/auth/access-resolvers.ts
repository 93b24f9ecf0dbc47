import { Arg, Ctx, Field, ID, InputType, Int, Mutation, ObjectType, Query, Resolver } from 'type-graphql';
import { User, type ApiKey } from '../accounts/entities.js';
import {
  createApiKey,
  isKeyActive,
  listApiKeys,
  revokeApiKey,
  rotateApiKey,
  type KeyPolicy,
} from '../accounts/service.js';
import { stageEvents } from '../events/stage.js';
import { badInput } from '../kernel/errors.js';
import { CREDENTIAL_REVOKED } from '../kernel/events.js';
import type { Principal } from '../kernel/principal.js';
import { requirePrincipal, type GatewayContext } from '../gateway/schema/context.js';
import { RequiresScopes } from '../gateway/schema/directives.js';
import {
  listConnectedApps,
  listSandboxKeys,
  requireSession,
  revokeConnectedApp,
  revokeSandboxKey,
  updateRedirectUris,
  type ConnectedApp,
} from './access.js';
import { createClient, getClient, listClients, rotateClientSecret } from './clients.js';
import { deleteClient } from './tokens.js';
import type { OAuthClient } from './entities.js';

const SESSION_ONLY =
  'Console sessions only: credentials:manage is a scope no API key or OAuth token can use (FORBIDDEN).';

@ObjectType('ApiKey', { description: 'An API key as listings show it: never its secret.' })
class ApiKeyView {
  @Field(() => ID)
  id!: string;

  @Field(() => String)
  name!: string;

  @Field(() => String, { description: 'The first characters of the secret, to tell keys apart.' })
  prefix!: string;

  @Field(() => [String], { description: 'Canonical scope names the key carries.' })
  scopes!: string[];

  @Field(() => Date)
  createdAt!: Date;

  @Field(() => Date, { nullable: true })
  lastUsedAt?: Date | null;

  @Field(() => Date, { nullable: true, description: 'When it stops working; null for no expiry.' })
  expiresAt?: Date | null;

  @Field(() => Date, { nullable: true })
  revokedAt?: Date | null;

  @Field(() => Boolean, { description: 'Neither revoked nor expired.' })
  active!: boolean;
}

@ObjectType('OAuthApp', { description: 'An OAuth application registered by your account.' })
class OAuthAppView {
  @Field(() => String, { description: 'The public client_id.' })
  clientId!: string;

  @Field(() => String)
  name!: string;

  @Field(() => Boolean, { description: 'Confidential apps hold a secret; public ones use PKCE alone.' })
  confidential!: boolean;

  @Field(() => [String])
  grantTypes!: string[];

  @Field(() => [String], { description: 'Scopes the app may ask for.' })
  scopes!: string[];

  @Field(() => [String], { description: 'Exact-match redirect URIs.' })
  redirectUris!: string[];

  @Field(() => Date)
  createdAt!: Date;
}

@ObjectType('OAuthAppSecret', {
  description: 'An app and its new client secret — the only time it is shown.',
})
class OAuthAppSecret {
  @Field(() => OAuthAppView)
  app!: OAuthAppView;

  @Field(() => String, { description: 'Store it now: only its hash is kept.' })
  clientSecret!: string;
}

@ObjectType('ConnectedApp', {
  description:
    'An application holding a live grant of yours (a refresh or access token), whoever registered it.',
})
class ConnectedAppView {
  @Field(() => String)
  clientId!: string;

  @Field(() => String)
  name!: string;

  @Field(() => [String], { description: 'What you granted it, identity scopes included.' })
  scopes!: string[];

  @Field(() => Date, { description: 'When its oldest live grant was made.' })
  grantedAt!: Date;

  @Field(() => Date, {
    nullable: true,
    description: 'Its last call with one of your tokens, else when it last got a token.',
  })
  lastUsedAt?: Date | null;
}

@ObjectType('ConnectedAppRevocation', { description: 'What revoking a connected app ended.' })
class ConnectedAppRevocation {
  @Field(() => String)
  clientId!: string;

  @Field(() => Int, { description: 'Access tokens denied from now on (their live connections end).' })
  accessTokens!: number;

  @Field(() => Int)
  refreshTokens!: number;
}

@ObjectType('ApiKeySecret', { description: 'An API key and its secret — the only time the secret is shown.' })
class ApiKeySecret {
  @Field(() => ApiKeyView)
  key!: ApiKeyView;

  @Field(() => String, { description: 'Store it now: only its hash is kept.' })
  secret!: string;

  @Field(() => Date, {
    nullable: true,
    description: 'After a rotation: until when the replaced key keeps working.',
  })
  previousExpiresAt?: Date | null;
}

@InputType({ description: 'A new API key.' })
class ApiKeyInput {
  @Field(() => String)
  name!: string;

  @Field(() => [String], {
    nullable: true,
    description: 'Canonical or resource-first scope names; every scope but admin when omitted.',
  })
  scopes?: string[] | null;
}

@InputType({ description: 'An OAuth application to register.' })
class OAuthAppInput {
  @Field(() => String)
  name!: string;

  @Field(() => [String], { description: 'Exact-match redirect URIs (https, or http on loopback).' })
  redirectUris!: string[];

  @Field(() => [String], { description: 'Scopes the app may ask for.' })
  scopes!: string[];

  @Field(() => [String], {
    nullable: true,
    description: 'authorization_code, refresh_token, client_credentials; the first two when omitted.',
  })
  grantTypes?: string[] | null;

  @Field(() => Boolean, { description: 'Confidential apps get a secret; public ones use PKCE alone.' })
  confidential!: boolean;
}

/** A scope list a signed-in user may put on a key or an app: `admin` only with the admin role (session-only scopes are refused by the services). */
function grantableScopes(principal: Principal, scopes: readonly string[]): readonly string[] {
  if (scopes.includes('admin') && !principal.scopes.has('admin'))
    throw badInput('scopes', 'admin may only be granted by a user with the admin role');
  return scopes;
}

const keyPolicy = (ctx: GatewayContext): KeyPolicy => ({
  maxActiveKeys: ctx.services.config.maxActiveApiKeys,
  rotationGraceMs: ctx.services.config.apiKeyRotationGraceMs,
});

const keyView = (key: ApiKey, now: Date): ApiKeyView => ({
  id: key.id,
  name: key.name,
  prefix: key.prefix,
  scopes: key.scopes,
  createdAt: key.createdAt,
  lastUsedAt: key.lastUsedAt ?? null,
  expiresAt: key.expiresAt ?? null,
  revokedAt: key.revokedAt ?? null,
  active: isKeyActive(key, now),
});

const appView = (c: OAuthClient): OAuthAppView => ({
  clientId: c.clientId,
  name: c.name,
  confidential: c.confidential,
  grantTypes: c.grantTypes,
  scopes: c.scopes,
  redirectUris: c.redirectUris,
  createdAt: c.createdAt,
});

const connectedView = (a: ConnectedApp): ConnectedAppView => ({
  clientId: a.client.clientId,
  name: a.client.name,
  scopes: a.scopes,
  grantedAt: a.grantedAt,
  lastUsedAt: a.lastUsedAt,
});

/**
 * Keys and apps: what the console's Keys and apps page reads and changes. Every field needs a
 * session credential (see `requireSession`): credentials are managed by people, not by credentials.
 */
@Resolver()
export class AccessResolver {
  @Query(() => [ApiKeyView], { description: `Your account's API keys, newest first. ${SESSION_ONLY}` })
  @RequiresScopes('credentials:manage')
  async apiKeys(@Ctx() ctx: GatewayContext): Promise<ApiKeyView[]> {
    const principal = requireSession(requirePrincipal(ctx), 'API keys');
    const now = ctx.services.clock.now();
    return (await listApiKeys(ctx.em, principal.accountId)).map((k) => keyView(k, now));
  }

  @Mutation(() => ApiKeySecret, {
    description: `Creates an API key of your account (the secret is shown once). CONFLICT at the active-key limit. ${SESSION_ONLY}`,
  })
  @RequiresScopes('credentials:manage')
  async createApiKey(
    @Arg('input', () => ApiKeyInput) input: ApiKeyInput,
    @Ctx() ctx: GatewayContext,
  ): Promise<ApiKeySecret> {
    const principal = requireSession(requirePrincipal(ctx), 'API keys');
    const { key, secret } = await createApiKey({ em: ctx.em, clock: ctx.services.clock }, keyPolicy(ctx), {
      accountId: principal.accountId,
      name: input.name,
      scopes: input.scopes ? grantableScopes(principal, input.scopes) : undefined,
    });
    return { key: keyView(key, ctx.services.clock.now()), secret };
  }

  @Mutation(() => ApiKeySecret, {
    description: `Replaces a key: the new one (shown once) has its name, scopes and expiry; the old one works until previousExpiresAt (API_KEY_ROTATION_GRACE). ${SESSION_ONLY}`,
  })
  @RequiresScopes('credentials:manage')
  async rotateApiKey(@Arg('id', () => ID) id: string, @Ctx() ctx: GatewayContext): Promise<ApiKeySecret> {
    const principal = requireSession(requirePrincipal(ctx), 'API keys');
    const { key, secret, previous } = await rotateApiKey(
      { em: ctx.em, clock: ctx.services.clock },
      keyPolicy(ctx),
      id,
      principal.accountId,
    );
    return {
      key: keyView(key, ctx.services.clock.now()),
      secret,
      previousExpiresAt: previous.expiresAt ?? null,
    };
  }

  @Mutation(() => ApiKeyView, {
    description: `Revokes a key of your account now: its next call is 401 and its live subscriptions end. ${SESSION_ONLY}`,
  })
  @RequiresScopes('credentials:manage')
  async revokeApiKey(@Arg('id', () => ID) id: string, @Ctx() ctx: GatewayContext): Promise<ApiKeyView> {
    const principal = requireSession(requirePrincipal(ctx), 'API keys');
    const { clock, credentials, events } = ctx.services;
    const { key, staged } = await ctx.em.transactional(async (tx) => {
      const key = await revokeApiKey({ em: tx, clock }, id, principal.accountId);
      const staged = await stageEvents(tx, { clock, events }, [
        { type: CREDENTIAL_REVOKED, accountId: key.account.id, payload: { credentialId: key.id } },
      ]);
      return { key, staged };
    });
    credentials.invalidateKey(key.id);
    await events.publish(staged);
    return keyView(key, clock.now());
  }

  @Query(() => [ApiKeyView], {
    description: `The playground's sandbox keys of your account, with their expiry, newest first. ${SESSION_ONLY}`,
  })
  @RequiresScopes('credentials:manage')
  async sandboxKeys(@Ctx() ctx: GatewayContext): Promise<ApiKeyView[]> {
    const principal = requireSession(requirePrincipal(ctx), 'Sandbox keys');
    const now = ctx.services.clock.now();
    return (await listSandboxKeys(ctx.em, principal)).map((k) => keyView(k, now));
  }

  @Mutation(() => ApiKeyView, {
    description: `Revokes a sandbox key now: its next call is 401 and its live subscriptions end. ${SESSION_ONLY}`,
  })
  @RequiresScopes('credentials:manage')
  async revokeSandboxKey(@Arg('id', () => ID) id: string, @Ctx() ctx: GatewayContext): Promise<ApiKeyView> {
    const principal = requireSession(requirePrincipal(ctx), 'Sandbox keys');
    const { key, events } = await revokeSandboxKey({ em: ctx.em, ...ctx.services }, principal, id);
    ctx.services.credentials.invalidateKey(key.id);
    await ctx.services.events.publish(events);
    return keyView(key, ctx.services.clock.now());
  }

  @Query(() => [OAuthAppView], {
    description: `OAuth apps your account registered, newest first. ${SESSION_ONLY}`,
  })
  @RequiresScopes('credentials:manage')
  async oauthApps(@Ctx() ctx: GatewayContext): Promise<OAuthAppView[]> {
    const principal = requireSession(requirePrincipal(ctx), 'OAuth apps');
    return (await listClients(ctx.em, principal.accountId)).map(appView);
  }

  @Mutation(() => OAuthAppSecret, {
    description: `Registers an OAuth app of your account; a confidential app's secret is shown once (empty for a public app). ${SESSION_ONLY}`,
  })
  @RequiresScopes('credentials:manage')
  async registerOAuthApp(
    @Arg('input', () => OAuthAppInput) input: OAuthAppInput,
    @Ctx() ctx: GatewayContext,
  ): Promise<OAuthAppSecret> {
    const principal = requireSession(requirePrincipal(ctx), 'OAuth apps');
    const registrar = await ctx.em.findOneOrFail(User, { id: principal.userId });
    const { client, secret } = await createClient({ em: ctx.em, clock: ctx.services.clock }, registrar, {
      accountId: principal.accountId,
      name: input.name,
      redirectUris: input.redirectUris,
      scopes: grantableScopes(principal, input.scopes),
      grantTypes: input.grantTypes ?? undefined,
      confidential: input.confidential,
    });
    return { app: appView(client), clientSecret: secret ?? '' };
  }

  @Mutation(() => OAuthAppView, {
    description: `Deletes an app of your account and revokes everything issued to it (its tokens answer 401 at once). ${SESSION_ONLY}`,
  })
  @RequiresScopes('credentials:manage')
  async deleteOAuthApp(
    @Arg('clientId', () => String) clientId: string,
    @Ctx() ctx: GatewayContext,
  ): Promise<OAuthAppView> {
    const principal = requireSession(requirePrincipal(ctx), 'OAuth apps');
    const client = await getClient(ctx.em, clientId, principal.accountId);
    const revocation = await deleteClient(ctx.em, ctx.services, client);
    // Every process (this one included) denies the tokens when the events arrive (src/auth/runtime.ts).
    await ctx.services.events.publish(revocation.events);
    return appView(client);
  }

  @Mutation(() => OAuthAppSecret, {
    description: `Issues a new client secret (shown once); the old one stops working at once. CONFLICT for a public app. ${SESSION_ONLY}`,
  })
  @RequiresScopes('credentials:manage')
  async rotateOAuthAppSecret(
    @Arg('clientId', () => String) clientId: string,
    @Ctx() ctx: GatewayContext,
  ): Promise<OAuthAppSecret> {
    const principal = requireSession(requirePrincipal(ctx), 'OAuth apps');
    const { client, secret } = await rotateClientSecret(ctx.em, clientId, principal.accountId);
    return { app: appView(client), clientSecret: secret };
  }

  @Mutation(() => OAuthAppView, {
    description: `Replaces an app's redirect URIs, checked like a registration (https, or http on loopback; no fragment; 1–10 with authorization_code). ${SESSION_ONLY}`,
  })
  @RequiresScopes('credentials:manage')
  async updateOAuthAppRedirectUris(
    @Arg('clientId', () => String) clientId: string,
    @Arg('redirectUris', () => [String]) redirectUris: string[],
    @Ctx() ctx: GatewayContext,
  ): Promise<OAuthAppView> {
    const principal = requireSession(requirePrincipal(ctx), 'OAuth apps');
    return appView(await updateRedirectUris(ctx.em, principal, clientId, redirectUris));
  }

  @Query(() => [ConnectedAppView], {
    description: `Apps holding your tokens (yours as a user, whoever registered the app), by name. ${SESSION_ONLY}`,
  })
  @RequiresScopes('credentials:manage')
  async connectedApps(@Ctx() ctx: GatewayContext): Promise<ConnectedAppView[]> {
    const principal = requireSession(requirePrincipal(ctx), 'Connected apps');
    return (await listConnectedApps(ctx.em, principal, ctx.services.clock.now())).map(connectedView);
  }

  @Mutation(() => ConnectedAppRevocation, {
    description: `Revokes every grant you gave an app: refresh and access tokens (next call 401, live connections end) and unused codes. ${SESSION_ONLY}`,
  })
  @RequiresScopes('credentials:manage')
  async revokeConnectedApp(
    @Arg('clientId', () => String) clientId: string,
    @Ctx() ctx: GatewayContext,
  ): Promise<ConnectedAppRevocation> {
    const principal = requireSession(requirePrincipal(ctx), 'Connected apps');
    const { client, revocation, refreshTokens } = await revokeConnectedApp(
      { em: ctx.em, ...ctx.services },
      principal,
      clientId,
    );
    // Every process (this one included) denies the tokens when the events arrive (src/auth/runtime.ts).
    await ctx.services.events.publish(revocation.events);
    return { clientId: client.clientId, accessTokens: revocation.denied.length, refreshTokens };
  }
}
