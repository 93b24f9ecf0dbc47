import { describe, expect, it } from 'vitest';
import { retryDelayMs, webhookBody } from '../../src/events/outbox.js';
import { signatureHeader, verifySignature } from '../../src/events/signature.js';
import { classifyAddress, vetWebhookUrl } from '../../src/events/ssrf.js';
import { HOUR, MINUTE } from '../../src/kernel/clock.js';

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
    const header = signatureHeader(secret, body, at);
    expect(header).toMatch(/^t=1767225610,v1=[0-9a-f]{64}$/);
    expect(verifySignature(secret, body, header, new Date(at.getTime() + 4 * MINUTE))).toBe(true);
  });

  it('fails for a changed body, another secret, a garbled header, or a timestamp older than 5 minutes', () => {
    const header = signatureHeader(secret, body, at);
    expect(verifySignature(secret, body.replace('"a"', '"b"'), header, at)).toBe(false);
    expect(verifySignature('whsec_other', body, header, at)).toBe(false);
    expect(verifySignature(secret, body, 'v1=abc', at)).toBe(false);
    expect(verifySignature(secret, body, header, new Date(at.getTime() + 5 * MINUTE + 1000))).toBe(false);
  });
});

describe('retry schedule', () => {
  it('triples each wait from the base, within ±20 % jitter, ~8 attempts over about 18 hours', () => {
    const base = MINUTE;
    const plain = [1, 2, 3, 4, 5, 6, 7].map((n) => retryDelayMs(base, n, () => 0.5));
    expect(plain).toEqual([1, 3, 9, 27, 81, 243, 729].map((m) => m * MINUTE));
    expect(plain.reduce((a, b) => a + b, 0)).toBeGreaterThan(18 * HOUR);
    expect(retryDelayMs(base, 1, () => 0)).toBe(0.8 * MINUTE);
    expect(retryDelayMs(base, 1, () => 1)).toBe(1.2 * MINUTE);
  });
});

describe('SSRF address classes', () => {
  it.each([
    ['8.8.8.8', 'public'],
    ['2606:4700::1111', 'public'],
    ['127.0.0.1', 'private'],
    ['10.0.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.168.1.1', 'private'],
    ['100.64.0.1', 'private'],
    ['169.254.1.1', 'private'],
    ['0.0.0.0', 'private'],
    ['224.0.0.1', 'private'],
    ['::1', 'private'],
    ['::', 'private'],
    ['fe80::1', 'private'],
    ['fd12::1', 'private'],
    ['::ffff:10.0.0.1', 'private'],
    ['169.254.169.254', 'metadata'],
    ['fd00:ec2::254', 'metadata'],
  ])('%s is %s', (address, kind) => {
    expect(classifyAddress(address)).toBe(kind);
  });

  it('checks every DNS answer, so one private address among public ones is refused', async () => {
    const resolve = async () => [
      { address: '93.184.216.34', family: 4 },
      { address: '10.0.0.7', family: 4 },
    ];
    await expect(vetWebhookUrl('https://hooks.example.com/x', false, 'url', resolve)).rejects.toThrow(
      /url: resolves to 10\.0\.0\.7/,
    );
    const ok = await vetWebhookUrl('https://hooks.example.com/x', false, 'url', async () => [
      { address: '93.184.216.34', family: 4 },
    ]);
    expect(ok).toMatchObject({ address: '93.184.216.34', family: 4 });
  });

  it('refuses metadata addresses even when private addresses are allowed', async () => {
    await expect(vetWebhookUrl('http://169.254.169.254/latest', true)).rejects.toThrow(/cloud metadata/);
    await expect(vetWebhookUrl('http://127.0.0.1:8080/x', true)).resolves.toMatchObject({
      address: '127.0.0.1',
    });
  });
});
