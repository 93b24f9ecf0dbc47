/** RFC 6749 error codes, plus `temporarily_unavailable` which we also use for throttling (429). */
export type OAuthErrorCode =
  | 'invalid_request'
  | 'invalid_client'
  | 'invalid_grant'
  | 'unauthorized_client'
  | 'unsupported_grant_type'
  | 'unsupported_response_type'
  | 'invalid_scope'
  | 'access_denied'
  | 'invalid_token'
  | 'temporarily_unavailable'
  | 'server_error';

/** An error in RFC 6749 shape. Every check throws exactly one of these with one reason. */
export class OAuthError extends Error {
  constructor(
    readonly error: OAuthErrorCode,
    readonly description: string,
    readonly status = 400,
    readonly headers: Record<string, string> = {},
  ) {
    super(description);
    this.name = 'OAuthError';
  }

  toJSON(): { error: string; error_description: string } {
    return { error: this.error, error_description: this.description };
  }
}

export const invalidRequest = (description: string): OAuthError =>
  new OAuthError('invalid_request', description);
export const invalidGrant = (description: string): OAuthError => new OAuthError('invalid_grant', description);
export const invalidScope = (description: string): OAuthError => new OAuthError('invalid_scope', description);

/** RFC 6749 §5.2: failed client authentication is 401 with a challenge. */
export const invalidClient = (description = 'Client authentication failed'): OAuthError =>
  new OAuthError('invalid_client', description, 401, {
    'WWW-Authenticate': 'Basic realm="tidegate", charset="UTF-8"',
  });

export const tooManyAttempts = (retryAfterSeconds: number, what: string): OAuthError =>
  new OAuthError(
    'temporarily_unavailable',
    `Too many failed ${what}; retry after ${retryAfterSeconds} seconds`,
    429,
    { 'Retry-After': String(retryAfterSeconds) },
  );
