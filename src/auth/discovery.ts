import { ALL_SCOPES } from '../kernel/scopes.js';
import { GRANT_TYPES } from './clients.js';
import { SIGNING_ALG } from './keys.js';
import type { AuthRuntime } from './runtime.js';

const CLIENT_AUTH_METHODS = ['client_secret_basic', 'client_secret_post'];

/** RFC 8414 metadata; served at both well-known paths. */
export function discoveryDocument(issuer: string): Record<string, unknown> {
  return {
    issuer,
    authorization_endpoint: `${issuer}/oauth/authorize`,
    token_endpoint: `${issuer}/oauth/token`,
    revocation_endpoint: `${issuer}/oauth/revoke`,
    introspection_endpoint: `${issuer}/oauth/introspect`,
    userinfo_endpoint: `${issuer}/oauth/userinfo`,
    jwks_uri: `${issuer}/.well-known/jwks.json`,
    scopes_supported: ALL_SCOPES,
    response_types_supported: ['code'],
    response_modes_supported: ['query'],
    grant_types_supported: [...GRANT_TYPES],
    code_challenge_methods_supported: ['S256'],
    token_endpoint_auth_methods_supported: [...CLIENT_AUTH_METHODS, 'none'],
    // Public clients revoke their own tokens with client_id alone; introspection needs a secret.
    revocation_endpoint_auth_methods_supported: [...CLIENT_AUTH_METHODS, 'none'],
    introspection_endpoint_auth_methods_supported: CLIENT_AUTH_METHODS,
    authorization_response_iss_parameter_supported: true,
    // Required by OpenID discovery for the document to parse; no ID token is ever issued.
    subject_types_supported: ['public'],
    id_token_signing_alg_values_supported: [SIGNING_ALG],
    service_documentation: `${issuer}/console`,
  };
}

export async function jwks(runtime: AuthRuntime): Promise<{ keys: Record<string, unknown>[] }> {
  return { keys: (await runtime.keys.published()).map((k) => k.publicJwk) };
}
