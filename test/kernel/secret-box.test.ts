import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { SecretBox, SecretBoxError, openSecretBox, parseMasterKey } from '../../src/kernel/secret-box.js';

const dirs: string[] = [];
const tempDir = () => {
  const dir = mkdtempSync(join(tmpdir(), 'tidegate-secret-box-'));
  dirs.push(dir);
  return dir;
};
afterEach(() => dirs.splice(0).forEach((d) => rmSync(d, { recursive: true, force: true })));

describe('SecretBox', () => {
  it('round-trips a secret and never stores the plaintext', () => {
    const box = new SecretBox(randomBytes(32));
    const sealed = box.seal('whsec_abc');
    expect(sealed).toMatch(/^sb1\.[0-9a-f]{8}\./);
    expect(sealed).not.toContain('whsec_abc');
    expect(box.open(sealed)).toBe('whsec_abc');
    // A fresh IV each time: equal secrets do not give equal ciphertexts.
    expect(box.seal('whsec_abc')).not.toBe(sealed);
  });

  it('names a wrong master key instead of returning garbage', () => {
    const sealed = new SecretBox(randomBytes(32)).seal('x');
    expect(() => new SecretBox(randomBytes(32)).open(sealed)).toThrow(/sealed with master key [0-9a-f]{8}/);
  });

  it('detects tampering and malformed values', () => {
    const box = new SecretBox(randomBytes(32));
    const parts = box.seal('secret').split('.');
    const body = Buffer.from(parts[3]!, 'base64url');
    body[0]! ^= 1;
    parts[3] = body.toString('base64url');
    expect(() => box.open(parts.join('.'))).toThrow(/failed authentication/);
    expect(() => box.open('plain-text')).toThrow(SecretBoxError);
  });

  it('derives stable, purpose-separated keys', () => {
    const key = randomBytes(32);
    const a = new SecretBox(key).derive('upload');
    expect(new SecretBox(key).derive('upload').equals(a)).toBe(true);
    expect(new SecretBox(key).derive('other').equals(a)).toBe(false);
  });
});

describe('master key', () => {
  it('accepts 64 hex or 43 base64url characters and nothing else', () => {
    const key = randomBytes(32);
    expect(parseMasterKey(key.toString('hex'))?.equals(key)).toBe(true);
    expect(parseMasterKey(key.toString('base64url'))?.equals(key)).toBe(true);
    expect(parseMasterKey('short')).toBeNull();
    expect(() => loadConfig({ SECRETS_KEY: 'short' })).toThrow(/SECRETS_KEY must be 32 bytes/);
  });

  it('creates the key file once with mode 0600 and reuses it', () => {
    const file = join(tempDir(), 'nested', 'secrets.key');
    const first = openSecretBox({ secretsKeyFile: file });
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const second = openSecretBox({ secretsKeyFile: file });
    expect(second.keyId).toBe(first.keyId);
    expect(second.open(first.seal('kept'))).toBe('kept');
  });

  it('refuses a key file that does not hold a key', () => {
    const file = join(tempDir(), 'secrets.key');
    writeFileSync(file, 'not a key\n');
    expect(() => openSecretBox({ secretsKeyFile: file })).toThrow(/does not hold a 32-byte key/);
    expect(readFileSync(file, 'utf8')).toBe('not a key\n');
  });

  it('prefers SECRETS_KEY over the file', () => {
    const key = randomBytes(32);
    const file = join(tempDir(), 'unused.key');
    expect(openSecretBox({ secretsKey: key, secretsKeyFile: file }).keyId).toBe(new SecretBox(key).keyId);
  });
});
