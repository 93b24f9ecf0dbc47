import type { TypedDocumentNode } from '@graphql-typed-document-node/core';
import { print, type DocumentNode } from 'graphql';
import { restRoutes, type RestRouteTypes } from '../generated/rest-routes.js';
import { errorOf, GraphQLResponseError, retryAfterOf, TidegateError } from './errors.js';
import { LiveConnection, type WebSocketConstructor } from './live.js';
import { MemoryStorage, OAuthSession, type OAuthOptions } from './session.js';
import { MemoryTokenStore, type StorageLike, type TokenSet, type TokenStore } from './storage.js';

export interface ClientOptions {
  /** The server's origin, e.g. `https://api.tidegate.example` (no trailing path). */
  baseUrl: string;
  /** API-key mode: the key goes in `X-API-Key` (default) or `Authorization: Bearer`. */
  apiKey?: string;
  apiKeyHeader?: 'x-api-key' | 'bearer';
  /** OAuth mode: the registered client (public: no secret; confidential: with its secret). */
  oauth?: OAuthOptions;
  /** Where OAuth tokens live (default: memory). */
  store?: TokenStore;
  /** Where a sign-in in progress keeps its state and PKCE verifier (browser: `sessionStorage`). */
  pendingStorage?: StorageLike;
  /** Renew an access token this long before it expires (default 60 s). */
  refreshSkewMs?: number;
  fetch?: typeof fetch;
  /** For subscriptions where there is no global WebSocket (Node 20: pass the `ws` package's). */
  WebSocket?: WebSocketConstructor;
}

type Variables = Record<string, unknown>;
/** Optional variables may be left out; required ones may not. */
type VariablesArg<V> = Record<string, never> extends V ? [variables?: V] : [variables: V];

export type V1Name = keyof RestRouteTypes;
export type V1Params<N extends V1Name> = RestRouteTypes[N]['params'];
export type V1Result<N extends V1Name> = RestRouteTypes[N]['result'];
type ParamsArg<P> = Record<string, never> extends P ? [params?: P] : [params: P];
/** One helper per documented /v1 route, named after its operation (`GET /v1/port-calls` → `portCalls`). */
export type V1Helpers = { [N in V1Name]: (...params: ParamsArg<V1Params<N>>) => Promise<V1Result<N>> };

export interface SubscriptionHandlers<T> {
  next(data: T): void;
  error?(error: TidegateError): void;
  complete?(): void;
}

const printed = new WeakMap<DocumentNode, string>();

/**
 * The tidegate client: OAuth (authorization code + PKCE, client credentials) or an API key;
 * typed GraphQL; helpers for every documented /v1 route; subscriptions that survive token
 * renewal. Works in browsers and in Node ≥ 20.
 */
export class TidegateClient {
  readonly baseUrl: string;
  /** The OAuth session (sign-in, tokens, renewal); absent in API-key mode. */
  readonly session: OAuthSession | undefined;
  /** `client.v1.portCalls({ status: 'ARRIVED' })`, `client.v1.protocol({ slug })`, … */
  readonly v1: V1Helpers;
  private apiKey: string | undefined;
  private readonly apiKeyHeader: 'x-api-key' | 'bearer';
  private readonly fetchImpl: typeof fetch;
  private readonly live: LiveConnection | undefined;
  private renewTimer: ReturnType<typeof setTimeout> | undefined;
  /** The live connection's latest in-band renewal. */
  private liveRenewal: Promise<void> | undefined;

