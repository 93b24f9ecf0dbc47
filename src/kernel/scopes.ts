import { badInput } from './errors.js';

/**
 * The scope vocabulary. Canonical names are action-first (`read:port_calls`), as in the
 * port-operations document's scope table; the liquidity scopes are ours. Clients may also use
 * the resource-first spelling from the document's examples (`port-calls:read`), which is
 * normalised to the canonical name wherever a scope is accepted.
 */
export const SCOPES = {
  'read:port_calls': 'Read port calls and related data',
  'write:port_calls': 'Create and update port calls',
  'delete:port_calls': 'Delete port calls',
  'read:service_orders': 'Read service orders',
  'write:service_orders': 'Create and update service orders',
  'read:vendors': 'Read vendor information',
  'write:vendors': 'Manage vendor relationships',
  'read:vessels': 'Read vessel information',
  'read:documents': 'Read documents',
  'write:documents': 'Upload and manage documents',
  'read:invoices': 'Read invoices and billing',
  'write:invoices': 'Create and manage invoices',
  'read:analytics': 'Access analytics and reports',
  'ai:predictions': 'Use AI prediction endpoints',
  'webhooks:manage': 'Manage webhook subscriptions',
  'read:liquidity': 'Read protocol profiles, liquidity scores, history, backtests and market data',
  'write:watchlists': 'Manage watchlists and their alert configuration',
  'write:scoring_profiles': 'Create and manage custom scoring profiles',
  'export:liquidity': 'Bulk-export liquidity data',
  'credentials:manage':
    'Manage API keys, sandbox keys, OAuth apps and connected apps (console sessions only)',
  admin: 'Full administrative access',
} as const;

export type Scope = keyof typeof SCOPES;

export const ALL_SCOPES = Object.keys(SCOPES) as Scope[];

/**
 * Scopes only a signed-in user's console session carries: managing credentials is done by people,
 * not by credentials. A key or token that names one still gets FORBIDDEN (src/auth/access.ts).
 */
export const SESSION_ONLY_SCOPES: Scope[] = ['credentials:manage'];

/** Every scope except `admin` and the session-only ones: what a new API key gets when no scopes are named. */
export const DEFAULT_KEY_SCOPES: Scope[] = ALL_SCOPES.filter(
  (s) => s !== 'admin' && !SESSION_ONLY_SCOPES.includes(s),
);

/**
 * OpenID Connect identity scopes. They say what an application may learn about the user who
 * signs in (an ID token, and the userinfo claims), not what it may do with the API: a client asks
 * for them at /oauth/authorize and the user grants them on the consent page, but they are never
 * registered on a client or an API key, never allowed without a user (client_credentials), and
 * never reach the gateway's scope checks.
 */
export const IDENTITY_SCOPES = {
  openid: 'Sign in with your tidegate identity (an ID token naming your user id)',
  profile: 'See your name',
  email: 'See your email address',
} as const;

export type IdentityScope = keyof typeof IDENTITY_SCOPES;

/** What an authorization grant may hold: identity scopes first (OpenID order), then API scopes. */
export type GrantScope = IdentityScope | Scope;

export const GRANT_SCOPES = [...(Object.keys(IDENTITY_SCOPES) as IdentityScope[]), ...ALL_SCOPES];

export function isIdentityScope(value: string): value is IdentityScope {
  return Object.prototype.hasOwnProperty.call(IDENTITY_SCOPES, value);
}

/** The consent page's line for a granted scope. */
export function scopeDescription(scope: GrantScope): string {
  return isIdentityScope(scope) ? IDENTITY_SCOPES[scope] : SCOPES[scope];
}

export function isScope(value: string): value is Scope {
  return Object.prototype.hasOwnProperty.call(SCOPES, value);
}

/**
 * `port-calls:read` → `read:port_calls`; `predictions:ai` → `ai:predictions`;
 * `manage:webhooks` → `webhooks:manage`. Returns undefined for an unknown scope.
 */
export function normalizeScope(raw: string): Scope | undefined {
  const value = raw.trim();
  if (isScope(value)) return value;
  const parts = value.split(':');
  if (parts.length !== 2) return undefined;
  const [first, second] = parts as [string, string];
  const swapped = `${second.replace(/-/g, '_')}:${first.replace(/-/g, '_')}`;
  return isScope(swapped) ? swapped : undefined;
}

/** An API scope (either spelling, canonical answer) or an identity scope; undefined when unknown. */
export function normalizeGrantScope(raw: string): GrantScope | undefined {
  const value = raw.trim();
  return isIdentityScope(value) ? value : normalizeScope(value);
}

/**
 * Parses a space-separated (or array) scope list into canonical, de-duplicated names in
 * vocabulary order. Throws BAD_USER_INPUT naming every unknown scope.
 */
export function parseScopes(input: string | readonly string[], field = 'scopes'): Scope[] {
  const raw = typeof input === 'string' ? input.split(/[\s,]+/) : input.flatMap((s) => s.split(/[\s,]+/));
  const tokens = raw.map((s) => s.trim()).filter(Boolean);
  const unknown = tokens.filter((t) => normalizeScope(t) === undefined);
  if (unknown.length > 0) {
    throw badInput(field, `unknown scope${unknown.length > 1 ? 's' : ''}: ${unknown.join(', ')}`, {
      unknown,
    });
  }
  const wanted = new Set(tokens.map((t) => normalizeScope(t) as Scope));
  return ALL_SCOPES.filter((s) => wanted.has(s));
}

/**
 * The scopes of a credential (an API key or an OAuth app): `parseScopes`, refusing the session-only
 * ones, which no key or app may hold whoever creates it (console, schema or CLI).
 */
export function parseCredentialScopes(input: string | readonly string[], field = 'scopes'): Scope[] {
  const scopes = parseScopes(input, field);
  const sessionOnly = scopes.filter((s) => SESSION_ONLY_SCOPES.includes(s));
  if (sessionOnly.length > 0)
    throw badInput(field, `${sessionOnly.join(', ')} belongs to console sessions only`, { sessionOnly });
  return scopes;
}

/** `admin` satisfies every scope. */
export function hasScope(granted: ReadonlySet<string>, scope: string): boolean {
  return granted.has('admin') || granted.has(scope);
}
