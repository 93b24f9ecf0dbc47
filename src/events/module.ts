import type { Metrics } from '../gateway/observability/metrics.js';
import type { DomainModule } from '../gateway/schema/module.js';
import type { EventBus, EventPublisher } from '../kernel/events.js';
import { webhookDomainOf } from './catalog.js';
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
import { WEBHOOK_TEST_EVENT } from './webhooks.js';
import { LiveEventsResolver, liquidityFeedResolvers } from './subscriptions.js';

/** Counts what this process publishes (the trace of each event is stored with it when staged). */
export function observedPublisher(bus: EventBus, metrics: Pick<Metrics, 'published'>): EventPublisher {
  return {
    live: bus.live,
    publish(events) {
      metrics.published(events.map((e) => e.type));
      return bus.publish(events);
    },
  };
}

/** The webhook endpoints and deliveries of an account, both domains' doors. */
export const webhookResolvers = [
  LiquidityWebhookResolver,
  PortOpsWebhookResolver,
  WebhookDeliveryResolver,
  WebhookEndpointPageResolver,
  WebhookDeliveryPageResolver,
];

export const eventsModule: DomainModule = {
  name: 'events',
  summary: 'Webhook endpoints (liquidity and port-operations doors), their deliveries and signing secrets',
  resolvers: [LiveEventsResolver, ...liquidityFeedResolvers, ...webhookResolvers],
  restRoutes: eventsRestRoutes,
  async start(services) {
    const resealed = await resealLegacySecrets(services.db, services.secrets);
    if (resealed > 0) services.logger.info({ resealed }, 'sealed webhook secrets stored in plaintext');
    // WEBHOOK_WORKER=false: this process neither dispatches, delivers, relays nor purges.
    const outbox = services.config.webhookWorker ? new WebhookOutbox(services) : undefined;
    // The events are committed already: the worker dispatches them now when an endpoint may take
    // them, and delivers a test event's delivery (written with it) now, not at the next poll.
    const stopNudging = outbox
      ? services.bus.subscribe((event) => {
          if (event.type === WEBHOOK_TEST_EVENT) outbox.nudge();
          else if (webhookDomainOf(event.type)) outbox.published(event);
        })
      : () => {};
    outbox?.start();
    services.metrics.observeOutbox(() => outboxSnapshot(services.db, services.clock));
    return {
      async stop() {
        stopNudging();
        await outbox?.stop();
      },
    };
  },
};
