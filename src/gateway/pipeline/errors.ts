import { GraphQLError, type GraphQLFormattedError } from 'graphql';
import { outageError } from '../../db/errors.js';
import { AppError, isAppError } from '../../kernel/errors.js';

/** Turns an AppError into the GraphQLError clients see; the HTTP status rides along for whole-request failures. */
export function toGraphQLError(error: AppError): GraphQLError {
  return new GraphQLError(error.message, {
    originalError: error,
    extensions: { code: error.code, ...error.details, http: { status: error.status } },
  });
}

/**
 * Finds the AppError behind a GraphQL error (resolver throw, or our own wrapping); a lost
 * database or Redis connection is one too (503).
 */
export function appErrorOf(error: unknown): AppError | undefined {
  let current: unknown = error;
  for (let i = 0; i < 5 && current; i++) {
    if (isAppError(current)) return current;
    const outage = outageError(current);
    if (outage) return outage;
    current = (current as { originalError?: unknown }).originalError;
  }
  return undefined;
}

/**
 * The final shape of every GraphQL error: AppErrors keep their code and details; GraphQL's own
 * request errors (syntax, validation) keep theirs; anything else is an internal error whose
 * message is not leaked.
 */
export function formatGraphQLError(
  formatted: GraphQLFormattedError,
  error: unknown,
  log: (e: unknown) => void,
): GraphQLFormattedError {
  const app = appErrorOf(error);
  if (app) {
    return {
      ...formatted,
      message: app.message,
      extensions: { code: app.code, ...app.details },
    };
  }
  const code = formatted.extensions?.code;
  if (typeof code === 'string' && code !== 'INTERNAL_SERVER_ERROR') return formatted;
  // Apollo Server's own request errors without a code (a persisted-query hash that does not match
  // its query) carry their 4xx status: the caller's fault, so the message is theirs to see.
  const status = (error as { extensions?: { http?: { status?: unknown } } } | null)?.extensions?.http?.status;
  if (typeof status === 'number' && status < 500)
    return { ...formatted, extensions: { ...formatted.extensions, code: 'BAD_REQUEST' } };
  log(error);
  return {
    message: 'Internal server error',
    locations: formatted.locations,
    path: formatted.path,
    extensions: { code: 'INTERNAL_SERVER_ERROR' },
  };
}

/**
 * Every GraphQL error a client sees passes here, by every door: the error's own code (or
 * INTERNAL_SERVER_ERROR) joins its extensions, the transport-only `http` extension is dropped,
 * and `formatGraphQLError` decides what is shown. Apollo Server applies the same steps to the
 * request errors it answers itself (syntax, validation), so both HTTP doors agree byte for byte.
 */
export function formatErrors(
  errors: readonly GraphQLError[],
  log: (e: unknown) => void,
): GraphQLFormattedError[] {
  return errors.map((error) => {
    // graphql-jit's errors leave `extensions` undefined when there are none.
    const { http: _http, ...rest } = (error.extensions ?? {}) as Record<string, unknown>;
    const extensions = { ...rest, code: rest.code ?? 'INTERNAL_SERVER_ERROR' };
    return formatGraphQLError({ ...error.toJSON(), extensions }, error, log);
  });
}
