import { readFileSync } from 'node:fs';
import cookie from '@fastify/cookie';
import type { FastifyError, FastifyInstance } from 'fastify';
import { PUBLIC_CLIENT_CORS, registerCors } from '../gateway/doors/cors.js';
import type { DomainModule, RunningModule } from '../gateway/schema/module.js';
import { AppError } from '../kernel/errors.js';
import { authorizeDecision, authorizeGet } from './authorize.js';
import { ConsolePages, SHOWN_ONCE_PATH } from './console.js';
import { ConsoleGateway } from './console-gateway.js';
import type { Operations } from '../gateway/pipeline/operation.js';
import { discoveryDocument, jwks } from './discovery.js';
import { errorPage } from './html.js';
import { introspectEndpoint } from './introspect-endpoint.js';
import { JWKS_MAX_AGE_SECONDS } from './keys.js';
import { OAuthError } from './oauth-error.js';
import { revokeEndpoint } from './revoke-endpoint.js';
import { openCounterStore } from '../kernel/counters.js';
import { AuthRuntime } from './runtime.js';
import { watchRevokedCredentials } from './revocations.js';
import { tokenEndpoint } from './token-endpoint.js';
import { userinfoEndpoint } from './userinfo-endpoint.js';
import { oauthOpenApi } from './openapi.js';
import { PlanChangeResolver } from './plan-change.js';
import { AccessResolver } from './access-resolvers.js';

const ASSETS: Record<string, { type: string; body: string }> = {
  'console.css': {
    type: 'text/css; charset=utf-8',
    body: readFileSync(new URL('./assets/console.css', import.meta.url), 'utf8'),
  },
  'console.js': {
    type: 'text/javascript; charset=utf-8',
    body: readFileSync(new URL('./assets/console.js', import.meta.url), 'utf8'),
  },
};

/** OAuth endpoints answer in RFC 6749 JSON; framework errors (bad body, wrong type) are invalid_request. */
async function oauthApi(app: FastifyInstance, runtime: AuthRuntime): Promise<void> {
  app.setErrorHandler((error: FastifyError, request, reply) => {
    let oauth: OAuthError;
    if (error instanceof OAuthError) oauth = error;
    else if (typeof error.statusCode === 'number' && error.statusCode < 500)
      oauth = new OAuthError('invalid_request', error.message);
    else {
      request.log.error({ err: error }, 'oauth endpoint failed');
      oauth = new OAuthError('server_error', 'Internal server error', 500);
    }
    return reply
      .code(oauth.status)
      .headers(oauth.headers)
      .header('cache-control', 'no-store')
      .send(oauth.toJSON());
  });

  const cors = registerCors(app, PUBLIC_CLIENT_CORS);
  const callable = { config: { cors: true } };
  const issuer = runtime.issuer.issuer;
  const metadata = discoveryDocument(issuer);
  app.get('/.well-known/openid-configuration', callable, async () => metadata);
  app.get('/.well-known/oauth-authorization-server', callable, async () => metadata);
  app.get('/.well-known/jwks.json', callable, async (_request, reply) => {
    reply.header('cache-control', `public, max-age=${JWKS_MAX_AGE_SECONDS}`);
    return jwks(runtime);
  });
  app.post('/oauth/token', callable, (request, reply) => tokenEndpoint(runtime, request, reply));
  app.post('/oauth/revoke', callable, (request, reply) => revokeEndpoint(runtime, request, reply));
  // Servers only: no CORS.
  app.post('/oauth/introspect', (request, reply) => introspectEndpoint(runtime, request, reply));
  app.get('/oauth/userinfo', callable, (request, reply) => userinfoEndpoint(runtime, request, reply));
  app.post('/oauth/userinfo', callable, (request, reply) => userinfoEndpoint(runtime, request, reply));
  cors.answerPreflights();
}

