import type { Database } from '../db/orm.js';
import { newSecret } from '../kernel/crypto.js';
import type { SecretBox } from '../kernel/secret-box.js';
import { WebhookEndpoint } from './entities.js';

/**
 * Webhook signing secrets at rest. The server must read them back to sign every delivery, so
 * they are sealed with the secret box (AES-256-GCM under SECRETS_KEY), not hashed: a database
 * reader without the master key cannot sign webhooks.
 */
export const SECRET_PREFIX = 'whsec_';

export interface NewSigningSecret {
  /** Shown to the caller once. */
  plaintext: string;
  /** What the database stores. */
  sealed: string;
  /** Listed with the endpoint, to tell secrets apart. */
  prefix: string;
}

export function newSigningSecret(box: SecretBox): NewSigningSecret {
  const plaintext = newSecret(SECRET_PREFIX, 32);
  return { plaintext, sealed: box.seal(plaintext), prefix: plaintext.slice(0, 12) };
}

/**
 * Rows written before secrets were sealed hold the plaintext (`whsec_…`) until the start-up sweep
 * (`resealLegacySecrets`) re-seals them; reading both keeps those endpoints signing in between,
 * e.g. while an older process still writes during a rolling upgrade.
 */
function openStored(box: SecretBox, stored: string): string {
  return stored.startsWith(SECRET_PREFIX) ? stored : box.open(stored);
}

/** A stored secret as it must be stored: sealed (a legacy plaintext one is sealed now). */
export function sealedForm(box: SecretBox, stored: string): string {
  return stored.startsWith(SECRET_PREFIX) ? box.seal(stored) : stored;
}

/**
 * The secrets a delivery made at `now` is signed with: the current one, then the one before the
 * last rotation while its overlap window lasts.
 */
export function signingSecrets(
  box: SecretBox,
  endpoint: Pick<WebhookEndpoint, 'secret' | 'previousSecret' | 'previousSecretExpiresAt'>,
  now: Date,
): string[] {
  const secrets = [openStored(box, endpoint.secret)];
  const { previousSecret, previousSecretExpiresAt } = endpoint;
  if (previousSecret && previousSecretExpiresAt && previousSecretExpiresAt.getTime() > now.getTime())
    secrets.push(openStored(box, previousSecret));
  return secrets;
}

/**
 * Seals secrets still stored in plaintext. Run at every start; idempotent, and safe in several
 * processes at once (each row is rewritten only while it still holds the plaintext it read).
 * Returns how many rows it sealed.
 */
export async function resealLegacySecrets(db: Database, box: SecretBox): Promise<number> {
  const em = db.em();
  const legacy = await em.find(
    WebhookEndpoint,
    { secret: { $like: `${SECRET_PREFIX}%` } },
    { fields: ['id', 'secret'] },
  );
  let sealed = 0;
  for (const { id, secret } of legacy) {
    if (!secret.startsWith(SECRET_PREFIX)) continue;
    sealed += await em.nativeUpdate(WebhookEndpoint, { id, secret }, { secret: box.seal(secret) });
  }
  return sealed;
}
