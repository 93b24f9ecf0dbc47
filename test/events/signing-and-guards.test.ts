import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { retryDelayMs, webhookBody } from '../../src/events/outbox.js';
import { newSigningSecret, sealedForm, signingSecrets } from '../../src/events/secrets.js';
import { signatureHeader, verifySignature } from '../../src/events/signature.js';
import { classifyAddress, vetWebhookUrl } from '../../src/events/ssrf.js';
import { loadConfig } from '../../src/config.js';
import { HOUR, MINUTE } from '../../src/kernel/clock.js';
import { SecretBox, SecretBoxError } from '../../src/kernel/secret-box.js';

describe('webhook signature', () => {
  const secret = 'whsec_test';
  const body = webhookBody({
    id: 'e1',
    type: 'tier_change',
    occurredAt: new Date('2026-01-01T00:00:00Z'),
    payload: { slug: 'a' },
  });
  const at = new Date('2026-01-01T00:00:10Z');

  it('is t=<unix>,v1=<hex hmac of "t.body"> and verifies within the replay window', () => {
    const header = signatureHeader([secret], body, at);
    expect(header).toMatch(/^t=1767225610,v1=[0-9a-f]{64}$/);
    expect(verifySignature(secret, body, header, new Date(at.getTime() + 4 * MINUTE))).toBe(true);
  });

  it('fails for a changed body, another secret, a garbled header, or a timestamp older than 5 minutes', () => {
    const header = signatureHeader([secret], body, at);
    expect(verifySignature(secret, body.replace('"a"', '"b"'), header, at)).toBe(false);
    expect(verifySignature('whsec_other', body, header, at)).toBe(false);
    expect(verifySignature(secret, body, 'v1=abc', at)).toBe(false);
    expect(verifySignature(secret, body, 't=1767225610', at)).toBe(false);
    expect(verifySignature(secret, body, header, new Date(at.getTime() + 5 * MINUTE + 1000))).toBe(false);
  });

  it('carries one v1 per secret during a rotation overlap, and each secret verifies on its own', () => {
    const header = signatureHeader(['whsec_new', 'whsec_old'], body, at);
    expect(header).toMatch(/^t=1767225610,v1=[0-9a-f]{64},v1=[0-9a-f]{64}$/);
    expect(verifySignature('whsec_new', body, header, at)).toBe(true);
    expect(verifySignature('whsec_old', body, header, at)).toBe(true);
    expect(verifySignature('whsec_other', body, header, at)).toBe(false);
    expect(() => signatureHeader([], body, at)).toThrow(/at least one secret/);
  });
});

describe('signing secrets at rest', () => {
  const box = new SecretBox(randomBytes(32));
  const now = new Date('2026-01-01T00:00:00Z');

  it('stores only the sealed form; the plaintext comes back only through the box', () => {
    const secret = newSigningSecret(box);
    expect(secret.plaintext).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/);
    expect(secret.sealed).toMatch(/^sb1\./);
    expect(secret.sealed).not.toContain(secret.plaintext.slice(6));
    // The column is 128 characters wide.
    expect(secret.sealed.length).toBeLessThanOrEqual(128);
    expect(signingSecrets(box, { secret: secret.sealed }, now)).toEqual([secret.plaintext]);
    expect(() => signingSecrets(new SecretBox(randomBytes(32)), { secret: secret.sealed }, now)).toThrow(
      SecretBoxError,
    );
  });

  it('still signs with a legacy plaintext secret, and seals it when asked', () => {
    const legacy = 'whsec_legacyplaintextsecret';
    expect(signingSecrets(box, { secret: legacy }, now)).toEqual([legacy]);
    const sealed = sealedForm(box, legacy);
    expect(sealed).toMatch(/^sb1\./);
    expect(box.open(sealed)).toBe(legacy);
    expect(sealedForm(box, sealed)).toBe(sealed);
  });

  it('adds the previous secret only while its overlap window lasts', () => {
    const current = newSigningSecret(box);
    const previous = newSigningSecret(box);
    const endpoint = {
      secret: current.sealed,
      previousSecret: previous.sealed,
      previousSecretExpiresAt: new Date(now.getTime() + HOUR),
    };
    expect(signingSecrets(box, endpoint, now)).toEqual([current.plaintext, previous.plaintext]);
    expect(signingSecrets(box, endpoint, new Date(now.getTime() + HOUR))).toEqual([current.plaintext]);
  });
});

