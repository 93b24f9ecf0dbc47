import { createHmac } from 'node:crypto';
import { constantTimeEqual } from '../kernel/crypto.js';

/** `Tidegate-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, t + "." + raw body)>` */
export const SIGNATURE_HEADER = 'tidegate-signature';

/** How old a signed timestamp a receiver should accept (replay window). */
export const REPLAY_WINDOW_SECONDS = 300;

export function signatureHeader(secret: string, rawBody: string, at: Date): string {
  const t = Math.floor(at.getTime() / 1000);
  return `t=${t},v1=${hmacHex(secret, `${t}.${rawBody}`)}`;
}

function hmacHex(secret: string, data: string): string {
  return createHmac('sha256', secret).update(data).digest('hex');
}

/**
 * What a receiver does (the README shows the same code): recompute the HMAC over the raw body,
 * compare in constant time, and refuse timestamps outside the replay window.
 */
export function verifySignature(
  secret: string,
  rawBody: string,
  header: string,
  now: Date,
  windowSeconds = REPLAY_WINDOW_SECONDS,
): boolean {
  const parts = Object.fromEntries(header.split(',').map((p) => p.trim().split('=', 2) as [string, string]));
  const t = Number(parts.t);
  if (!Number.isInteger(t) || !parts.v1) return false;
  if (Math.abs(now.getTime() / 1000 - t) > windowSeconds) return false;
  return constantTimeEqual(hmacHex(secret, `${t}.${rawBody}`), parts.v1);
}
