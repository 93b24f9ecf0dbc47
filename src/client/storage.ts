/** What a signed-in session keeps between calls (and, with a persistent store, between runs). */
export interface TokenSet {
  accessToken: string;
  /** Absent for client credentials (no refresh token is issued: the client asks again). */
  refreshToken?: string;
  /** When the access token expires, in milliseconds since the epoch. */
  expiresAt: number;
  scope?: string;
}

/** Where tokens live. Methods may be synchronous or return promises. */
export interface TokenStore {
  load(): TokenSet | null | Promise<TokenSet | null>;
  save(tokens: TokenSet): void | Promise<void>;
  clear(): void | Promise<void>;
}

/** The default: tokens live as long as the client object. */
export class MemoryTokenStore implements TokenStore {
  private tokens: TokenSet | null = null;
  load(): TokenSet | null {
    return this.tokens;
  }
  save(tokens: TokenSet): void {
    this.tokens = tokens;
  }
  clear(): void {
    this.tokens = null;
  }
}

/** The part of the Web Storage API the client uses (`localStorage`, `sessionStorage`, or your own). */
export interface StorageLike {
  getItem(key: string): string | null;
  setItem(key: string, value: string): void;
  removeItem(key: string): void;
}

/**
 * Tokens in browser storage under one key. `sessionStorage` keeps them per tab and ends with it;
 * `localStorage` survives restarts and is shared by the origin's tabs. Either is readable by any
 * script on the page: use this only where the page's scripts are trusted (a strict CSP).
 */
export class BrowserTokenStore implements TokenStore {
  constructor(
    private readonly storage: StorageLike,
    private readonly key = 'tidegate.tokens',
  ) {}
  load(): TokenSet | null {
    const raw = this.storage.getItem(this.key);
    if (!raw) return null;
    try {
      return parseTokenSet(JSON.parse(raw));
    } catch {
      return null;
    }
  }
  save(tokens: TokenSet): void {
    this.storage.setItem(this.key, JSON.stringify(tokens));
  }
  clear(): void {
    this.storage.removeItem(this.key);
  }
}

/** A stored token set, or null when the stored value is not one (a corrupt or foreign entry). */
export function parseTokenSet(value: unknown): TokenSet | null {
  if (typeof value !== 'object' || value === null) return null;
  const { accessToken, refreshToken, expiresAt, scope } = value as Record<string, unknown>;
  if (typeof accessToken !== 'string' || typeof expiresAt !== 'number') return null;
  return {
    accessToken,
    expiresAt,
    ...(typeof refreshToken === 'string' ? { refreshToken } : {}),
    ...(typeof scope === 'string' ? { scope } : {}),
  };
}