describe('retry schedule', () => {
  it('triples each wait from the base, within ±20 % jitter, 8 attempts over about 24 hours by default', () => {
    const base = loadConfig({}).webhookRetryBaseMs;
    expect(base).toBe(80_000);
    const plain = [1, 2, 3, 4, 5, 6, 7].map((n) => retryDelayMs(base, n, () => 0.5));
    expect(plain).toEqual([1, 3, 9, 27, 81, 243, 729].map((m) => m * 80_000));
    const total = plain.reduce((a, b) => a + b, 0);
    expect(total).toBeGreaterThan(24 * HOUR);
    expect(total).toBeLessThan(24.5 * HOUR);
    expect(retryDelayMs(MINUTE, 1, () => 0)).toBe(0.8 * MINUTE);
    expect(retryDelayMs(MINUTE, 1, () => 1)).toBe(1.2 * MINUTE);
  });
});

describe('SSRF address classes', () => {
  it.each([
    // public
    ['8.8.8.8', 'public'],
    ['93.184.216.34', 'public'],
    ['2606:4700::1111', 'public'],
    ['2a00:1450:4001:80b::200e', 'public'],
    ['::ffff:8.8.8.8', 'public'],
    ['64:ff9b::808:808', 'public'], // NAT64 of 8.8.8.8
    ['2002:808:808::1', 'public'], // 6to4 of 8.8.8.8
    // IPv4 special-purpose registry
    ['0.0.0.0', 'private'],
    ['10.0.0.1', 'private'],
    ['100.64.0.1', 'private'],
    ['127.0.0.1', 'private'],
    ['169.254.1.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.0.0.9', 'private'],
    ['192.0.2.1', 'private'],
    ['192.31.196.1', 'private'],
    ['192.52.193.1', 'private'],
    ['192.88.99.1', 'private'],
    ['192.168.1.1', 'private'],
    ['192.175.48.1', 'private'],
    ['198.18.0.1', 'private'],
    ['198.51.100.1', 'private'],
    ['203.0.113.1', 'private'],
    ['224.0.0.1', 'private'],
    ['240.0.0.1', 'private'],
    ['255.255.255.255', 'private'],
    // IPv6 special-purpose registry and non-global space
    ['::', 'private'],
    ['::1', 'private'],
    ['64:ff9b:1::1', 'private'],
    ['100::1', 'private'],
    ['100:0:0:1::1', 'private'],
    ['2001::1', 'private'], // Teredo
    ['2001:2::1', 'private'], // benchmarking
    ['2001:db8::1', 'private'],
    ['2620:4f:8000::1', 'private'],
    ['3fff::1', 'private'],
    ['5f00::1', 'private'],
    ['fc00::1', 'private'],
    ['fd12::1', 'private'],
    ['fe80::1', 'private'],
    ['fe80::1%eth0', 'private'],
    ['fec0::1', 'private'], // site-local
    ['ff02::1', 'private'],
    ['4000::1', 'private'], // outside global unicast 2000::/3
    // IPv4 embedded in IPv6: classed by the IPv4 address
    ['::ffff:10.0.0.1', 'private'],
    ['::ffff:7f00:1', 'private'], // mapped 127.0.0.1 in hex, as the URL parser writes it
    ['::127.0.0.1', 'private'], // IPv4-compatible
    ['::ffff:0:127.0.0.1', 'private'], // SIIT
    ['64:ff9b::a00:1', 'private'], // NAT64 of 10.0.0.1
    ['2002:7f00:1::1', 'private'], // 6to4 of 127.0.0.1
    ['2002:c0a8:101::', 'private'], // 6to4 of 192.168.1.1
    // cloud metadata, in every spelling
    ['169.254.169.254', 'metadata'],
    ['169.254.170.2', 'metadata'],
    ['100.100.100.200', 'metadata'],
    ['fd00:ec2::254', 'metadata'],
    ['::ffff:169.254.169.254', 'metadata'],
    ['::ffff:a9fe:a9fe', 'metadata'],
    ['::a9fe:a9fe', 'metadata'],
    ['64:ff9b::a9fe:a9fe', 'metadata'],
    ['2002:a9fe:a9fe::1', 'metadata'],
    // not an address at all
    ['not-an-ip', 'private'],
  ])('%s is %s', (address, kind) => {
    expect(classifyAddress(address)).toBe(kind);
  });

  it('checks every DNS answer, so one private address among public ones is refused', async () => {
    const resolve = async () => [
      { address: '93.184.216.34', family: 4 },
      { address: '10.0.0.7', family: 4 },
    ];
    const refusal = await vetWebhookUrl('https://hooks.example.com/x', false, { resolve }).catch((e) => e);
    // Only that the name resolves somewhere forbidden: naming 10.0.0.7 would make this a DNS oracle.
    expect(refusal.message).toBe(
      "url: host 'hooks.example.com' resolves to an address webhooks may not reach",
    );
    expect(JSON.stringify(refusal)).not.toContain('10.0.0.7');
    expect(JSON.stringify(refusal.extensions ?? {})).not.toContain('10.0.0.7');
    const ok = await vetWebhookUrl('https://hooks.example.com/x', false, {
      resolve: async () => [
        { address: '93.184.216.34', family: 4 },
        { address: '2606:4700::1111', family: 6 },
      ],
    });
    expect(ok.addresses).toEqual([
      { address: '93.184.216.34', family: 4 },
      { address: '2606:4700::1111', family: 6 },
    ]);
  });

  it('refuses metadata addresses in every spelling even when private addresses are allowed', async () => {
    for (const url of [
      'http://169.254.169.254/latest',
      'http://[::ffff:169.254.169.254]/latest',
      'http://[::ffff:a9fe:a9fe]/latest',
      'http://[64:ff9b::a9fe:a9fe]/latest',
      'http://[2002:a9fe:a9fe::1]/latest',
      'http://[fd00:ec2::254]/latest',
    ]) {
      await expect(vetWebhookUrl(url, true), url).rejects.toThrow(/cloud metadata/);
    }
    await expect(vetWebhookUrl('http://127.0.0.1:8080/x', true)).resolves.toMatchObject({
      addresses: [{ address: '127.0.0.1', family: 4 }],
    });
  });

  it('refuses the embedded and special IPv6 forms when private addresses are refused', async () => {
    for (const url of [
      'http://[64:ff9b::7f00:1]/x',
      'http://[2002:7f00:1::1]/x',
      'http://[::127.0.0.1]/x',
      'http://[fec0::1]/x',
      'http://[::ffff:10.0.0.1]/x',
    ]) {
      await expect(vetWebhookUrl(url, false), url).rejects.toThrow(
        /private, loopback, link-local or reserved/,
      );
    }
  });

  it('gives up waiting for DNS when the attempt deadline aborts it', async () => {
    const controller = new AbortController();
    const never = () => new Promise<Array<{ address: string; family: number }>>(() => {});
    const vetting = vetWebhookUrl('https://slow-dns.example/x', false, {
      resolve: never,
      signal: controller.signal,
    });
    controller.abort(new Error('no answer within 10 ms'));
    await expect(vetting).rejects.toThrow('no answer within 10 ms');
  });
});
