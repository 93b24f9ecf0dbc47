import { GRANT_SCOPES, SESSION_ONLY_SCOPES } from '../kernel/scopes.js';
import { GRANT_TYPES } from './clients.js';
import { SIGNING_ALG } from './keys.js';
import type { AuthRuntime } from './runtime.js';

const CLIENT_AUTH_METHODS = ['client_secret_basic', 'client_secret_post'];

/** What an ID token or userinfo may carry (userinfo's by the granted scopes). */
const CLAIMS_SUPPORTED = [
  'iss',
  'sub',
  'aud',
  'exp',
  'iat',
  'auth_time',
  'nonce',
  'at_hash',
  'name',
  'email',
  'email_verified',
  'account_id',
  'plan',
];

/** RFC 8414 and OpenID Connect Discovery metadata; served at both well-known paths. */
export function discoveryDocument(issuer: string): Record<string, unknown> {
  return {
    issuer,
    authorization_endpoint: `${issuer}/oauth/authorize`,
    token_endpoint: `${issuer}/oauth/token`,
    revocation_endpoint: `${issuer}/oauth/revoke`,
    introspection_endpoint: `${issuer}/oauth/introspect`,
    userinfo_endpoint: `${issuer}/oauth/userinfo`,
    jwks_uri: `${issuer}/.well-known/jwks.json`,
    // Session-only scopes are never granted to an app or key, so an app is not told it may ask for them.
    scopes_supported: GRANT_SCOPES.filter((s) => !(SESSION_ONLY_SCOPES as readonly string[]).includes(s)),
    response_types_supported: ['code'],
    response_modes_supported: ['query'],
    grant_types_supported: [...GRANT_TYPES],
    code_challenge_methods_supported: ['S256'],
    token_endpoint_auth_methods_supported: [...CLIENT_AUTH_METHODS, 'none'],
    // Public clients revoke their own tokens with client_id alone; introspection needs a secret.
    revocation_endpoint_auth_methods_supported: [...CLIENT_AUTH_METHODS, 'none'],
    introspection_endpoint_auth_methods_supported: CLIENT_AUTH_METHODS,
    authorization_response_iss_parameter_supported: true,
    // OpenID Connect Discovery 1.0: ID tokens from the code flow, `sub` = the user's id everywhere.
    subject_types_supported: ['public'],
    id_token_signing_alg_values_supported: [SIGNING_ALG],
    claims_supported: CLAIMS_SUPPORTED,
    claims_parameter_supported: false,
    request_parameter_supported: false,
    request_uri_parameter_supported: false,
    service_documentation: `${issuer}/console`,
  };
}

export async function jwks(runtime: AuthRuntime): Promise<{ keys: Record<string, unknown>[] }> {
  return { keys: (await runtime.keys.published()).map((k) => k.publicJwk) };
}
