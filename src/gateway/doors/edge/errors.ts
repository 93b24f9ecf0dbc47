// HTTP error rendering at the edge: anything thrown on a route, or refused by Fastify before
// routing, answered in the service's REST or GraphQL error shape with its status and headers.
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError, ERROR_CODES, badInput } from '../../../kernel/errors.js';
import { appErrorOf, formatErrors, toGraphQLError } from '../../pipeline/errors.js';

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
