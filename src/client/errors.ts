/** Every failure the client reports: the server's code, the HTTP status, and what to quote to support. */
export class TidegateError extends Error {
  /** The server's code (`RATE_LIMIT_EXCEEDED`, `FORBIDDEN`, …), or an OAuth `error` (`invalid_grant`, …). */
  readonly code: string;
  /** HTTP status; 0 when no HTTP answer was involved (a WebSocket close, a state mismatch). */
  readonly status: number;
  /** `X-Request-Id` of the answer, for support and logs. */
  readonly requestId: string | undefined;
  /** Seconds to wait before trying again (`Retry-After`), on 429 and 503. */
  readonly retryAfter: number | undefined;
  /** Machine-readable facts the server added (e.g. `field`, `requiredScopes`). */
  readonly details: Readonly<Record<string, unknown>>;

  constructor(
    code: string,
    message: string,
    options: {
      status?: number;
      requestId?: string;
      retryAfter?: number;
      details?: Record<string, unknown>;
    } = {},
  ) {
    super(message);
    this.name = 'TidegateError';
    this.code = code;
    this.status = options.status ?? 0;
    this.requestId = options.requestId;
    this.retryAfter = options.retryAfter;
    this.details = options.details ?? {};
  }
}

/**
 * The refresh token was refused (`invalid_grant`: expired, revoked, or reused after rotation).
 * The stored session has been cleared: the user must sign in again.
 */
export class SessionExpiredError extends TidegateError {
  constructor(description: string | undefined, requestId?: string) {
    super(
      'invalid_grant',
      `The session ended: the refresh token was refused (${description ?? 'invalid_grant'}); the stored tokens were cleared, sign in again`,
      { status: 400, requestId },
    );
    this.name = 'SessionExpiredError';
  }
}

/** A GraphQL answer with errors: the first error's code and message, every error, and any partial data. */
export class GraphQLResponseError extends TidegateError {
  constructor(
    readonly errors: ReadonlyArray<{ message: string; extensions?: Record<string, unknown> }>,
    readonly data: unknown,
    options: { status: number; requestId?: string; retryAfter?: number },
  ) {
    const first = errors[0];
    const { code, ...details } = first?.extensions ?? {};
    super(typeof code === 'string' ? code : 'GRAPHQL_ERROR', first?.message ?? 'GraphQL error', {
      ...options,
      details,
    });
    this.name = 'GraphQLResponseError';
  }
}

/** `Retry-After` in seconds (RFC 9110: delay-seconds or an HTTP date). */
export function retryAfterOf(headers: { get(name: string): string | null }): number | undefined {
  const raw = headers.get('retry-after');
  if (raw === null) return undefined;
  if (/^\d+$/.test(raw.trim())) return Number(raw);
  const at = Date.parse(raw);
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - Date.now()) / 1000));
}

/** The error of a failed HTTP answer, whatever shape its body has (REST, GraphQL, OAuth, or none). */
export async function errorOf(response: Response): Promise<TidegateError> {
  const requestId = response.headers.get('x-request-id') ?? undefined;
  const retryAfter = retryAfterOf(response.headers);
  const options = { status: response.status, requestId, retryAfter };
  const text = await response.text();
  let body: unknown;
  try {
    body = text ? JSON.parse(text) : undefined;
  } catch {
    body = undefined;
  }
  if (isObject(body)) {
    const rest = body.error;
    if (isObject(rest) && typeof rest.code === 'string') {
      const details = isObject(rest.details) ? rest.details : {};
      return new TidegateError(rest.code, String(rest.message ?? rest.code), {
        ...options,
        requestId: typeof rest.requestId === 'string' ? rest.requestId : requestId,
        details,
      });
    }
    if (typeof rest === 'string') {
      const description = typeof body.error_description === 'string' ? body.error_description : rest;
      return new TidegateError(rest, description, options);
    }
    if (Array.isArray(body.errors) && body.errors.length > 0)
      return new GraphQLResponseError(body.errors as never, body.data ?? null, options);
  }
  return new TidegateError(`HTTP_${response.status}`, text.slice(0, 200) || response.statusText, options);
}

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
