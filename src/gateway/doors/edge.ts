import { randomUUID } from 'node:crypto';
import secureJson from 'secure-json-parse';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { routeOf } from './fastify-types.js';
import { AppError, ERROR_CODES, badInput, unauthenticated, withHeaders } from '../../kernel/errors.js';
import type { Clock } from '../../kernel/clock.js';
import { isPromise } from '../../kernel/maybe-async.js';
import type { Principal } from '../../kernel/principal.js';
import type { AuditLog } from '../schema/context.js';
import { extractCredential, type CredentialResolver } from './credentials.js';
import { appErrorOf, formatErrors, toGraphQLError } from '../pipeline/errors.js';
import { doorOf, type Metrics } from '../observability/metrics.js';
import type { Telemetry } from '../observability/telemetry.js';

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,64}$/;

/** Honours a sane incoming X-Request-Id (so traces join up across services), else makes one. */
export function requestIdOf(header: string | string[] | undefined): string {
  return typeof header === 'string' && REQUEST_ID.test(header) ? header : randomUUID();
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

/** Maps anything thrown on a route to the service's error shapes (REST or GraphQL). */
export function toAppError(error: unknown): AppError {
  const known = appErrorOf(error);
  if (known) return known;
  const fe = error as FastifyError;
  const status = typeof fe?.statusCode === 'number' ? fe.statusCode : 500;
  if (status === 415)
    return new AppError('UNSUPPORTED_MEDIA_TYPE', `Unsupported Content-Type '${contentTypeOf(fe)}'`);
  if (status === 413) return new AppError('PAYLOAD_TOO_LARGE', 'Request body is too large');
  if (status === 404) return new AppError('NOT_FOUND', fe.message || 'Not found');
  if (status === 429) return new AppError('RATE_LIMIT_EXCEEDED', fe.message);
  if (status >= 400 && status < 500) return new AppError('BAD_USER_INPUT', fe.message || 'Bad request');
  return new AppError('INTERNAL_SERVER_ERROR', 'Internal server error');
}

function contentTypeOf(error: FastifyError): string {
  return /Unsupported Media Type: (.*)$/.exec(error.message)?.[1] ?? 'unknown';
}

export function sendError(request: FastifyRequest, reply: FastifyReply, error: AppError): FastifyReply {
  reply.code(ERROR_CODES[error.code].status).headers(error.headers);
  // For the errors metric; GraphQL answers that execute carry their codes in gatewayMeta already.
  request.gatewayMeta ??= { headers: {} };
  request.gatewayMeta.errorCodes = [error.code];
  if (error.code === 'FORBIDDEN' && request.presentation === 'bearer' && !error.headers['WWW-Authenticate']) {
    const scopes = (error.details.requiredScopes as string[] | undefined)?.join(' ') ?? '';
    reply.header(
      'WWW-Authenticate',
      `Bearer realm="tidegate", error="insufficient_scope", scope="${scopes}"`,
    );
  }
  if (error.code === 'UNAUTHENTICATED' && !error.headers['WWW-Authenticate']) {
    reply.header('WWW-Authenticate', 'Bearer realm="tidegate"');
  }
  // Optional: refusals before routing (frameworkRefusal) have no route options yet.
  if (request.routeOptions?.config?.graphql) {
    // The one GraphQL error shape, as the pipeline formats it (an unexpected error is already logged).
    const errors = formatErrors([toGraphQLError(error)], () => undefined);
    return reply.type('application/json; charset=utf-8').send(JSON.stringify({ errors }) + '\n');
  }
  const { restCode } = ERROR_CODES[error.code];
  const details = Object.keys(error.details).length > 0 ? { details: error.details } : {};
  return reply.type('application/json; charset=utf-8').send({
    error: { code: restCode, message: error.message, requestId: request.id, ...details },
  });
}

/**
 * Fastify's own refusals before a route is found (Fastify's `frameworkErrors` option), in the
 * service's error shape rather than Fastify's, naming the path (bad percent-encoding, a segment
 * over Fastify's 100-character limit).
 */
export function frameworkRefusal(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  const appError =
    error.code === 'FST_ERR_BAD_URL'
      ? badInput('path', 'is not valid percent-encoded UTF-8', { rule: 'URL_ENCODING' })
      : error.code === 'FST_ERR_MAX_PARAM_LENGTH'
        ? badInput('path', 'has a segment longer than 100 characters', { rule: 'PATH_SEGMENT_TOO_LONG' })
        : toAppError(error);
  sendError(request, reply, appError);
}

export function registerErrorHandlers(app: FastifyInstance): void {
  app.setErrorHandler((error, request, reply) => {
    const appError = toAppError(error);
    if (appError.code === 'INTERNAL_SERVER_ERROR') request.log.error({ err: error }, 'unhandled error');
    return sendError(request, reply, appError);
  });
  app.setNotFoundHandler((request, reply) =>
    sendError(
      request,
      reply,
      new AppError('NOT_FOUND', `No route ${request.method} ${request.url.split('?')[0]}`),
    ),
  );
}

/** Deepest nesting of arrays and objects a JSON body may have; the deepest real request is about 8. */
export const JSON_BODY_MAX_DEPTH = 32;

/**
 * JSON bodies as Fastify parses them (invalid → 400, `__proto__`/`constructor` keys refused)
 * without secure-json-parse's two regular-expression scans of every body: a body can only hold
 * such a key if it contains one of those words literally or a \u escape, and almost none do.
 * An empty body is no body: the port-operations document has clients send
 * `Content-Type: application/json` on every request, bodiless DELETEs and transitions included;
 * a route that needs a body says so naming `body`. Nesting deeper than `JSON_BODY_MAX_DEPTH` is
 * refused before parsing, so no later walk over the value can exhaust the stack.
 */
export function registerJsonBodyParser(app: FastifyInstance): void {
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
    const text = body as string;
    if (text.trim().length === 0) return done(null, undefined);
    if (nestingExceeds(text, JSON_BODY_MAX_DEPTH)) {
      return done(
        badInput('body', `nests arrays or objects deeper than ${JSON_BODY_MAX_DEPTH} levels`, {
          rule: 'JSON_TOO_DEEP',
        }),
      );
    }
    const suspicious = text.includes('__proto__') || text.includes('constructor') || text.includes('\\u');
    try {
      done(
        null,
        suspicious
          ? secureJson.parse(text, { protoAction: 'error', constructorAction: 'error' })
          : JSON.parse(text),
      );
    } catch (e) {
      const message = (e as Error).message;
      done(
        /forbidden (prototype|constructor) property/.test(message)
          ? badInput('body', 'must not hold a "__proto__" or "constructor.prototype" key', {
              rule: 'PROTOTYPE_KEY',
            })
          : new AppError('BAD_USER_INPUT', `The body is not valid JSON: ${message}`),
      );
    }
  });
}

/** True when `[`/`{` nest deeper than `max` outside strings; one pass, no parse. */
export function nestingExceeds(text: string, max: number): boolean {
  // Nesting deeper than `max` takes more than 2 × max characters: short bodies skip the scan.
  if (text.length <= max * 2) return false;
  // Depth never exceeds the number of opening brackets: a body with no more than `max` of them
  // (nearly every request) is answered by a few native searches instead of a loop over each character.
  if (openingBrackets(text, max + 1) <= max) return false;
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return true;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return false;
}

/** How many `{` and `[` `text` holds (inside strings too), counting no further than `stopAt`. */
function openingBrackets(text: string, stopAt: number): number {
  let count = 0;
  for (const bracket of ['{', '[']) {
    for (let i = text.indexOf(bracket); i !== -1 && count < stopAt; i = text.indexOf(bracket, i + 1)) count++;
  }
  return count;
}
