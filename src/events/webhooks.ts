import type { EntityManager } from '@mikro-orm/knex';
import type { AppServices } from '../gateway/context.js';
import type { Page } from '../gateway/connection.js';
import { isUuid } from '../accounts/service.js';
import { newSecret } from '../kernel/crypto.js';
import { badInput, conflict, notFound } from '../kernel/errors.js';
import type { Principal } from '../kernel/principal.js';
import { WEBHOOK_TYPES, WebhookDomain } from './catalog.js';
import {
  WebhookDelivery,
  WebhookDeliveryStatus,
  WebhookEndpoint,
  WebhookEndpointStatus,
} from './entities.js';
import { vetWebhookUrl } from './ssrf.js';

/** Endpoints one account may register per domain; more is almost always a bug in a client's setup script. */
export const MAX_ENDPOINTS_PER_DOMAIN = 20;
const SECRET_PREFIX = 'whsec_';

export type WebhookEnv = Pick<AppServices, 'clock' | 'config'>;

export interface RegisterEndpointInput {
  url: string;
  eventTypes: readonly string[];
  description?: string | null;
}

export interface RegisteredEndpoint {
  endpoint: WebhookEndpoint;
  /** The signing secret: returned once, here, and never again. */
  secret: string;
}

function parseEventTypes(domain: WebhookDomain, raw: readonly string[]): string[] {
  const allowed = WEBHOOK_TYPES[domain];
  const wanted = [...new Set(raw.map((t) => t.trim()).filter(Boolean))];
  if (wanted.length === 0) throw badInput('eventTypes', `must name at least one of: ${allowed.join(', ')}`);
  const unknown = wanted.filter((t) => !allowed.includes(t));
  if (unknown.length > 0) {
    throw badInput(
      'eventTypes',
      `unknown event type${unknown.length > 1 ? 's' : ''} ${unknown.join(', ')}; allowed: ${allowed.join(', ')}`,
      {
        unknown,
        allowed,
      },
    );
  }
  return allowed.filter((t) => wanted.includes(t));
}

export async function registerEndpoint(
  em: EntityManager,
  principal: Principal,
  domain: WebhookDomain,
  input: RegisterEndpointInput,
  env: WebhookEnv,
): Promise<RegisteredEndpoint> {
  if (typeof input.url !== 'string' || !input.url.trim()) throw badInput('url', 'is required');
  if (input.url.length > 2048) throw badInput('url', 'must be at most 2048 characters');
  const eventTypes = parseEventTypes(domain, input.eventTypes ?? []);
  const description = input.description?.trim() || null;
  if (description && description.length > 200)
    throw badInput('description', 'must be at most 200 characters');
  const target = await vetWebhookUrl(input.url, env.config.webhookAllowPrivate);

  return em.transactional(async (tx) => {
    const count = await tx.count(WebhookEndpoint, { accountId: principal.accountId, domain });
    if (count >= MAX_ENDPOINTS_PER_DOMAIN) {
      throw conflict(
        `Account already has ${count} webhook endpoints for ${domain} (the limit is ${MAX_ENDPOINTS_PER_DOMAIN}); delete one first`,
        {
          limit: MAX_ENDPOINTS_PER_DOMAIN,
        },
      );
    }
    const secret = newSecret(SECRET_PREFIX, 32);
    const endpoint = tx.create(WebhookEndpoint, {
      accountId: principal.accountId,
      domain,
      url: target.url.toString(),
      description,
      eventTypes,
      secret,
      secretPrefix: secret.slice(0, 12),
      status: WebhookEndpointStatus.ACTIVE,
      consecutiveFailures: 0,
      createdAt: env.clock.now(),
    });
    tx.persist(endpoint);
    return { endpoint, secret };
  });
}

/** An endpoint of the caller's account; another account's endpoint is as unknown as a missing one. */
export async function getEndpoint(
  em: EntityManager,
  principal: Principal,
  id: string,
): Promise<WebhookEndpoint> {
  const endpoint = isUuid(id)
    ? await em.findOne(WebhookEndpoint, { id, accountId: principal.accountId })
    : null;
  if (!endpoint) throw notFound('Webhook endpoint', id);
  return endpoint;
}

export async function listEndpoints(
  em: EntityManager,
  principal: Principal,
  domain: WebhookDomain,
  page: Page,
): Promise<{ items: WebhookEndpoint[]; total: number }> {
  const [items, total] = await em.findAndCount(
    WebhookEndpoint,
    { accountId: principal.accountId, domain },
    { orderBy: { createdAt: 'asc', id: 'asc' }, limit: page.limit, offset: page.offset },
  );
  return { items, total };
}

export async function deleteEndpoint(
  em: EntityManager,
  principal: Principal,
  id: string,
): Promise<WebhookEndpoint> {
  const endpoint = await getEndpoint(em, principal, id);
  // Its pending deliveries go with it (ON DELETE CASCADE): a deleted endpoint is never called again.
  await em.nativeDelete(WebhookEndpoint, { id: endpoint.id });
  return endpoint;
}

/** Re-enables an endpoint the deliverer disabled; its pending deliveries resume. */
export async function enableEndpoint(
  em: EntityManager,
  principal: Principal,
  id: string,
): Promise<WebhookEndpoint> {
  const endpoint = await getEndpoint(em, principal, id);
  endpoint.status = WebhookEndpointStatus.ACTIVE;
  endpoint.disabledReason = null;
  endpoint.disabledAt = null;
  endpoint.consecutiveFailures = 0;
  await em.flush();
  return endpoint;
}

export async function listDeliveries(
  em: EntityManager,
  principal: Principal,
  endpointId: string,
  page: Page,
  status?: WebhookDeliveryStatus | null,
): Promise<{ items: WebhookDelivery[]; total: number }> {
  const endpoint = await getEndpoint(em, principal, endpointId);
  const [items, total] = await em.findAndCount(
    WebhookDelivery,
    { endpoint: endpoint.id, ...(status ? { status } : {}) },
    { orderBy: { createdAt: 'desc', id: 'asc' }, limit: page.limit, offset: page.offset },
  );
  return { items, total };
}

/**
 * Queues a delivery again, now, with a fresh attempt budget. The payload keeps its event id, so
 * receivers that de-duplicate by id see a repeat, not a new event.
 */
export async function redeliver(
  em: EntityManager,
  principal: Principal,
  deliveryId: string,
  env: Pick<AppServices, 'clock'>,
): Promise<WebhookDelivery> {
  const delivery = isUuid(deliveryId)
    ? await em.findOne(WebhookDelivery, { id: deliveryId }, { populate: ['endpoint'] })
    : null;
  if (!delivery || delivery.endpoint.accountId !== principal.accountId)
    throw notFound('Webhook delivery', deliveryId);
  if (delivery.endpoint.status === WebhookEndpointStatus.DISABLED) {
    throw conflict(
      `Webhook endpoint ${delivery.endpoint.id} is disabled (${delivery.endpoint.disabledReason ?? 'no reason recorded'}); enable it first`,
      {
        endpointId: delivery.endpoint.id,
      },
    );
  }
  delivery.status = WebhookDeliveryStatus.PENDING;
  delivery.attempts = 0;
  delivery.nextAttemptAt = env.clock.now();
  delivery.leaseToken = null;
  delivery.leaseUntil = null;
  await em.flush();
  return delivery;
}