  constructor(options: ClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    if (Boolean(options.apiKey) === Boolean(options.oauth))
      throw new TidegateError('invalid_request', 'Give either apiKey or oauth');
    // Called unbound: a browser's fetch must not be called as a method of another object.
    const fetchImpl = options.fetch ?? globalThis.fetch;
    this.fetchImpl = (input, init) =>
      fetchImpl(input, init).catch((e: unknown) => {
        throw new TidegateError('NETWORK_ERROR', `No answer from ${this.baseUrl}: ${(e as Error).message}`);
      });
    this.apiKey = options.apiKey;
    this.apiKeyHeader = options.apiKeyHeader ?? 'x-api-key';
    this.session = options.oauth
      ? new OAuthSession(
          this.baseUrl,
          options.oauth,
          options.store ?? new MemoryTokenStore(),
          options.pendingStorage ?? new MemoryStorage(),
          this.fetchImpl,
          options.refreshSkewMs ?? 60_000,
        )
      : undefined;
    const WebSocketImpl = options.WebSocket ?? (globalThis as { WebSocket?: WebSocketConstructor }).WebSocket;
    this.live = WebSocketImpl
      ? new LiveConnection(`${this.baseUrl.replace(/^http/, 'ws')}/graphql`, WebSocketImpl, async () =>
          this.apiKey ? { apiKey: this.apiKey } : { authorization: `Bearer ${await this.requireToken()}` },
        )
      : undefined;
    // Every renewal — before expiry, after a 401, or forced — reaches the open connection in band.
    this.session?.onTokens((tokens) => {
      if (!this.live?.open) return;
      // A refusal ends the subscriptions, which report it; the renewal itself succeeded.
      this.liveRenewal = this.live.renew(tokens.accessToken).catch(() => undefined);
      this.scheduleRenewal(tokens);
    });
    this.v1 = Object.fromEntries(
      Object.keys(restRoutes).map((name) => [
        name,
        (params?: Variables) => this.callV1(name as V1Name, params),
      ]),
      // Built from the generated table at run time; its generated types describe each entry.
    ) as unknown as V1Helpers;
  }

  /** Sign-in step 1 (authorization code + PKCE): the URL to send the user to. */
  authorizationUrl(options?: { scope?: string; redirectUri?: string }): Promise<string> {
    return this.oauth().authorizationUrl(options);
  }

  /** Sign-in step 2: the URL the browser came back to (state checked, code exchanged, tokens stored). */
  completeAuthorization(callbackUrl: string | URL): Promise<TokenSet> {
    return this.oauth().completeAuthorization(callbackUrl);
  }

  signInWithClientCredentials(scope?: string): Promise<TokenSet> {
    return this.oauth().signInWithClientCredentials(scope);
  }

  /** Renews the access token now; resolves once the open live connection has taken it too. */
  async refresh(): Promise<TokenSet> {
    const tokens = await this.oauth().refresh();
    await this.liveRenewal;
    return tokens;
  }

  /** API-key mode: switch to another key (e.g. after a rotation); open subscriptions carry on with it. */
  async setApiKey(key: string): Promise<void> {
    if (!this.apiKey) throw new TidegateError('invalid_request', 'This client is not in API-key mode');
    this.apiKey = key;
    await this.live?.renew(key);
  }

  /** Forgets the session (and revokes its refresh token); closes the live connection. */
  async signOut(): Promise<void> {
    this.close();
    await this.session?.signOut();
  }

  /** Closes the live connection (every subscription ends) and stops renewing in the background. */
  close(): void {
    clearTimeout(this.renewTimer);
    this.live?.close();
  }

