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
import { Lru } from '../kernel/lru.js';
import type { SecretBox } from '../kernel/secret-box.js';
import { SigningKey, type SealedJwk } from './entities.js';
import { ACCESS_TOKEN_TTL_SECONDS } from './lifetimes.js';
import type { ServiceDeps } from '../kernel/deps.js';

export const SIGNING_ALG = 'ES256';

/**
 * How long verifiers may cache /.well-known/jwks.json. A rotated-in key is published at once but
 * signs only after this long, so no verifier meets a kid its cached JWKS lacks.
 */
export const JWKS_MAX_AGE_SECONDS = 300;

function isSealed(value: SigningKey['privateJwk']): value is SealedJwk {
  return typeof (value as Partial<SealedJwk>).sealed === 'string';
}

async function newSigningKey(
  em: EntityManager,
  clock: Clock,
  box: SecretBox,
  activatesAt: Date,
): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPair(SIGNING_ALG, { extractable: true });
  const publicJwk = await exportJWK(publicKey);
  const kid = await calculateJwkThumbprint(publicJwk);
  const privateJwk = { ...(await exportJWK(privateKey)), kid, alg: SIGNING_ALG };
  const key = em.create(SigningKey, {
    kid,
    privateJwk: { sealed: box.seal(JSON.stringify(privateJwk)) },
    publicJwk: { ...publicJwk, kid, alg: SIGNING_ALG, use: 'sig' },
    createdAt: clock.now(),
    activatesAt,
    retiredAt: null,
  });
  em.persist(key);
  return key;
}

/**
 * Throws unless `box` opens every key that signs now or is waiting to: a new key sealed under
 * another master key (an operator's shell without the servers' SECRETS_KEY, where a fresh key
 * file was just created) would stop every server from signing once it takes over.
 */
async function assertOpensSigningKeys(em: EntityManager, now: Date, box: SecretBox): Promise<void> {
  const live = await em.find(SigningKey, { $or: [{ retiredAt: null }, { retiredAt: { $gt: now } }] });
  for (const row of live) {
    if (!isSealed(row.privateJwk)) continue;
    try {
      box.open(row.privateJwk.sealed);
    } catch (e) {
      throw new Error(
        `cannot open signing key ${row.kid} with this master key (${(e as Error).message}); run with the servers' SECRETS_KEY or SECRETS_KEY_FILE (or, if that key is lost, use --replace-unreadable). No key was added.`,
        { cause: e },
      );
    }
  }
}

/**
 * Adds a new signing key, published at once. It takes over signing after the JWKS max-age
 * (or at once with `immediate`, for a compromised key); the keys it replaces sign until then
 * and stay published until their last token has expired. Refuses (writing nothing) when `box`
 * cannot open the keys in force: the new key would be sealed under a master key the servers lack.
 * `replaceUnreadable` is the way out when the old master key is lost: it skips that check and
 * signs with the new key at once.
 */
export async function rotateSigningKey(
  { em, clock }: Pick<ServiceDeps, 'em' | 'clock'>,
  box: SecretBox,
  options: { immediate?: boolean; replaceUnreadable?: boolean } = {},
): Promise<SigningKey> {
  return em.transactional(async (tx) => {
    const now = clock.now();
    if (!options.replaceUnreadable) await assertOpensSigningKeys(tx, now, box);
    const immediate = options.immediate || options.replaceUnreadable;
    const activatesAt = immediate ? now : new Date(now.getTime() + JWKS_MAX_AGE_SECONDS * 1000);
    await tx.nativeUpdate(
      SigningKey,
      { $or: [{ retiredAt: null }, { retiredAt: { $gt: activatesAt } }] },
      { retiredAt: activatesAt },
    );
    return newSigningKey(tx, clock, box, activatesAt);
  });
}

/** A retired key is published until the last token it signed has expired. */
export function isPublished(key: SigningKey, now: Date): boolean {
  return !key.retiredAt || key.retiredAt.getTime() + ACCESS_TOKEN_TTL_SECONDS * 1000 > now.getTime();
}

const MISSING_KID_RELOAD_MS = 1000;

/**
 * The signing keys as this process sees them. Signing reads the key in force from the
 * database each time (issuance writes rows anyway), so a rotation by the CLI applies on time;
 * verification keeps imported public keys in memory and reloads on an unknown kid, at most once
 * a second so random kids cannot turn into a query per request.
 */
export class KeyStore {
  /** Imported keys (`private:<kid>`, `public:<kid>`): one pair per signing key ever made, bounded as a guard. */
  private readonly imported = new Lru<string, CryptoKey>({ maxEntries: 1000 });
  private lastReload = 0;

  constructor(
    private readonly em: () => EntityManager,
    private readonly clock: Clock,
    private readonly box: SecretBox,
  ) {}

  /** Creates the first key on a fresh database; nobody can have cached a JWKS yet, so it signs at once. */
  async ensureKey(): Promise<void> {
    const em = this.em();
    if ((await em.count(SigningKey, { retiredAt: null })) === 0) {
      await newSigningKey(em, this.clock, this.box, this.clock.now());
      await em.flush();
    }
  }

  /**
   * Seals private keys stored in plaintext by versions before keys were encrypted at rest. Run at
   * every start; idempotent, and safe in several processes at once (each row is rewritten only
   * while it still holds no sealed value). Returns how many rows it sealed.
   */
  async sealPlaintextKeys(): Promise<number> {
    const em = this.em();
    const rows = await em.find(SigningKey, {}, { fields: ['kid', 'privateJwk'] });
    let sealed = 0;
    for (const { kid, privateJwk } of rows) {
      if (isSealed(privateJwk)) continue;
      sealed += await em.nativeUpdate(
        SigningKey,
        { kid, privateJwk: { sealed: null } },
        { privateJwk: { sealed: this.box.seal(JSON.stringify(privateJwk)) } },
      );
    }
    return sealed;
  }

  /** `em` is the caller's transaction: SQLite has one connection, a second one would wait on it forever. */
  async signingKey(em: EntityManager): Promise<{ kid: string; key: CryptoKey }> {
    const now = this.clock.now();
    let row = await em.findOne(
      SigningKey,
      { activatesAt: { $lte: now }, $or: [{ retiredAt: null }, { retiredAt: { $gt: now } }] },
      { orderBy: { activatesAt: 'desc', kid: 'asc' } },
    );
    if (!row) {
      // Every key was retired by hand; start a new one rather than fail issuance.
      row = await newSigningKey(em, this.clock, this.box, now);
      await em.flush();
    }
    const cacheKey = `private:${row.kid}`;
    let key = this.imported.get(cacheKey);
    if (!key) {
      // A plaintext row: written by an older process during a rolling upgrade, sealed at the next start.
      const jwk = isSealed(row.privateJwk)
        ? (JSON.parse(this.box.open(row.privateJwk.sealed)) as JWK)
        : (row.privateJwk as JWK);
      key = (await importJWK(jwk, SIGNING_ALG)) as CryptoKey;
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

  /** Latest to sign first: a key waiting to take over, then the one signing, then retired ones. */
  async published(): Promise<SigningKey[]> {
    const now = this.clock.now();
    const rows = await this.em().find(
      SigningKey,
      {},
      { orderBy: { activatesAt: 'desc', createdAt: 'desc', kid: 'asc' } },
    );
    return rows.filter((k) => isPublished(k, now));
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
