import type { FastifyReply, FastifyRequest } from 'fastify';
import type { User } from '../accounts/entities.js';
import { newSecret, sha256Hex } from '../kernel/crypto.js';
import { IDENTITY_SCOPES, scopeDescription, type GrantScope } from '../kernel/scopes.js';
import { redirectUriMatches } from './clients.js';
import { AuthorizationCode, OAuthClient } from './entities.js';
import { singleValued, type Form } from './form.js';
import { errorPage, hidden, html, sendPage } from './html.js';
import { AUTHORIZATION_CODE_TTL_MS } from './lifetimes.js';
import { invalidRequest, invalidScope, OAuthError } from './oauth-error.js';
import type { AuthRuntime } from './runtime.js';
import { currentSession, sessionCsrfValid, type SignedIn } from './sessions.js';
import { requestedScopes } from './token-endpoint.js';

/** The authorization request's parameters, carried from the query into the consent form. */
const PARAMS = [
  'client_id',
  'redirect_uri',
  'response_type',
  'scope',
  'state',
  'code_challenge',
  'code_challenge_method',
  'nonce',
] as const;

interface AuthorizationRequest {
  form: Form;
  client?: OAuthClient;
  /** Set once verified: from then on errors go back to the client instead of onto an error page. */
  redirectUri?: string;
  scopes: GrantScope[];
}

type Check = (request: AuthorizationRequest, runtime: AuthRuntime, user?: User) => void | Promise<void>;

/** Until both pass, an error is shown on a page and never redirected: that would be an open redirect. */
const checkClient: Check = async (r, runtime) => {
  const clientId = r.form.client_id;
  if (!clientId) throw invalidRequest('client_id is required');
  const client = await runtime.em.findOne(OAuthClient, { clientId });
  if (!client) throw invalidRequest(`client_id '${clientId}' is not a registered application`);
  r.client = client;
};

const checkRedirectUri: Check = (r) => {
  const redirectUri = r.form.redirect_uri;
  if (!redirectUri) throw invalidRequest('redirect_uri is required');
  if (!r.client!.redirectUris.some((registered) => redirectUriMatches(registered, redirectUri))) {
    throw invalidRequest(
      'redirect_uri is not registered for this application (it must match exactly; on 127.0.0.1 or [::1] any port)',
    );
  }
  r.redirectUri = redirectUri;
};

const checkResponseType: Check = (r) => {
  if (!r.form.response_type) throw invalidRequest('response_type is required');
  if (r.form.response_type !== 'code') {
    throw new OAuthError(
      'unsupported_response_type',
      `response_type '${r.form.response_type}' is not supported; use code`,
    );
  }
};

const checkGrantEnabled: Check = (r) => {
  if (!r.client!.grantTypes.includes('authorization_code')) {
    throw new OAuthError(
      'unauthorized_client',
      'the authorization_code grant is not enabled for this application',
    );
  }
};

const checkScope: Check = (r) => {
  if (!r.form.scope?.trim()) throw invalidScope('scope is required');
  // Identity scopes need no registration: the user decides on the consent page what to reveal.
  r.scopes = requestedScopes(
    r.form.scope,
    [...Object.keys(IDENTITY_SCOPES), ...r.client!.scopes],
    "the application's allowed scopes",
  );
};

/** OpenID Connect's nonce goes back unchanged in the ID token; bounded because it is stored with the code. */
const NONCE_MAX_LENGTH = 255;

const checkNonce: Check = (r) => {
  if (r.form.nonce !== undefined && (r.form.nonce === '' || r.form.nonce.length > NONCE_MAX_LENGTH)) {
    throw invalidRequest(`nonce must be 1-${NONCE_MAX_LENGTH} characters`);
  }
};

