import { errorOf, isObject, SessionExpiredError, TidegateError } from './errors.js';
import { challengeOf, randomToken } from './pkce.js';
import type { StorageLike, TokenSet, TokenStore } from './storage.js';

/** The RFC 8414 fields the client uses. */
export interface ServerMetadata {
  issuer: string;
  authorization_endpoint: string;
  token_endpoint: string;
  revocation_endpoint?: string;
}

export interface OAuthOptions {
  clientId: string;
  /** Confidential clients only (servers, scripts): never ship a secret to a browser. */
  clientSecret?: string;
  /** Where the authorization server sends the browser back (registered with the client). */
  redirectUri?: string;
  /** Space-separated scopes to ask for. */
  scope?: string;
}

/** What `authorizationUrl` keeps until the callback: the PKCE verifier and the redirect URI used. */
interface Pending {
  verifier: string;
  redirectUri: string;
}

/** An in-memory StorageLike (the default for pending authorizations outside a browser). */
export class MemoryStorage implements StorageLike {
  private readonly items = new Map<string, string>();
  getItem(key: string): string | null {
    return this.items.get(key) ?? null;
  }
  setItem(key: string, value: string): void {
    this.items.set(key, value);
  }
  removeItem(key: string): void {
    this.items.delete(key);
  }
}

const PENDING_PREFIX = 'tidegate.pkce.';

/**
 * An OAuth session: sign-in (authorization code + PKCE, or client credentials), the stored
 * tokens, and their renewal. Renewal is single-flight: every caller waiting for a fresh token
 * shares one token request, so a rotated refresh token is never used twice.
 */
export class OAuthSession {
  private metadataPromise: Promise<ServerMetadata> | undefined;
  private inflight: Promise<TokenSet> | undefined;
  private readonly listeners = new Set<(tokens: TokenSet) => void>();

  constructor(
    private readonly baseUrl: string,
    private readonly options: OAuthOptions,
    private readonly store: TokenStore,
    private readonly pending: StorageLike,
    private readonly fetchImpl: typeof fetch,
    /** Renew this long before the access token expires. */
    readonly refreshSkewMs: number,
  ) {}

  /** The server's metadata, discovered once from /.well-known/oauth-authorization-server. */
  metadata(): Promise<ServerMetadata> {
    this.metadataPromise ??= (async () => {
      const response = await this.fetchImpl(`${this.baseUrl}/.well-known/oauth-authorization-server`);
      if (!response.ok) throw await errorOf(response);
      return (await response.json()) as ServerMetadata;
    })();
    this.metadataPromise.catch(() => (this.metadataPromise = undefined));
    return this.metadataPromise;
  }

