import type { MaybePromise } from '../../kernel/maybe-async.js';
import type { Principal } from '../../kernel/principal.js';

/** How the caller presented its credential; decides WWW-Authenticate on errors. */
export type Presentation = 'bearer' | 'x-api-key';

export interface PresentedCredential {
  secret: string;
  presentation: Presentation;
}

/** Verifies bearer tokens that are not API keys (the OAuth server plugs its JWT verifier in here). */
export interface TokenVerifier {
  /** Cheap syntactic test: does this look like one of my tokens? */
  handles(token: string): boolean;
  /** The principal, or null for an invalid, expired or revoked token (at once when cached). */
  verify(token: string): MaybePromise<Principal | null>;
  /** Forgets what is cached about this account's tokens (its plan changed). */
  forgetAccount(accountId: string): void;
}

type HeaderBag = Record<string, string | string[] | undefined>;

/** `Authorization: Bearer …` first, then `X-API-Key`. */
export function extractCredential(headers: HeaderBag): PresentedCredential | null | 'malformed' {
  const auth = headers.authorization;
  if (typeof auth === 'string' && auth.length > 0) {
    const match = /^Bearer\s+(\S+)\s*$/i.exec(auth);
    return match ? { secret: match[1] as string, presentation: 'bearer' } : 'malformed';
  }
  const key = headers['x-api-key'];
  if (typeof key === 'string' && key.length > 0) return { secret: key.trim(), presentation: 'x-api-key' };
  return null;
}

/**
 * Turns a presented secret into a Principal: API keys by the accounts domain
 * (src/accounts/credentials.ts), other bearer tokens by the verifiers plugged in (the OAuth server).
 */
export interface CredentialResolver {
  /**
   * The principal, at once when the credential is cached (the common case), else after a lookup.
   * `connection` (the request's socket) lets a keep-alive connection that presents the same
   * secret again skip re-deriving its lookup key; the answer is the same without it.
   */
  resolve(secret: string, connection?: object): MaybePromise<Principal | null>;
  addTokenVerifier(verifier: TokenVerifier): void;
  /** Forgets a cached key (called on revoke/rotate, here or — via the bus — elsewhere). */
  invalidateKey(keyId: string): void;
  /**
   * Forgets every cached credential of an account, and of the sandbox that acts with its plan
   * (called when the plan changes, here or — via the bus — elsewhere).
   */
  invalidateAccount(accountId: string): void;
  /** Writes the batched last-used timestamps (on shutdown). */
  flushLastUsed(): Promise<void>;
}
