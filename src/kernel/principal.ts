import type { Plan } from './plans.js';
import { hasScope } from './scopes.js';

export type CredentialKind = 'api_key' | 'oauth_token' | 'session';

/** Who is calling, resolved once at the edge from whatever credential they presented. */
export interface Principal {
  accountId: string;
  plan: Plan;
  scopes: ReadonlySet<string>;
  credential: {
    kind: CredentialKind;
    /** API key id, token jti, or session id. */
    id: string;
    /** When the credential stops being valid (API key expiry, token exp); subscriptions end then. */
    expiresAt?: Date;
  };
  /** Set for user tokens and console sessions. */
  userId?: string;
  /** Set for OAuth tokens. */
  clientId?: string;
  /**
   * Set for sandbox keys: the real account the sandbox belongs to. `accountId` is then the
   * sandbox account (demo data only) and `plan` the real account's plan.
   */
  sandboxOf?: string;
}

export function isAdmin(principal: Pick<Principal, 'scopes'>): boolean {
  return principal.scopes.has('admin');
}

export function principalHasScope(principal: Principal, scope: string): boolean {
  return hasScope(principal.scopes, scope);
}