/** RFC 7636 with S256 only: `plain` (and the implicit plain of a missing method) is refused. */
const checkPkce: Check = (r) => {
  if (!r.form.code_challenge) throw invalidRequest('code_challenge is required (PKCE)');
  if (r.form.code_challenge_method !== 'S256') throw invalidRequest('code_challenge_method must be S256');
  if (!/^[A-Za-z0-9_-]{43}$/.test(r.form.code_challenge)) {
    throw invalidRequest('code_challenge must be the 43-character base64url SHA-256 of the code_verifier');
  }
};

/** `admin` is granted only by users who hold the admin role. */
const checkUserMayGrant: Check = (r, _runtime, user) => {
  if (user && r.scopes.includes('admin') && !user.roles.includes('admin')) {
    throw invalidScope('admin can only be granted by a user with the admin role');
  }
};

const CHECKS: Check[] = [
  checkClient,
  checkRedirectUri,
  checkResponseType,
  checkGrantEnabled,
  checkScope,
  checkPkce,
  checkNonce,
  checkUserMayGrant,
];

async function validate(runtime: AuthRuntime, source: unknown, user?: User): Promise<AuthorizationRequest> {
  const request: AuthorizationRequest = { form: singleValued(source), scopes: [] };
  for (const check of CHECKS) await check(request, runtime, user);
  return request;
}

/** Runs the checks; an error becomes a redirect to the verified redirect URI, or an error page. */
async function validated(
  runtime: AuthRuntime,
  source: unknown,
  reply: FastifyReply,
  user?: User,
): Promise<AuthorizationRequest | null> {
  try {
    return await validate(runtime, source, user);
  } catch (e) {
    if (!(e instanceof OAuthError)) throw e;
    const partial = await partialRequest(runtime, source);
    if (!partial.redirectUri) {
      errorPage(reply, 400, 'Authorization request rejected', `${e.error}: ${e.description}`);
      return null;
    }
    redirectWith(reply, runtime, partial.redirectUri, {
      error: e.error,
      error_description: e.description,
      state: partial.form.state,
    });
    return null;
  }
}

/**
 * Whether client and redirect URI were verifiable, i.e. whether an error may be sent back. A
 * duplicated client_id or redirect_uri is never trusted.
 */
async function partialRequest(runtime: AuthRuntime, source: unknown): Promise<AuthorizationRequest> {
  const raw = (source ?? {}) as Record<string, unknown>;
  const form = Object.fromEntries(Object.entries(raw).filter(([, v]) => typeof v === 'string')) as Form;
  const request: AuthorizationRequest = { form, scopes: [] };
  try {
    if (Array.isArray(raw.client_id) || Array.isArray(raw.redirect_uri)) return request;
    await checkClient(request, runtime);
    checkRedirectUri(request, runtime);
  } catch {
    request.redirectUri = undefined;
  }
  return request;
}

function redirectWith(
  reply: FastifyReply,
  runtime: AuthRuntime,
  redirectUri: string,
  params: Record<string, string | undefined>,
): void {
  const target = new URL(redirectUri);
  for (const [name, value] of Object.entries(params))
    if (value !== undefined) target.searchParams.set(name, value);
  // RFC 9207: tells the client which server answered, against mix-up attacks.
  target.searchParams.set('iss', runtime.issuer.issuer);
  reply
    .code(reply.request.method === 'GET' ? 302 : 303)
    .header('location', target.toString())
    .header('cache-control', 'no-store')
    .send();
}