  /** Called with the new tokens after every sign-in and renewal (the live connection follows them). */
  onTokens(listener: (tokens: TokenSet) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /**
   * The URL to send the user to. A fresh `state` and PKCE verifier are kept in `pending` storage
   * (use `sessionStorage` in a browser: the page is reloaded by the redirect) until the callback.
   */
  async authorizationUrl(options: { scope?: string; redirectUri?: string } = {}): Promise<string> {
    const redirectUri = options.redirectUri ?? this.options.redirectUri;
    if (!redirectUri) throw new TidegateError('invalid_request', 'A redirectUri is required for sign-in');
    const scope = options.scope ?? this.options.scope;
    const state = randomToken();
    const verifier = randomToken();
    this.pending.setItem(PENDING_PREFIX + state, JSON.stringify({ verifier, redirectUri } satisfies Pending));
    const url = new URL((await this.metadata()).authorization_endpoint);
    url.search = new URLSearchParams({
      response_type: 'code',
      client_id: this.options.clientId,
      redirect_uri: redirectUri,
      ...(scope ? { scope } : {}),
      state,
      code_challenge: await challengeOf(verifier),
      code_challenge_method: 'S256',
    }).toString();
    return url.toString();
  }

  /**
   * Finishes sign-in from the URL the browser came back to: the `state` must be one this client
   * issued (each is used once), the issuer must be ours (RFC 9207), then the code is exchanged.
   */
  async completeAuthorization(callbackUrl: string | URL): Promise<TokenSet> {
    const params = new URL(callbackUrl).searchParams;
    const state = params.get('state');
    const raw = state ? this.pending.getItem(PENDING_PREFIX + state) : null;
    if (state) this.pending.removeItem(PENDING_PREFIX + state);
    if (!raw)
      throw new TidegateError(
        'state_mismatch',
        'The callback’s state is not one this client issued (a forged or replayed callback?)',
      );
    const { verifier, redirectUri } = JSON.parse(raw) as Pending;
    const metadata = await this.metadata();
    const iss = params.get('iss');
    if (iss !== null && iss !== metadata.issuer)
      throw new TidegateError(
        'issuer_mismatch',
        `The callback comes from issuer ${iss}, not ${metadata.issuer}`,
      );
    const error = params.get('error');
    if (error) throw new TidegateError(error, params.get('error_description') ?? error);
    const code = params.get('code');
    if (!code) throw new TidegateError('invalid_request', 'The callback carries no code');
    return this.grant({
      grant_type: 'authorization_code',
      code,
      code_verifier: verifier,
      redirect_uri: redirectUri,
    });
  }

  /** Signs in as the client itself (confidential clients: scripts, servers). */
  signInWithClientCredentials(scope?: string): Promise<TokenSet> {
    const wanted = scope ?? this.options.scope;
    return this.grant({ grant_type: 'client_credentials', ...(wanted ? { scope: wanted } : {}) });
  }

  /** A valid access token, renewed first when it expires within the skew; null when signed out. */
  async accessToken(): Promise<string | null> {
    const tokens = await this.store.load();
    if (!tokens) return null;
    if (Date.now() < tokens.expiresAt - this.refreshSkewMs) return tokens.accessToken;
    return (await this.refresh()).accessToken;
  }

  /** When the stored access token needs renewing (ms since the epoch), or null when signed out. */
  async renewAt(): Promise<number | null> {
    const tokens = await this.store.load();
    return tokens ? tokens.expiresAt - this.refreshSkewMs : null;
  }

  /**
   * Renews the access token now: with the refresh token (rotated: the new one is kept), or for a
   * client-credentials session by asking again. Concurrent callers share one request. A refused
   * refresh token (`invalid_grant`) clears the store and throws SessionExpiredError.
   */
  refresh(): Promise<TokenSet> {
    this.inflight ??= this.renew().finally(() => (this.inflight = undefined));
    return this.inflight;
  }

  async signOut(): Promise<void> {
    const tokens = await this.store.load();
    await this.store.clear();
    const endpoint = (await this.metadata()).revocation_endpoint;
    if (tokens?.refreshToken && endpoint) {
      // Best effort: the local session is gone either way.
      await this.post(endpoint, { token: tokens.refreshToken }).catch(() => undefined);
    }
  }

  private async renew(): Promise<TokenSet> {
    const tokens = await this.store.load();
    if (tokens?.refreshToken) {
      try {
        return await this.grant(
          { grant_type: 'refresh_token', refresh_token: tokens.refreshToken },
          tokens.refreshToken,
        );
      } catch (e) {
        if (e instanceof TidegateError && e.code === 'invalid_grant') {
          await this.store.clear();
          throw new SessionExpiredError(e.message, e.requestId);
        }
        throw e;
      }
    }
    if (this.options.clientSecret) return this.signInWithClientCredentials(tokens?.scope);
    throw new TidegateError('UNAUTHENTICATED', 'Not signed in: no session to renew', { status: 401 });
  }

  private async grant(form: Record<string, string>, previousRefreshToken?: string): Promise<TokenSet> {
    const response = await this.post((await this.metadata()).token_endpoint, form);
    if (!response.ok) throw await errorOf(response);
    const body = (await response.json()) as Record<string, unknown>;
    if (!isObject(body) || typeof body.access_token !== 'string')
      throw new TidegateError('invalid_response', 'The token endpoint answered without an access_token');
    const refreshToken = typeof body.refresh_token === 'string' ? body.refresh_token : previousRefreshToken;
    const tokens: TokenSet = {
      accessToken: body.access_token,
      expiresAt: Date.now() + Number(body.expires_in ?? 3600) * 1000,
      ...(refreshToken ? { refreshToken } : {}),
      ...(typeof body.scope === 'string' ? { scope: body.scope } : {}),
    };
    await this.store.save(tokens);
    for (const listener of this.listeners) listener(tokens);
    return tokens;
  }

  /** A form POST authenticated as the client: Basic for a confidential client, client_id for a public one. */
  private post(url: string, form: Record<string, string>): Promise<Response> {
    const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded' };
    const body = new URLSearchParams(form);
    const { clientId, clientSecret } = this.options;
    if (clientSecret) {
      // RFC 6749 §2.3.1: id and secret are form-urlencoded before the Basic encoding.
      const encode = (value: string) => new URLSearchParams({ v: value }).toString().slice(2);
      headers.authorization = `Basic ${btoa(`${encode(clientId)}:${encode(clientSecret)}`)}`;
    } else body.set('client_id', clientId);
    return this.fetchImpl(url, { method: 'POST', headers, body });
  }
}
