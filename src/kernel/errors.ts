/**
 * One error type for the whole service. Its code decides everything a client sees:
 * the GraphQL `extensions.code`, the REST error code and the HTTP status.
 */
export type ErrorCode =
  | 'UNAUTHENTICATED'
  | 'FORBIDDEN'
  | 'PLAN_REQUIRED'
  | 'NOT_FOUND'
  | 'BAD_USER_INPUT'
  | 'CONFLICT'
  | 'PAYLOAD_TOO_LARGE'
  | 'METHOD_NOT_ALLOWED'
  | 'UNSUPPORTED_MEDIA_TYPE'
  | 'RATE_LIMIT_EXCEEDED'
  | 'LIMIT_REACHED'
  | 'SERVICE_UNAVAILABLE'
  | 'DEADLINE_EXCEEDED'
  | 'INTERNAL_SERVER_ERROR';

interface CodeMapping {
  /** HTTP status for REST responses (and for /graphql when the whole request fails). */
  status: number;
  /** The code REST clients see; the liquidity document names 401 `UNAUTHORIZED`. */
  restCode: string;
}

export const ERROR_CODES: Readonly<Record<ErrorCode, CodeMapping>> = {
  UNAUTHENTICATED: { status: 401, restCode: 'UNAUTHORIZED' },
  FORBIDDEN: { status: 403, restCode: 'FORBIDDEN' },
  PLAN_REQUIRED: { status: 402, restCode: 'PLAN_REQUIRED' },
  NOT_FOUND: { status: 404, restCode: 'NOT_FOUND' },
  BAD_USER_INPUT: { status: 400, restCode: 'BAD_USER_INPUT' },
  CONFLICT: { status: 409, restCode: 'CONFLICT' },
  PAYLOAD_TOO_LARGE: { status: 413, restCode: 'PAYLOAD_TOO_LARGE' },
  METHOD_NOT_ALLOWED: { status: 405, restCode: 'METHOD_NOT_ALLOWED' },
  UNSUPPORTED_MEDIA_TYPE: { status: 415, restCode: 'UNSUPPORTED_MEDIA_TYPE' },
  RATE_LIMIT_EXCEEDED: { status: 429, restCode: 'RATE_LIMIT_EXCEEDED' },
  LIMIT_REACHED: { status: 429, restCode: 'LIMIT_REACHED' },
  SERVICE_UNAVAILABLE: { status: 503, restCode: 'SERVICE_UNAVAILABLE' },
  // The server chose to stop, not a fault: 503 without Retry-After, since the same request would
  // stop again; the message says to ask for less.
  DEADLINE_EXCEEDED: { status: 503, restCode: 'DEADLINE_EXCEEDED' },
  INTERNAL_SERVER_ERROR: { status: 500, restCode: 'INTERNAL_SERVER_ERROR' },
};

/** GraphQL's own request errors (the document or the request, not our rules): all 400. */
const GRAPHQL_REQUEST_CODES = new Set([
  'GRAPHQL_PARSE_FAILED',
  'GRAPHQL_VALIDATION_FAILED',
  'OPERATION_RESOLUTION_FAILURE',
  'BAD_REQUEST',
]);

/** The HTTP status an `extensions.code` implies: ours from the table, GraphQL's request errors 400. */
export function statusOfCode(code: unknown): number {
  if (typeof code === 'string' && code in ERROR_CODES) return ERROR_CODES[code as ErrorCode].status;
  return typeof code === 'string' && GRAPHQL_REQUEST_CODES.has(code) ? 400 : 500;
}

/** The single message for every authentication failure, so the response is no oracle. */
export const UNAUTHENTICATED_MESSAGE = 'Missing or invalid credentials';

export class AppError extends Error {
  readonly code: ErrorCode;
  /** Extra machine-readable facts, copied into GraphQL `extensions` (e.g. requiredScopes, field). */
  readonly details: Readonly<Record<string, unknown>>;
  /** Response headers the error implies (Retry-After, WWW-Authenticate ...). */
  readonly headers: Readonly<Record<string, string>>;

  constructor(
    code: ErrorCode,
    message: string,
    details: Record<string, unknown> = {},
    headers: Record<string, string> = {},
  ) {
    super(message);
    this.name = 'AppError';
    this.code = code;
    this.details = details;
    this.headers = headers;
  }

  get status(): number {
    return ERROR_CODES[this.code].status;
  }
}

export const unauthenticated = (): AppError => new AppError('UNAUTHENTICATED', UNAUTHENTICATED_MESSAGE);

export const notFound = (what: string, id: string): AppError =>
  new AppError('NOT_FOUND', `${what} '${id}' was not found`, { resource: what, id });

/** Bad input that names the field and the rule it broke. */
export const badInput = (field: string, message: string, extra: Record<string, unknown> = {}): AppError =>
  new AppError('BAD_USER_INPUT', `${field}: ${message}`, { field, ...extra });

export const conflict = (message: string, details: Record<string, unknown> = {}): AppError =>
  new AppError('CONFLICT', message, details);

export function isAppError(e: unknown): e is AppError {
  return e instanceof AppError;
}

/** The same error with more response headers (a challenge, the caller's rate-limit standing …). */
export function withHeaders(error: AppError, headers: Record<string, string>): AppError {
  return new AppError(error.code, error.message, { ...error.details }, { ...error.headers, ...headers });
}

/**
 * The one shape of a missing-scope refusal (403; REST adds the insufficient_scope challenge from
 * `requiredScopes`): the schema's check and the few data-dependent checks both raise it.
 */
export function missingScopes(
  scopes: readonly string[],
  note = '',
  details: Record<string, unknown> = {},
): AppError {
  return new AppError(
    'FORBIDDEN',
    `Missing required scope${scopes.length > 1 ? 's' : ''}: ${scopes.join(', ')}${note}`,
    { requiredScopes: [...scopes], ...details },
  );
}
