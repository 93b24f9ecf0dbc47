import { ApiKey } from '../accounts/entities.js';
import type { AppServices } from '../gateway/schema/context.js';
import { ACCOUNT_CHANGED, CREDENTIAL_REVOKED } from '../kernel/events.js';
import { AccessTokenRecord } from './entities.js';

/**
 * Credentials revoked by any process or the CLI — API keys revoked or past their expiry (e.g. the
 * old key after a rotation's grace period) and OAuth access tokens revoked (e.g. `tidegate clients
 * delete`) — are noticed by every process with two cheap indexed queries per interval, and
 * announced on the local bus as `credential.revoked` so subscriptions opened with them end (4403)
 * and the credential cache forgets them. Revocations made through this process's HTTP endpoints are
 * announced at once as well; a second announcement is harmless. A plan change (`account.changed`,
 * from any process or relayed from the CLI) makes the cache forget the account's credentials.
 * Returns the function that stops it.
 */
export function watchRevokedCredentials(
  services: Pick<AppServices, 'bus' | 'clock' | 'config' | 'credentials' | 'db'>,
): () => void {
  const { bus, clock, credentials, db } = services;
  const stopForgetting = bus.subscribe((event) => {
    if (event.type === CREDENTIAL_REVOKED) {
      credentials.invalidateKey(String((event.payload as { credentialId?: unknown }).credentialId));
    } else if (event.type === ACCOUNT_CHANGED && event.accountId) {
      credentials.invalidateAccount(event.accountId);
    }
  });
  let since = clock.now();
  const announce = (ids: string[], now: Date) =>
    bus.deliverLocally(
      ids.map((id) => ({
        id,
        type: CREDENTIAL_REVOKED,
        occurredAt: now,
        accountId: null,
        payload: { credentialId: id },
      })),
    );
  const timer = setInterval(() => {
    const now = clock.now();
    // Overlap the windows by 5 s: another process's clock may lag ours.
    const from = new Date(since.getTime() - 5_000);
    since = now;
    const em = db.em();
    Promise.all([
      em.find(
        ApiKey,
        { $or: [{ revokedAt: { $gte: from } }, { expiresAt: { $gte: from, $lte: now } }] },
        { fields: ['id'] },
      ),
      em.find(AccessTokenRecord, { revokedAt: { $gte: from } }, { fields: ['jti'] }),
    ])
      .then(([keys, tokens]) => announce([...keys.map((k) => k.id), ...tokens.map((t) => t.jti)], now))
      .catch(() => {
        // Database briefly unavailable: the next tick looks again (its window overlaps).
      });
  }, services.config.revocationPollMs);
  timer.unref();
  return () => {
    clearInterval(timer);
    stopForgetting();
  };
}
