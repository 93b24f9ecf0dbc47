import {
  createCipheriv,
  createDecipheriv,
  createHash,
  hkdfSync,
  randomBytes,
  type BinaryLike,
} from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';

/**
 * Encryption at rest for secrets the service must be able to read back (webhook signing
 * secrets, OAuth signing keys), and the root of derived keys (signed upload URLs).
 * Secrets the service only has to recognise (API keys, client secrets, codes, refresh tokens)
 * are hashed instead and never pass through here.
 *
 * Sealed form: `sb1.<keyId>.<iv>.<ciphertext+tag>` (base64url), AES-256-GCM. The key id names
 * which master key sealed a value, so a wrong SECRETS_KEY is a clear error, not garbage.
 */
const VERSION = 'sb1';
const KEY_BYTES = 32;

export class SecretBoxError extends Error {
  override name = 'SecretBoxError';
}

export class SecretBox {
  readonly keyId: string;

  constructor(private readonly key: Buffer) {
    if (key.length !== KEY_BYTES) throw new SecretBoxError(`the master key must be ${KEY_BYTES} bytes`);
    this.keyId = createHash('sha256').update('tidegate/secret-box/id').update(key).digest('hex').slice(0, 8);
  }

  seal(plaintext: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    cipher.setAAD(Buffer.from(`${VERSION}.${this.keyId}`));
    const body = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final(), cipher.getAuthTag()]);
    return [VERSION, this.keyId, iv.toString('base64url'), body.toString('base64url')].join('.');
  }

  open(sealed: string): string {
    const [version, keyId, iv, body] = sealed.split('.');
    if (version !== VERSION || !keyId || !iv || !body) throw new SecretBoxError('not a sealed secret');
    if (keyId !== this.keyId) {
      throw new SecretBoxError(
        `secret was sealed with master key ${keyId}, but this process has key ${this.keyId} (check SECRETS_KEY / SECRETS_KEY_FILE)`,
      );
    }
    const data = Buffer.from(body, 'base64url');
    if (data.length < 16) throw new SecretBoxError('sealed secret is truncated');
    const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv, 'base64url'));
    decipher.setAAD(Buffer.from(`${VERSION}.${keyId}`));
    decipher.setAuthTag(data.subarray(data.length - 16));
    try {
      return Buffer.concat([decipher.update(data.subarray(0, data.length - 16)), decipher.final()]).toString(
        'utf8',
      );
    } catch {
      throw new SecretBoxError('sealed secret failed authentication (corrupted or tampered)');
    }
  }

  /** A key for one purpose (HKDF-SHA256), stable for as long as the master key is. */
  derive(purpose: string, bytes = KEY_BYTES): Buffer {
    return Buffer.from(hkdfSync('sha256', this.key, Buffer.alloc(0), purpose as BinaryLike, bytes));
  }
}

/** Parses a master key given as 64 hex characters or 43 base64url characters (32 bytes). */
export function parseMasterKey(raw: string): Buffer | null {
  const text = raw.trim();
  if (/^[0-9a-f]{64}$/i.test(text)) return Buffer.from(text, 'hex');
  if (/^[A-Za-z0-9_-]{43}=?$/.test(text)) {
    const key = Buffer.from(text, 'base64url');
    return key.length === KEY_BYTES ? key : null;
  }
  return null;
}

/**
 * The master key: SECRETS_KEY when set, otherwise the key file (created with mode 0600 on first
 * use). Every process that shares a database must share the key.
 */
export function openSecretBox(options: { secretsKey?: Buffer; secretsKeyFile: string }): SecretBox {
  if (options.secretsKey) return new SecretBox(options.secretsKey);
  const file = options.secretsKeyFile;
  if (!existsSync(file)) {
    mkdirSync(dirname(file), { recursive: true });
    try {
      // 'wx': two processes starting together must not overwrite each other's fresh key.
      writeFileSync(file, randomBytes(KEY_BYTES).toString('base64url') + '\n', { mode: 0o600, flag: 'wx' });
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
    chmodSync(file, 0o600);
  }
  const key = parseMasterKey(readFileSync(file, 'utf8'));
  if (!key)
    throw new SecretBoxError(`${file} does not hold a 32-byte key (64 hex or 43 base64url characters)`);
  return new SecretBox(key);
}
