import type {
  FastifyContextConfig,
  FastifyInstance,
  FastifyReply,
  FastifyRequest,
  onRequestHookHandler,
  onSendHookHandler,
} from 'fastify';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Callable cross-origin by browser-based public clients (the OAuth policy, see PUBLIC_CLIENT_CORS). */
    cors?: boolean;
    /** A preflight route this module registered itself (never covered by a policy). */
    corsPreflight?: boolean;
  }
}

/** Who may call which routes from another origin, and what the browser may send and read. */
export interface CorsPolicy {
  /** Whether a route (by its config) is callable cross-origin under this policy. */
  covers(config: FastifyContextConfig): boolean;
  /** `'*'` (any origin: the endpoints never read cookies) or the exact origins allowed. */
  origins: '*' | ReadonlySet<string>;
  allowHeaders: string;
  exposeHeaders: string;
}

/**
 * OAuth endpoints a browser-based public client calls from its own origin (token, revocation,
 * userinfo, discovery, JWKS): any origin, no credentials. They authenticate by what the request
 * carries (client id, PKCE verifier, bearer token), never by cookies, so `*` gives another site
 * nothing it could not send itself. Never the authorization or console pages (navigated to,
 * cookie-bound) nor introspection (servers only): those routes do not set `config.cors`.
 */
export const PUBLIC_CLIENT_CORS: CorsPolicy = {
  covers: (config) => config.cors === true,
  origins: '*',
  allowHeaders: 'Authorization, Content-Type',
  exposeHeaders: 'WWW-Authenticate, Retry-After',
};

/**
 * The API (GraphQL and every /v1, /api/v1 route: the audited routes) for the origins in
 * CORS_ORIGINS. No `Allow-Credentials`: the API authenticates by a bearer token or API key the
 * page sends explicitly, never by cookies.
 */
export function apiCors(origins: readonly string[]): CorsPolicy {
  return {
    covers: (config) => config.audit !== undefined,
    origins: origins.includes('*') ? '*' : new Set(origins),
    allowHeaders: 'Authorization, Content-Type, X-API-Key, X-Request-Id',
    exposeHeaders:
      'X-Request-Id, X-RateLimit-Limit, X-RateLimit-Remaining, X-RateLimit-Reset, Retry-After, WWW-Authenticate',
  };
}

export interface Cors {
  /**
   * Registers an OPTIONS route answering the preflight for every covered path that has no
   * OPTIONS route of its own. Called once the routes it covers are registered: a path whose own
   * OPTIONS route comes later (GraphQL's 405) keeps it, and its preflights are answered first.
   */
  answerPreflights(): void;
}

/**
 * One CORS mechanism for every policy, scoped to the Fastify context it is registered in (and
 * the contexts below). Covered routes get the CORS headers on every response, errors included,
 * so the page can read them; a preflight from an allowed origin gets 204 with the path's methods.
 * Anything that is not an allowed preflight goes on as before (404, or the path's own OPTIONS route).
 */
export function registerCors(app: FastifyInstance, policy: CorsPolicy): Cors {
  /** Covered path → its methods, in registration order. */
  const covered = new Map<string, string[]>();
  /** Paths that answer OPTIONS with a route of their own. */
  const ownOptions = new Set<string>();
  const allowOrigin = (origin: string | undefined): string | undefined => {
    if (policy.origins === '*') return '*';
    return origin !== undefined && policy.origins.has(origin) ? origin : undefined;
  };

  /** Answers an allowed preflight; returns false when the request is something else. */
  const preflight = (request: FastifyRequest, reply: FastifyReply): boolean => {
    const methods = covered.get(request.routeOptions.url ?? '');
    const origin = allowOrigin(request.headers.origin);
    if (!methods || !origin || !request.headers['access-control-request-method']) return false;
    reply
      .code(204)
      .header('access-control-allow-origin', origin)
      .header('access-control-allow-methods', methods.join(', '))
      .header('access-control-allow-headers', policy.allowHeaders)
      .header('access-control-max-age', '600');
    if (origin !== '*') varyOnOrigin(reply);
    reply.send();
    return true;
  };
  const preflightFirst: onRequestHookHandler = (request, reply, done) => {
    if (!preflight(request, reply)) done();
  };
  const withHeaders: onSendHookHandler = (request, reply, payload, done) => {
    const origin = allowOrigin(request.headers.origin);
    if (origin) {
      reply
        .header('access-control-allow-origin', origin)
        .header('access-control-expose-headers', policy.exposeHeaders);
    }
    if (policy.origins !== '*') varyOnOrigin(reply);
    done(null, payload);
  };

  app.addHook('onRoute', (route) => {
    if (route.config?.corsPreflight) return;
    const methods = [route.method].flat();
    if (methods.includes('OPTIONS')) {
      ownOptions.add(route.url);
      route.onRequest = [preflightFirst, ...[route.onRequest ?? []].flat()];
    }
    // HEAD routes come with GET ones; OPTIONS is the preflight itself.
    const callable = methods.filter((m) => m !== 'HEAD' && m !== 'OPTIONS');
    if (callable.length === 0 || !route.config || !policy.covers(route.config)) return;
    route.onSend = [...[route.onSend ?? []].flat(), withHeaders];
    const known = covered.get(route.url);
    if (known) known.push(...callable);
    else covered.set(route.url, [...callable]);
  });

  return {
    answerPreflights() {
      for (const url of covered.keys()) {
        if (ownOptions.has(url)) continue;
        ownOptions.add(url);
        app.options(url, { config: { corsPreflight: true } }, (request, reply) => {
          if (!preflight(request, reply)) reply.callNotFound();
        });
      }
    },
  };
}

/** The answer depends on Origin (caches must not serve one origin's answer to another); other Vary values stay. */
function varyOnOrigin(reply: FastifyReply): void {
  const current = reply.getHeader('vary');
  const values =
    current === undefined
      ? []
      : String(current)
          .split(',')
          .map((v) => v.trim());
  if (!values.some((v) => v.toLowerCase() === 'origin' || v === '*'))
    reply.header('vary', [...values, 'Origin'].join(', '));
}
