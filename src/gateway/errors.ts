import { GraphQLError, type GraphQLFormattedError } from 'graphql';
import { AppError, isAppError } from '../kernel/errors.js';

/** Turns an AppError into the GraphQLError clients see; the HTTP status rides along for whole-request failures. */
export function toGraphQLError(error: AppError): GraphQLError {
  return new GraphQLError(error.message, {
    originalError: error,
    extensions: { code: error.code, ...error.details, http: { status: error.status } },
  });
}

/** Finds the AppError behind a GraphQL error (resolver throw, or our own wrapping). */
export function appErrorOf(error: unknown): AppError | undefined {
  let current: unknown = error;
  for (let i = 0; i < 5 && current; i++) {
    if (isAppError(current)) return current;
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
  log(error);
  return {
    message: 'Internal server error',
    locations: formatted.locations,
    path: formatted.path,
    extensions: { code: 'INTERNAL_SERVER_ERROR' },
  };
}