  /** Runs a typed operation (from src/generated): its variables in, its typed result out. */
  async graphql<R, V extends Variables>(
    document: TypedDocumentNode<R, V>,
    ...[variables]: VariablesArg<V>
  ): Promise<R> {
    const response = await this.send('/graphql', {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/graphql-response+json, application/json',
      },
      body: JSON.stringify({ query: queryOf(document), variables }),
    });
    const options = {
      status: response.status,
      requestId: response.headers.get('x-request-id') ?? undefined,
      retryAfter: retryAfterOf(response.headers),
    };
    if (!response.ok) throw await errorOf(response);
    const body = (await response.json()) as { data?: R | null; errors?: GraphQLResponseError['errors'] };
    if (body.errors && body.errors.length > 0)
      throw new GraphQLResponseError(body.errors, body.data ?? null, options);
    return body.data as R;
  }

  /**
   * Any route of the API (e.g. /v1/export, document upload) with the client's credential, the
   * renewal on 401 and the typed errors. Returns the raw Response of a 2xx answer.
   */
  async request(path: string, init: RequestInit = {}): Promise<Response> {
    const response = await this.send(path, init);
    if (!response.ok) throw await errorOf(response);
    return response;
  }

  /** Subscribes with a typed subscription document; returns the function that ends it. */
  subscribe<R, V extends Variables>(
    document: TypedDocumentNode<R, V>,
    variables: V,
    handlers: SubscriptionHandlers<R>,
  ): () => void {
    if (!this.live)
      throw new TidegateError(
        'invalid_request',
        'No WebSocket implementation: pass options.WebSocket (e.g. the `ws` package) on Node 20',
      );
    const wasOpen = this.live.open;
    const unsubscribe = this.live.subscribe<{ data?: R; errors?: GraphQLResponseError['errors'] }>(
      queryOf(document),
      variables,
      {
        next: (result) => {
          if (result.errors?.length)
            handlers.error?.(new GraphQLResponseError(result.errors, result.data, { status: 0 }));
          else handlers.next(result.data as R);
        },
        error: (error) => handlers.error?.(error),
        complete: () => handlers.complete?.(),
      },
    );
    if (!wasOpen && this.session)
      void this.session.renewAt().then((at) => at !== null && this.scheduleAt(at));
    return unsubscribe;
  }

  private async callV1(name: V1Name, params: Variables = {}): Promise<unknown> {
    const route = restRoutes[name];
    const routeParams = route.params as Record<string, 'path' | 'query' | 'body'>;
    const query = new URLSearchParams();
    const body: Variables = {};
    let path: string = route.path;
    for (const [key, value] of Object.entries(params)) {
      if (value === undefined) continue;
      const from = routeParams[key];
      if (from === 'path') path = path.replace(`:${key}`, encodeURIComponent(String(value)));
      else if (from === 'query')
        for (const item of Array.isArray(value) ? value : [value]) query.append(key, String(item));
      else if (from === 'body') body[key] = value;
    }
    if (path.includes('/:'))
      throw new TidegateError('BAD_USER_INPUT', `${name}: missing path parameter in ${route.path}`);
    const json = route.wholeBody
      ? params.body
      : route.method === 'GET' || route.method === 'DELETE'
        ? undefined
        : body;
    const search = query.size > 0 ? `?${query}` : '';
    const response = await this.request(`${path}${search}`, {
      method: route.method,
      ...(json === undefined
        ? {}
        : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(json) }),
    });
    return response.status === 204 ? undefined : response.json();
  }

  /** One call with the current credential; on 401 invalid_token, one renewal and one retry. */
  private async send(path: string, init: RequestInit): Promise<Response> {
    const attempt = async (token: string | null) =>
      this.fetchImpl(`${this.baseUrl}${path}`, {
        ...init,
        headers: { ...toRecord(init.headers), ...this.authHeaders(token) },
      });
    if (!this.session) return attempt(null);
    const token = await this.requireToken();
    const response = await attempt(token);
    if (response.status !== 401 || !/invalid_token/.test(response.headers.get('www-authenticate') ?? ''))
      return response;
    await response.body?.cancel();
    return attempt((await this.session.refresh()).accessToken);
  }

  private authHeaders(token: string | null): Record<string, string> {
    if (token) return { authorization: `Bearer ${token}` };
    if (!this.apiKey) return {};
    return this.apiKeyHeader === 'bearer'
      ? { authorization: `Bearer ${this.apiKey}` }
      : { 'x-api-key': this.apiKey };
  }

  private async requireToken(): Promise<string> {
    const token = await this.session!.accessToken();
    if (!token) throw new TidegateError('UNAUTHENTICATED', 'Not signed in', { status: 401 });
    return token;
  }

  private oauth(): OAuthSession {
    if (!this.session)
      throw new TidegateError('invalid_request', 'This client is in API-key mode (no oauth options)');
    return this.session;
  }

  /** While subscriptions are open, the token is renewed before it expires even if no call is made. */
  private scheduleRenewal(tokens: TokenSet): void {
    this.scheduleAt(tokens.expiresAt - this.session!.refreshSkewMs);
  }

  private scheduleAt(at: number): void {
    clearTimeout(this.renewTimer);
    // At least a second apart, so a skew longer than the token's life cannot renew in a loop.
    const timer = setTimeout(
      () => {
        if (this.live?.open) void this.session!.refresh().catch(() => undefined);
      },
      Math.min(Math.max(1000, at - Date.now()), 2 ** 31 - 1),
    );
    // In Node, a pending renewal must not keep a finished script alive.
    (timer as { unref?: () => void }).unref?.();
    this.renewTimer = timer;
  }
}

function queryOf(document: DocumentNode): string {
  let query = printed.get(document);
  if (query === undefined) printed.set(document, (query = print(document)));
  return query;
}

function toRecord(headers: RequestInit['headers']): Record<string, string> {
  return headers ? Object.fromEntries(new Headers(headers)) : {};
}
