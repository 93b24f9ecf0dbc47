import type { DescribedRoute, Json } from '../gateway/doors/openapi.js';

/*
 * The OAuth 2.0 endpoints in the OpenAPI document. They are hand-written (form bodies, RFC
 * error shapes), so their description lives here beside them; test/gateway/doors/openapi.e2e.test.ts
 * checks live answers against it.
 */

const form = (properties: Record<string, Json>, required: string[] = []): Json => ({
  required: true,
  content: {
    'application/x-www-form-urlencoded': { schema: { type: 'object', properties, required } },
  },
});
const json = (description: string, schema: Json): Json => ({
  description,
  content: { 'application/json': { schema } },
});
const str = (description: string): Json => ({ type: 'string', description });
const clientAuth = {
  client_id: str('With client_secret in the body, or the public client of a PKCE flow'),
  client_secret: str('client_secret_post; or send HTTP Basic (client_secret_basic)'),
};

/** RFC 6749 §5.2 error body: `error` is the machine-readable code. */
const oauthError: Json = {
  type: 'object',
  required: ['error', 'error_description'],
  properties: {
    error: {
      type: 'string',
      enum: [
        'invalid_request',
        'invalid_client',
        'invalid_grant',
        'unauthorized_client',
        'unsupported_grant_type',
        'invalid_scope',
        'invalid_token',
        'access_denied',
        'server_error',
        'temporarily_unavailable',
        'slow_down',
      ],
    },
    error_description: { type: 'string' },
  },
};
const errors = {
  '400': json('The request is invalid (RFC 6749 §5.2)', oauthError),
  '401': json('Client authentication failed', oauthError),
  '429': json('Too many failed attempts; Retry-After says when to try again', oauthError),
};
const metadata: Json = { type: 'object', additionalProperties: true };

