import { randomUUID } from 'node:crypto';
import secureJson from 'secure-json-parse';
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import './fastify-types.js';
import { AppError, ERROR_CODES, unauthenticated, withHeaders } from '../kernel/errors.js';
import type { AuditWriter } from '../audit/writer.js';
import type { Clock } from '../kernel/clock.js';
import { isPromise } from '../kernel/maybe-async.js';
import type { Principal } from '../kernel/principal.js';
import { extractCredential, type CredentialResolver } from './credentials.js';
import { appErrorOf, formatErrors, toGraphQLError } from './errors.js';

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,64}$/;

/** Honours a sane incoming X-Request-Id (so traces join up across services), else makes one. */
export function requestIdOf(header: string | string[] | undefined): string {
  return typeof header === 'string' && REQUEST_ID.test(header) ? header : randomUUID();
}

/**
 * The edge: request id → credentials → principal, then audit on the way out. Runs for every
 * API route (GraphQL and REST); rate limits and quotas run after the operation is known.
 */
export function registerEdge(
  app: FastifyInstance,
  credentials: CredentialResolver,
  audit: AuditWriter,
  clock: Clock,
): void {
  app.decorateRequest('principal', null);
  app.decorateRequest('presentation', null);
  app.decorateRequest('gatewayMeta', null);

  // Callback-style hooks: with a cached credential a request passes the edge without a promise.
  app.addHook('onRequest', (request, reply, done) => {
    reply.header('x-request-id', request.id);
    if (!request.routeOptions.config.audit) return done();
    const presented = extractCredential(request.headers);
    if (presented === null) return done();
    if (presented === 'malformed') return done(withChallenge(unauthenticated(), 'bearer'));
    request.presentation = presented.presentation;
    const resolved = credentials.resolve(presented.secret);
    if (isPromise(resolved)) resolved.then((principal) => admitCaller(request, principal, done), done);
    else admitCaller(request, resolved, done);
  });

  app.addHook('onResponse', (request, reply, done) => {
    const name = request.routeOptions.config.audit;
    if (!name) return done();
    const principal = request.principal;
    audit.record({
      at: clock.now(),
      requestId: request.id,
      accountId: principal?.accountId,
      credentialKind: principal?.credential.kind,
      credentialId: principal?.credential.id,
      ip: request.ip,
      userAgent: request.headers['user-agent'],
      // GraphQL requests are named by their operation; REST calls by their documented route.
      operation: (request.routeOptions.config.graphql && request.gatewayMeta?.operation) || name,
      status: reply.statusCode,
      durationMs: reply.elapsedTime,
    });
    done();
  });
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
  if (request.routeOptions.config.graphql) {
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

/**
 * JSON bodies as Fastify parses them (empty → 400, invalid → 400, `__proto__`/`constructor` keys
 * refused) without secure-json-parse's two regular-expression scans of every body: a body can only
 * hold such a key if it contains one of those words literally or a \u escape, and almost none do.
 */
export function registerJsonBodyParser(app: FastifyInstance): void {
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_request, body, done) => {
    const text = body as string;
    if (text.length === 0) return done(new AppError('BAD_USER_INPUT', 'The JSON body is empty'));
    const suspicious = text.includes('__proto__') || text.includes('constructor') || text.includes('\\u');
    try {
      done(
        null,
        suspicious
          ? secureJson.parse(text, { protoAction: 'error', constructorAction: 'error' })
          : JSON.parse(text),
      );
    } catch (e) {
      done(new AppError('BAD_USER_INPUT', `The body is not valid JSON: ${(e as Error).message}`));
    }
  });
}
