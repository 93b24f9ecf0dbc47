import { createHmac } from 'node:crypto';
import { constantTimeEqual } from '../kernel/crypto.js';

/**
 * `Tidegate-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, t + "." + raw body)>`, with one
 * `v1` per secret the endpoint currently signs with: two during a rotation's overlap window
 * (new secret first), one otherwise.
 */
export const SIGNATURE_HEADER = 'tidegate-signature';

/** How old a signed timestamp a receiver should accept (replay window). */
export const REPLAY_WINDOW_SECONDS = 300;

export function signatureHeader(secrets: readonly string[], rawBody: string, at: Date): string {
  if (secrets.length === 0) throw new Error('signatureHeader needs at least one secret');
  const t = Math.floor(at.getTime() / 1000);
  return [`t=${t}`, ...secrets.map((secret) => `v1=${hmacHex(secret, `${t}.${rawBody}`)}`)].join(',');
}

function hmacHex(secret: string, data: string): string {
  return createHmac('sha256', secret).update(data).digest('hex');
}

/**
 * What a receiver does (src/events/README.md shows the same code): recompute the HMAC over the raw body,
 * accept the request when any `v1` matches (compared in constant time), and refuse timestamps
 * outside the replay window.
 */
export function verifySignature(
  secret: string,
  rawBody: string,
  header: string,
  now: Date,
  windowSeconds = REPLAY_WINDOW_SECONDS,
): boolean {
  const pairs = header.split(',').map((p) => p.trim().split('=', 2) as [string, string | undefined]);
  const t = Number(pairs.find(([k]) => k === 't')?.[1]);
  const given = pairs.filter(([k, v]) => k === 'v1' && v).map(([, v]) => v!);
  if (!Number.isInteger(t) || given.length === 0) return false;
  if (Math.abs(now.getTime() / 1000 - t) > windowSeconds) return false;
  const expected = hmacHex(secret, `${t}.${rawBody}`);
  return given.some((v1) => constantTimeEqual(expected, v1));
}