export const oauthOpenApi: DescribedRoute[] = [
  {
    method: 'post',
    path: '/oauth/token',
    operation: {
      operationId: 'oauthToken',
      summary: 'Issue tokens: authorization_code (PKCE), client_credentials, refresh_token',
      requestBody: form(
        {
          grant_type: { type: 'string', enum: ['authorization_code', 'client_credentials', 'refresh_token'] },
          code: str('authorization_code: the code from /oauth/authorize'),
          redirect_uri: str('authorization_code: the same redirect_uri as in the authorization request'),
          code_verifier: str('authorization_code: the PKCE verifier (S256)'),
          refresh_token: str('refresh_token: the refresh token (rotated on every use)'),
          scope: str('Space-separated scopes; at most those granted'),
          ...clientAuth,
        },
        ['grant_type'],
      ),
      responses: {
        '200': json('Tokens', {
          type: 'object',
          required: ['access_token', 'token_type', 'expires_in', 'scope'],
          properties: {
            access_token: str('A JWT for the API (Authorization: Bearer)'),
            token_type: { type: 'string', enum: ['Bearer'] },
            expires_in: { type: 'integer' },
            refresh_token: { type: 'string' },
            scope: { type: 'string' },
            id_token: str('OpenID Connect ID token (ES256 JWT), when the code grant holds openid'),
          },
        }),
        ...errors,
      },
      security: [],
    },
  },
  {
    method: 'get',
    path: '/oauth/authorize',
    operation: {
      operationId: 'oauthAuthorize',
      summary: 'Authorization endpoint: sign-in and consent pages, then a redirect with the code',
      parameters: [
        ['response_type', true, 'code'],
        ['client_id', true, ''],
        ['redirect_uri', true, 'Exactly as registered (on 127.0.0.1 or [::1], any port)'],
        ['scope', true, 'Space-separated: API scopes, and openid, profile, email to sign the user in'],
        ['state', false, 'Returned unchanged'],
        ['code_challenge', true, 'PKCE S256 challenge'],
        ['code_challenge_method', true, 'S256'],
        ['nonce', false, 'OpenID Connect: echoed in the ID token'],
      ].map(([name, required, description]) => ({
        name,
        in: 'query',
        required,
        schema: { type: 'string' },
        ...(description ? { description } : {}),
      })),
      responses: {
        '200': { description: 'The sign-in or consent page', content: { 'text/html': {} } },
        '302': { description: 'Back to the client: code and state, or error' },
        '400': {
          description: 'Unknown client or redirect_uri: an error page (never a redirect)',
          content: { 'text/html': {} },
        },
      },
      security: [],
    },
  },
  {
    method: 'post',
    path: '/oauth/revoke',
    operation: {
      operationId: 'oauthRevoke',
      summary: 'Revoke an access or refresh token (RFC 7009)',
      requestBody: form(
        {
          token: str('The token'),
          token_type_hint: { type: 'string', enum: ['access_token', 'refresh_token'] },
          ...clientAuth,
        },
        ['token'],
      ),
      responses: {
        '200': { description: 'Revoked, or was never valid (no difference by design)' },
        ...errors,
      },
      security: [],
    },
  },
  {
    method: 'post',
    path: '/oauth/introspect',
    operation: {
      operationId: 'oauthIntrospect',
      summary: 'Introspect a token (RFC 7662); confidential clients only',
      requestBody: form({ token: str('The token'), token_type_hint: { type: 'string' }, ...clientAuth }, [
        'token',
      ]),
      responses: {
        '200': json('The token standing; `active: false` for anything the caller may not see', {
          type: 'object',
          required: ['active'],
          properties: {
            active: { type: 'boolean' },
            token_type: { type: 'string' },
            scope: { type: 'string' },
            client_id: { type: 'string' },
            sub: { type: ['string', 'null'] },
            account_id: { type: 'string' },
            iat: { type: 'integer' },
            exp: { type: 'integer' },
            iss: { type: 'string' },
            aud: { type: 'string' },
            jti: { type: 'string' },
          },
        }),
        ...errors,
      },
      security: [],
    },
  },
  {
    method: 'get',
    path: '/oauth/userinfo',
    operation: {
      operationId: 'oauthUserinfo',
      summary: 'The signed-in user of a user token (OpenID Connect UserInfo)',
      responses: {
        '200': json('The user: name with the profile scope, email and email_verified with email', {
          type: 'object',
          required: ['sub', 'account_id', 'plan'],
          properties: {
            sub: { type: 'string' },
            name: { type: 'string' },
            email: { type: 'string' },
            email_verified: { type: 'boolean' },
            account_id: { type: 'string' },
            plan: { type: 'string' },
          },
        }),
        '401': json('Missing or invalid token (WWW-Authenticate says why too)', oauthError),
      },
      security: [{ oauth2: [] }],
    },
  },
  ...['/.well-known/oauth-authorization-server', '/.well-known/openid-configuration'].map(
    (path): DescribedRoute => ({
      method: 'get',
      path,
      operation: {
        operationId: path.endsWith('openid-configuration')
          ? 'openidConfiguration'
          : 'authorizationServerMetadata',
        summary: 'Authorization server metadata (RFC 8414, OpenID Connect Discovery)',
        responses: {
          '200': json('Metadata', {
            ...metadata,
            required: ['issuer', 'token_endpoint', 'jwks_uri'],
            properties: {
              issuer: { type: 'string' },
              token_endpoint: { type: 'string' },
              jwks_uri: { type: 'string' },
            },
          }),
        },
        security: [],
      },
    }),
  ),
  {
    method: 'get',
    path: '/.well-known/jwks.json',
    operation: {
      operationId: 'jwks',
      summary: 'The public keys that verify access and ID tokens',
      responses: {
        '200': json('JWK set', {
          type: 'object',
          required: ['keys'],
          properties: {
            keys: {
              type: 'array',
              items: {
                type: 'object',
                required: ['kty', 'kid'],
                properties: {
                  kty: { type: 'string', enum: ['EC'] },
                  kid: str('RFC 7638 thumbprint of the key'),
                  alg: { type: 'string', enum: ['ES256'] },
                  use: { type: 'string', enum: ['sig'] },
                  crv: { type: 'string', enum: ['P-256'] },
                  x: { type: 'string' },
                  y: { type: 'string' },
                },
              },
            },
          },
        }),
      },
      security: [],
    },
  },
];
