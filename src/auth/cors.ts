import type { FastifyInstance } from 'fastify';

/**
 * The endpoints a browser-based public client calls from its own origin, with their methods.
 * Never the authorization or console pages (they are navigated to, and cookie-bound) nor
 * introspection (servers only).
 */
const CORS_ROUTES: Record<string, string> = {
  '/oauth/token': 'POST',
  '/oauth/revoke': 'POST',
  '/oauth/userinfo': 'GET, POST',
  '/.well-known/openid-configuration': 'GET',
  '/.well-known/oauth-authorization-server': 'GET',
  '/.well-known/jwks.json': 'GET',
};

/**
 * Any origin, no credentials: these endpoints authenticate by what the request carries (client
 * id, PKCE verifier, bearer token), never by cookies, so `*` gives another site nothing it
 * could not send itself. Error responses carry the header too, so the client can read them.
 */
export function registerCors(app: FastifyInstance): void {
  app.addHook('onSend', async (request, reply, payload) => {
    if (request.routeOptions.url !== undefined && request.routeOptions.url in CORS_ROUTES) {
      reply
        .header('access-control-allow-origin', '*')
        .header('access-control-expose-headers', 'WWW-Authenticate, Retry-After');
    }
    return payload;
  });
  for (const [path, methods] of Object.entries(CORS_ROUTES)) {
    app.options(path, async (_request, reply) =>
      reply
        .code(204)
        .header('access-control-allow-methods', methods)
        .header('access-control-allow-headers', 'Authorization, Content-Type')
        .header('access-control-max-age', '600')
        .send(),
    );
  }
}