/** Browser pages: the authorization step and the console. Errors are pages, never JSON or redirects. */
async function browserPages(
  app: FastifyInstance,
  runtime: AuthRuntime,
  operations: Operations,
): Promise<void> {
  await app.register(cookie);
  app.setErrorHandler((error: FastifyError, request, reply) => {
    if (error instanceof OAuthError)
      return errorPage(reply, error.status, 'Request rejected', `${error.error}: ${error.description}`);
    const status = error instanceof AppError ? error.status : (error.statusCode ?? 500);
    if (status >= 500) request.log.error({ err: error }, 'auth page failed');
    return errorPage(
      reply,
      status,
      status >= 500 ? 'Something went wrong' : 'Request rejected',
      status >= 500 ? 'Internal server error' : error.message,
    );
  });

  app.get('/oauth/authorize', (request, reply) => authorizeGet(runtime, request, reply));
  app.post('/oauth/authorize', (request, reply) => authorizeDecision(runtime, request, reply));

  const { audit, clock } = runtime.services;
  const pages = new ConsolePages(runtime, new ConsoleGateway(operations, audit, clock));
  app.get('/console/login', (request, reply) => pages.loginForm(request, reply));
  app.post('/console/login', (request, reply) => pages.login(request, reply));
  app.post('/console/logout', (request, reply) => pages.logout(request, reply));
  app.get('/console', (request, reply) => pages.dashboard(request, reply));
  app.get(SHOWN_ONCE_PATH, (request, reply) => pages.shownOncePage(request, reply));
  app.get('/console/usage', (request, reply) => pages.reports.usage(request, reply));
  app.get('/console/requests', (request, reply) => pages.reports.requestLog(request, reply));
  app.get('/console/request', (request, reply) => pages.reports.call(request, reply));
  app.post('/console/clients', (request, reply) => pages.registerClient(request, reply));
  app.post('/console/clients/:clientId/rotate-secret', (request, reply) =>
    pages.rotateClient(request, reply),
  );
  app.post('/console/clients/:clientId/delete', (request, reply) => pages.deleteClient(request, reply));
  app.post('/console/keys', (request, reply) => pages.createKey(request, reply));
  app.post('/console/keys/:id/rotate', (request, reply) => pages.rotateKey(request, reply));
  app.post('/console/keys/:id/revoke', (request, reply) => pages.revokeKey(request, reply));
  app.post('/console/sandbox-keys/:id/revoke', (request, reply) => pages.revokeSandboxKey(request, reply));
  app.post('/console/clients/:clientId/redirect-uris', (request, reply) =>
    pages.updateRedirectUris(request, reply),
  );
  app.get('/console/apps', (request, reply) => pages.connectedApps(request, reply));
  app.post('/console/apps/:clientId/revoke', (request, reply) => pages.revokeConnectedApp(request, reply));
  const hooks = pages.webhooks;
  app.get('/console/webhooks', (request, reply) => hooks.list(request, reply));
  app.get('/console/webhooks/:door/:id', (request, reply) => hooks.endpoint(request, reply));
  app.post('/console/webhooks/:door/:id/test', (request, reply) => hooks.sendTest(request, reply));
  app.post('/console/webhooks/:door/:id/enable', (request, reply) => hooks.enable(request, reply));
  app.post('/console/webhooks/:door/:id/rotate-secret', (request, reply) =>
    hooks.rotateSecret(request, reply),
  );
  app.post('/console/webhooks/:door/:id/deliveries/:deliveryId/resend', (request, reply) =>
    hooks.resend(request, reply),
  );
  app.get('/console/assets/:name', async (request, reply) => {
    const asset = ASSETS[(request.params as { name: string }).name];
    if (!asset) return errorPage(reply, 404, 'Not found', 'No such asset');
    return reply
      .type(asset.type)
      .header('cache-control', 'public, max-age=3600')
      .header('x-content-type-options', 'nosniff')
      .send(asset.body);
  });
}

/**
 * The OAuth 2.0 authorization server and the control panel. Its routes are not API routes (no
 * `config.audit`): the edge does not resolve credentials for them; client and user authentication
 * happen here. On the resource side it plugs its JWT verifier into the gateway's credentials.
 */
export const authModule: DomainModule = {
  name: 'auth',
  summary:
    'The OAuth 2.0 authorization server and OpenID Connect provider: tokens, revocation, introspection, userinfo and discovery',
  openApi: oauthOpenApi,
  resolvers: [PlanChangeResolver, AccessResolver],
  async start(services) {
    const { config, clock, logger } = services;
    const throttleStore = await openCounterStore({
      redisUrl: config.redisUrl,
      prefix: `${config.redisPrefix}:auth:`,
      clock,
      report: (err) =>
        logger.warn(
          { err },
          'auth throttle: Redis did not answer; counting failures in this process until it does',
        ),
    });
    const runtime = new AuthRuntime(services, throttleStore);
    await runtime.start();
    services.credentials.addTokenVerifier(runtime);
    const stopWatch = watchRevokedCredentials(services);
    return {
      runtime,
      async http(app, operations) {
        await app.register(async (scope) => oauthApi(scope, runtime));
        await app.register(async (scope) => browserPages(scope, runtime, operations));
      },
      async stop() {
        stopWatch();
        await runtime.stop();
      },
    } satisfies RunningAuth;
  },
};

/** The running authorization server (tests and operators reach its housekeeping through it). */
export interface RunningAuth extends RunningModule {
  runtime: AuthRuntime;
}

/** Tells the running authorization server apart from the other modules' handles. */
export function isRunningAuth(module: RunningModule): module is RunningAuth {
  return (module as Partial<RunningAuth>).runtime instanceof AuthRuntime;
}