/** GET /oauth/authorize: validate, then sign in (if needed), then the consent page. */
export async function authorizeGet(
  runtime: AuthRuntime,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<void> {
  const signedIn = await currentSession({ em: runtime.em, clock: runtime.services.clock }, request);
  const authz = await validated(runtime, request.query, reply, signedIn?.user);
  if (!authz) return;
  if (!signedIn) {
    reply
      .code(302)
      .header('location', `/console/login?return_to=${encodeURIComponent(request.url)}`)
      .send();
    return;
  }
  consentPage(reply, authz, signedIn);
}

/** POST /oauth/authorize: the consent decision (Approve or Deny). */
export async function authorizeDecision(
  runtime: AuthRuntime,
  request: FastifyRequest,
  reply: FastifyReply,
): Promise<void> {
  const body = (request.body ?? {}) as Record<string, unknown>;
  const signedIn = await currentSession({ em: runtime.em, clock: runtime.services.clock }, request);
  if (!signedIn) {
    const query = new URLSearchParams();
    for (const name of PARAMS) if (typeof body[name] === 'string') query.set(name, body[name] as string);
    reply
      .code(303)
      .header('location', `/console/login?return_to=${encodeURIComponent(`/oauth/authorize?${query}`)}`)
      .send();
    return;
  }
  if (!sessionCsrfValid(signedIn, body.csrf)) {
    errorPage(
      reply,
      403,
      'Request expired',
      'The form was not valid (missing or wrong CSRF token). Start again from the application.',
    );
    return;
  }
  const authz = await validated(runtime, pick(body), reply, signedIn.user);
  if (!authz) return;
  const state = authz.form.state;
  if (body.decision === 'deny') {
    redirectWith(reply, runtime, authz.redirectUri!, {
      error: 'access_denied',
      error_description: 'The user denied the request',
      state,
    });
    return;
  }
  if (body.decision !== 'approve') {
    redirectWith(reply, runtime, authz.redirectUri!, {
      error: 'invalid_request',
      error_description: 'decision must be approve or deny',
      state,
    });
    return;
  }
  const code = await issueCode(runtime, authz, signedIn);
  redirectWith(reply, runtime, authz.redirectUri!, { code, state });
}

function pick(body: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(PARAMS.filter((p) => body[p] !== undefined).map((p) => [p, body[p]]));
}

async function issueCode(
  runtime: AuthRuntime,
  authz: AuthorizationRequest,
  signedIn: SignedIn,
): Promise<string> {
  const { user, session } = signedIn;
  const code = newSecret('', 32);
  const now = runtime.services.clock.now();
  const em = runtime.em;
  em.persist(
    em.create(AuthorizationCode, {
      codeHash: sha256Hex(code),
      clientId: authz.client!.clientId,
      userId: user.id,
      accountId: user.account.id,
      redirectUri: authz.redirectUri!,
      scopes: authz.scopes,
      codeChallenge: authz.form.code_challenge!,
      nonce: authz.form.nonce ?? null,
      // The session began when the user typed their password: OpenID's auth_time.
      authTime: session.createdAt,
      expiresAt: new Date(now.getTime() + AUTHORIZATION_CODE_TTL_MS),
      usedAt: null,
      createdAt: now,
    }),
  );
  await em.flush();
  return code;
}

function consentPage(reply: FastifyReply, authz: AuthorizationRequest, signedIn: SignedIn): void {
  const client = authz.client!;
  sendPage(
    reply,
    200,
    'Authorize application',
    html`<section class="card consent">
      <h1>Authorize <strong>${client.name}</strong></h1>
      <p>
        <strong>${client.name}</strong> wants to access the tidegate account
        <strong>${signedIn.user.account.name}</strong> as <strong>${signedIn.user.email}</strong>. It asks
        for:
      </p>
      <ul class="scopes">
        ${authz.scopes.map((s) => html`<li data-scope="${s}"><code>${s}</code> — ${scopeDescription(s)}</li>`)}
      </ul>
      <p class="muted">After approval you are sent back to <code>${authz.redirectUri}</code>.</p>
      <form method="post" action="/oauth/authorize">
        ${hidden('csrf', signedIn.session.csrfToken)} ${PARAMS.map((p) => hidden(p, authz.form[p]))}
        <div class="actions">
          <button type="submit" name="decision" value="approve" id="approve">Approve</button>
          <button type="submit" name="decision" value="deny" id="deny" class="secondary">Deny</button>
        </div>
      </form>
    </section>`,
  );
}
