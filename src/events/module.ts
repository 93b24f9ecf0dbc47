import { ApiKey } from '../accounts/entities.js';
import { AccessTokenRecord } from '../auth/entities.js';
import type { AppServices, EventPublisher } from '../gateway/context.js';
import type { DomainModule } from '../gateway/module.js';
import { createEventBus, installEventBus, type EventBus } from './bus.js';
import { CREDENTIAL_REVOKED, webhookDomainOf } from './catalog.js';
import { WebhookOutbox, outboxSnapshot } from './outbox.js';
import { eventsRestRoutes } from './rest.js';
import {
  LiquidityWebhookResolver,
  PortOpsWebhookResolver,
  WebhookDeliveryPageResolver,
  WebhookDeliveryResolver,
  WebhookEndpointPageResolver,
} from './resolvers.js';
import { resealLegacySecrets } from './secrets.js';
import { publishesLive } from './stage.js';
import { LiveEventsResolver } from './subscriptions.js';

interface Running {
  bus: EventBus;
  outbox: WebhookOutbox | undefined;
  stopKeyWatch: () => void;
}

/** Per app instance (tests run several in one process), so not module-level singletons. */
const running = new WeakMap<AppServices, Running>();

/**
 * Credentials revoked by any process or the CLI — API keys revoked or past their expiry (e.g. the
 * old key after a rotation's grace period) and OAuth access tokens revoked (e.g. `tidegate clients
 * delete`) — are noticed by every process with two cheap indexed queries per interval, and
 * announced on the local bus as `credential.revoked` so subscriptions opened with them end (4403).
 * Revocations made through this process's HTTP endpoints are announced at once as well; a second
 * announcement is harmless.
 */
function watchRevokedCredentials(services: AppServices, bus: EventBus): () => void {
  let since = services.clock.now();
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
    const now = services.clock.now();
    // Overlap the windows by 5 s: another process's clock may lag ours.
    const from = new Date(since.getTime() - 5_000);
    since = now;
    const em = services.db.em();
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
  return () => clearInterval(timer);
}

/** Counts what this process publishes and remembers the trace each event was published in. */
function observedPublisher(services: AppServices, bus: EventBus): EventPublisher {
  return {
    publish(events) {
      services.metrics.published(events.map((e) => e.type));
      services.telemetry.rememberEvents(events.map((e) => e.id));
      return bus.publish(events);
    },
  };
}

export const eventsModule: DomainModule = {
  name: 'events',
  resolvers: [
    LiveEventsResolver,
    LiquidityWebhookResolver,
    PortOpsWebhookResolver,
    WebhookDeliveryResolver,
    WebhookEndpointPageResolver,
    WebhookDeliveryPageResolver,
  ],
  restRoutes: eventsRestRoutes,
  async start(services) {
    const bus = await createEventBus(services);
    installEventBus(services, bus);
    services.events = observedPublisher(services, bus);
    // This server publishes what it stages; events staged elsewhere (the CLI) are relayed by the outbox.
    publishesLive(services.db);
    const resealed = await resealLegacySecrets(services.db, services.secrets);
    if (resealed > 0) services.logger.info({ resealed }, 'sealed webhook secrets stored in plaintext');
    // WEBHOOK_WORKER=false: this process neither dispatches, delivers, relays nor purges.
    const outbox = services.config.webhookWorker ? new WebhookOutbox(services) : undefined;
    bus.subscribe((event) => {
      if (event.type === CREDENTIAL_REVOKED) {
        services.credentials.invalidateKey(
          String((event.payload as { credentialId?: unknown }).credentialId),
        );
      } else if (webhookDomainOf(event.type)) {
        // The events are committed already; deliver their webhooks now rather than at the next poll.
        outbox?.nudge();
      }
    });
    outbox?.start();
    services.metrics.observeOutbox(() => outboxSnapshot(services.db, services.clock));
    running.set(services, { bus, outbox, stopKeyWatch: watchRevokedCredentials(services, bus) });
  },
  async stop(services) {
    const state = running.get(services);
    if (!state) return;
    running.delete(services);
    state.stopKeyWatch();
    await state.outbox?.stop();
    await state.bus.close();
  },
};
