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
  admin: 'Full administrative access',
} as const;

export type Scope = keyof typeof SCOPES;

export const ALL_SCOPES = Object.keys(SCOPES) as Scope[];

/** Every scope except `admin`: what a new API key gets when no scopes are named. */
export const DEFAULT_KEY_SCOPES: Scope[] = ALL_SCOPES.filter((s) => s !== 'admin');

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

/** `admin` satisfies every scope. */
export function hasScope(granted: ReadonlySet<string>, scope: string): boolean {
  return granted.has('admin') || granted.has(scope);
}
