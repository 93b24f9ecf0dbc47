import { createHmac } from 'node:crypto';
import { constantTimeEqual } from '../kernel/crypto.js';
import { SECRET_PREFIX } from './secrets.js';

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
 * The key bytes of a `whsec_<base64url>` secret under the Standard Webhooks scheme: the random
 * bytes it encodes (Tidegate-Signature keys its HMAC with the whole string instead, as before).
 */
function standardKey(secret: string): Buffer {
  return Buffer.from(secret.slice(SECRET_PREFIX.length), 'base64url');
}

/**
 * The same secret in the form Standard Webhooks libraries take: `whsec_` + standard base64 of the
 * key bytes. Shown beside the secret wherever it is shown once.
 */
export function standardWebhooksSecret(secret: string): string {
  return `${SECRET_PREFIX}${standardKey(secret).toString('base64')}`;
}

/**
 * Standard Webhooks 1.0 headers: `webhook-id` (the event id: the same on every retry and
 * redelivery, for the receiver's idempotency), `webhook-timestamp` (unix seconds) and
 * `webhook-signature`, one space-separated `v1,<base64 HMAC-SHA256(key, id.timestamp.body)>` per
 * secret the endpoint signs with (two during a rotation's overlap window, new secret first).
 */
export function standardWebhookHeaders(
  secrets: readonly string[],
  id: string,
  rawBody: string,
  at: Date,
): Record<'webhook-id' | 'webhook-timestamp' | 'webhook-signature', string> {
  if (secrets.length === 0) throw new Error('standardWebhookHeaders needs at least one secret');
  const t = Math.floor(at.getTime() / 1000);
  const signed = `${id}.${t}.${rawBody}`;
  return {
    'webhook-id': id,
    'webhook-timestamp': String(t),
    'webhook-signature': secrets
      .map((secret) => `v1,${createHmac('sha256', standardKey(secret)).update(signed).digest('base64')}`)
      .join(' '),
  };
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
