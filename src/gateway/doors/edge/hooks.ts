// The edge's Fastify hooks around every route: request id, credentials → principal on the way in;
// metrics, the request log line and audit on the way out.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { routeOf } from '../fastify-types.js';
import { AppError, unauthenticated, withHeaders } from '../../../kernel/errors.js';
import type { Clock } from '../../../kernel/clock.js';
import { isPromise } from '../../../kernel/maybe-async.js';
import { timeOrderedUuid } from '../../../kernel/ids.js';
import type { Principal } from '../../../kernel/principal.js';
import type { AuditLog } from '../../schema/context.js';
import { extractCredential, type CredentialResolver } from '../credentials.js';
import { doorOf, type Metrics } from '../../observability/metrics.js';
import type { Telemetry } from '../../observability/telemetry.js';

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,64}$/;

/**
 * Honours a sane incoming X-Request-Id (so traces join up across services), else makes one: a
 * time-ordered UUID, since every request's id goes into the audit log's index.
 */
export function requestIdOf(header: string | string[] | undefined): string {
  return typeof header === 'string' && REQUEST_ID.test(header) ? header : timeOrderedUuid();
}

/**
 * The edge: trace span → request id → credentials → principal, then metrics, the request log
 * line and audit on the way out. Credentials and audit are for API routes (GraphQL and REST);
 * rate limits and quotas run after the operation is known.
 */
export function registerEdge(
  app: FastifyInstance,
  credentials: CredentialResolver,
  audit: AuditLog,
  clock: Clock,
  observe: { metrics: Metrics; telemetry: Telemetry },
): void {
  app.decorateRequest('principal', null);
  app.decorateRequest('presentation', null);
  app.decorateRequest('gatewayMeta', null);
  app.decorateRequest('gatewayRoute', null);
  // First, so the request's span is active while the credential is looked up.
  observe.telemetry.traceRequests(app);

  // Callback-style hooks: with a cached credential a request passes the edge without a promise.
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id);
    if (!routeOf(request).config.audit) return done();
    const presented = extractCredential(request.headers);
    if (presented === null) return done();
    if (presented === 'malformed') return done(withChallenge(unauthenticated(), 'bearer'));
    request.presentation = presented.presentation;
    const resolved = credentials.resolve(presented.secret, request.raw.socket);
    if (isPromise(resolved)) resolved.then((principal) => admitCaller(request, principal, done), done);
    else admitCaller(request, resolved, done);
  });

  app.addHook('onResponse', (request, reply, done) => {
    const options = routeOf(request);
    const name = options.config.audit;
    // GraphQL requests are named by their operation; REST calls by their documented route.
    const route =
      (options.config.graphql && request.gatewayMeta?.operation) || name || options.url || 'unmatched';
    const principal = request.principal;
    const status = reply.statusCode;
    const door = doorOf(request);
    const errorCodes = request.gatewayMeta?.errorCodes ?? [];
    observe.metrics.request(door, route, status, reply.elapsedTime / 1000, errorCodes, principal !== null);
    // Fastify's own request lines are off (app.ts): this one says who called what. Built only
    // when it will be written (LOG_LEVEL info or lower).
    if (INFO_OR_LOWER.has(request.log.level))
      request.log.info(
        {
          method: request.method,
          url: loggableUrl(request.url),
          route,
          status,
          durationMs: Math.round(reply.elapsedTime * 10) / 10,
          accountId: principal?.accountId,
          credentialKind: principal?.credential.kind,
          credentialId: principal?.credential.id,
        },
        'request completed',
      );
    if (!name) return done();
    audit.record({
      at: clock.now(),
      requestId: request.id,
      accountId: principal?.accountId,
      credentialKind: principal?.credential.kind,
      credentialId: principal?.credential.id,
      ip: request.ip,
      userAgent: request.headers['user-agent'],
      operation: route,
      status,
      durationMs: reply.elapsedTime,
      door,
      errorCode: errorCodes[0] ?? null,
    });
    done();
  });
}

/** Levels at which the request line is written. */
const INFO_OR_LOWER = new Set(['trace', 'debug', 'info']);

/** Query values that are credentials (a signed upload URL's token) never reach a log line. */
export function loggableUrl(url: string): string {
  if (!url.includes('?')) return url;
  return url.replace(/([?&](?:token|access_token|client_secret)=)[^&#]*/g, '$1[REDACTED]');
}

/** The end of the credential step: the request goes on with its principal, or is refused with 401. */
function admitCaller(
  request: FastifyRequest,
  principal: Principal | null,
  done: (error?: Error) => void,
): void {
  if (!principal) return done(withChallenge(unauthenticated(), request.presentation!));
  request.principal = principal;
  done();
}

function withChallenge(error: AppError, presentation: 'bearer' | 'x-api-key'): AppError {
  const challenge =
    presentation === 'bearer'
      ? 'Bearer realm="tidegate", error="invalid_token", error_description="The access token is missing, invalid, expired or revoked"'
      : 'Bearer realm="tidegate"';
  return withHeaders(error, { 'WWW-Authenticate': challenge });
}
