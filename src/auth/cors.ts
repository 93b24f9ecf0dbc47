import type { FastifyInstance } from 'fastify';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Callable cross-origin by browser-based public clients (see registerCors). */
    cors?: boolean;
  }
}

/**
 * Any origin, no credentials, on the routes registered after this with `config: { cors: true }`:
 * the endpoints a browser-based public client calls from its own origin (token, revocation,
 * userinfo, discovery, JWKS). Never the authorization or console pages (they are navigated to,
 * and cookie-bound) nor introspection (servers only). These endpoints authenticate by what the
 * request carries (client id, PKCE verifier, bearer token), never by cookies, so `*` gives another
 * site nothing it could not send itself. Error responses carry the header too, so the client can
 * read them. Each such path gets a preflight route listing its methods.
 */
export function registerCors(app: FastifyInstance): void {
  /** Path → methods, in registration order. */
  const routes = new Map<string, string[]>();
  app.addHook('onRoute', (route) => {
    // HEAD routes come with GET ones; OPTIONS is the preflight itself.
    const methods = [route.method].flat().filter((m) => m !== 'HEAD' && m !== 'OPTIONS');
    if (!route.config?.cors || methods.length === 0) return;
    const known = routes.get(route.url);
    if (known) {
      known.push(...methods);
      return;
    }
    routes.set(route.url, [...methods]);
    const allowed = routes.get(route.url)!;
    app.options(route.url, { config: { cors: true } }, async (_request, reply) =>
      reply
        .code(204)
        .header('access-control-allow-methods', allowed.join(', '))
        .header('access-control-allow-headers', 'Authorization, Content-Type')
        .header('access-control-max-age', '600')
        .send(),
    );
  });
  app.addHook('onSend', async (request, reply, payload) => {
    if (request.routeOptions.config?.cors) {
      reply
        .header('access-control-allow-origin', '*')
        .header('access-control-expose-headers', 'WWW-Authenticate, Retry-After');
    }
    return payload;
  });
}
