import type { EntityManager } from '@mikro-orm/knex';
import {
  calculateJwkThumbprint,
  exportJWK,
  generateKeyPair,
  importJWK,
  type CryptoKey,
  type JWK,
} from 'jose';
import type { Clock } from '../kernel/clock.js';
import { SigningKey } from './entities.js';
import { ACCESS_TOKEN_TTL_SECONDS } from './lifetimes.js';

export const SIGNING_ALG = 'ES256';

async function newSigningKey(em: EntityManager, clock: Clock): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPair(SIGNING_ALG, { extractable: true });
  const publicJwk = await exportJWK(publicKey);
  const kid = await calculateJwkThumbprint(publicJwk);
  const key = em.create(SigningKey, {
    kid,
    privateJwk: { ...(await exportJWK(privateKey)), kid, alg: SIGNING_ALG },
    publicJwk: { ...publicJwk, kid, alg: SIGNING_ALG, use: 'sig' },
    createdAt: clock.now(),
    retiredAt: null,
  });
  em.persist(key);
  return key;
}

/** Adds a new signing key and retires the current ones; their public keys stay published. */
export async function rotateSigningKey(em: EntityManager, clock: Clock): Promise<SigningKey> {
  return em.transactional(async (tx) => {
    await tx.nativeUpdate(SigningKey, { retiredAt: null }, { retiredAt: clock.now() });
    return newSigningKey(tx, clock);
  });
}

/** A retired key is published until the last token it signed has expired. */
export function isPublished(key: SigningKey, now: Date): boolean {
  return !key.retiredAt || key.retiredAt.getTime() + ACCESS_TOKEN_TTL_SECONDS * 1000 > now.getTime();
}

const MISSING_KID_RELOAD_MS = 1000;

/**
 * The signing keys as this process sees them. Signing reads the newest active key from the
 * database each time (issuance writes rows anyway), so a rotation by the CLI applies at once;
 * verification keeps imported public keys in memory and reloads on an unknown kid, at most once
 * a second so random kids cannot turn into a query per request.
 */
export class KeyStore {
  private readonly imported = new Map<string, CryptoKey>();
  private lastReload = 0;

  constructor(
    private readonly em: () => EntityManager,
    private readonly clock: Clock,
  ) {}

  /** Creates the first key on a fresh database. */
  async ensureKey(): Promise<void> {
    const em = this.em();
    if ((await em.count(SigningKey, { retiredAt: null })) === 0) {
      await newSigningKey(em, this.clock);
      await em.flush();
    }
  }

  /** `em` is the caller's transaction: SQLite has one connection, a second one would wait on it forever. */
  async signingKey(em: EntityManager): Promise<{ kid: string; key: CryptoKey }> {
    let row = await em.findOne(
      SigningKey,
      { retiredAt: null },
      { orderBy: { createdAt: 'desc', kid: 'asc' } },
    );
    if (!row) {
      // Every key was retired by hand; start a new one rather than fail issuance.
      row = await newSigningKey(em, this.clock);
      await em.flush();
    }
    const cacheKey = `private:${row.kid}`;
    let key = this.imported.get(cacheKey);
    if (!key) {
      key = (await importJWK(row.privateJwk as JWK, SIGNING_ALG)) as CryptoKey;
      this.imported.set(cacheKey, key);
    }
    return { kid: row.kid, key };
  }

  async verificationKey(kid: string): Promise<CryptoKey | undefined> {
    const found = this.imported.get(`public:${kid}`);
    if (found) return found;
    const now = this.clock.now().getTime();
    if (now - this.lastReload < MISSING_KID_RELOAD_MS && this.lastReload !== 0) return undefined;
    this.lastReload = now;
    await this.reload();
    return this.imported.get(`public:${kid}`);
  }

  async published(): Promise<SigningKey[]> {
    const now = this.clock.now();
    const rows = await this.em().find(SigningKey, {}, { orderBy: { createdAt: 'desc', kid: 'asc' } });
    // The active key first, then retired ones newest first.
    return rows
      .filter((k) => isPublished(k, now))
      .sort((a, b) => Number(!!a.retiredAt) - Number(!!b.retiredAt));
  }

  async reload(): Promise<void> {
    for (const row of await this.published()) {
      if (!this.imported.has(`public:${row.kid}`)) {
        this.imported.set(
          `public:${row.kid}`,
          (await importJWK(row.publicJwk as JWK, SIGNING_ALG)) as CryptoKey,
        );
      }
    }
  }
}
