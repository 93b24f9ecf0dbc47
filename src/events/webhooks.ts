import { optionalText } from '../kernel/text.js';
import { raw } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/knex';
import type { AppServices } from '../gateway/schema/context.js';
import type { Page } from '../gateway/schema/connection.js';
import { isUuid } from '../kernel/ids.js';
import { badInput, conflict, missingScopes, notFound } from '../kernel/errors.js';
import type { Principal } from '../kernel/principal.js';
import { hasScope } from '../kernel/scopes.js';
import { WEBHOOK_READ_SCOPE, WEBHOOK_TYPES, WebhookDomain } from './catalog.js';
import {
  EventRecord,
  WebhookDelivery,
  WebhookDeliveryAttempt,
  WebhookDeliveryStatus,
  WebhookEndpoint,
  WebhookEndpointStatus,
} from './entities.js';
import { newSigningSecret, sealedForm } from './secrets.js';
import { standardWebhooksSecret } from './signature.js';
import { vetWebhookUrl } from './ssrf.js';
import { endpointsChanged } from './outbox.js';
import type { ServiceDeps } from '../kernel/deps.js';

/** Endpoints one account may register per domain; more is almost always a bug in a client's setup script. */
export const MAX_ENDPOINTS_PER_DOMAIN = 20;

export type WebhookEnv = Pick<AppServices, 'clock' | 'config' | 'secrets'>;
/** What the webhook services that write take first: the unit of work and their environment. */
export type WebhookDeps = Pick<ServiceDeps, 'em'> & WebhookEnv;

export interface RegisterEndpointInput {
  url: string;
  eventTypes: readonly string[];
  description?: string | null;
}

export interface EndpointPatch {
  url?: string | null;
  eventTypes?: readonly string[] | null;
  description?: string | null;
  /** false pauses the endpoint (DISABLED, nothing sent, queued deliveries wait); true enables it. */
  active?: boolean | null;
}

export interface EndpointWithSecret {
  endpoint: WebhookEndpoint;
  /** The signing secret: returned once, here, and never again. */
  secret: string;
  /** The same secret in the form Standard Webhooks libraries take (`whsec_<base64>`). */
  standardWebhooksSecret: string;
}

const shownOnce = (endpoint: WebhookEndpoint, secret: string): EndpointWithSecret => ({
  endpoint,
  secret,
  standardWebhooksSecret: standardWebhooksSecret(secret),
});

const DOMAIN_NOUN: Record<WebhookDomain, string> = {
  [WebhookDomain.LIQUIDITY]: 'Webhook endpoint',
  [WebhookDomain.PORT_OPS]: 'Webhook subscription',
};

function parseEventTypes(domain: WebhookDomain, raw: readonly string[]): string[] {
  const allowed = WEBHOOK_TYPES[domain];
  const wanted = [...new Set(raw.map((t) => t.trim()).filter(Boolean))];
  if (wanted.length === 0) throw badInput('eventTypes', `must name at least one of: ${allowed.join(', ')}`);
  const unknown = wanted.filter((t) => !allowed.includes(t));
  if (unknown.length > 0) {
    throw badInput(
      'eventTypes',
      `unknown event type${unknown.length > 1 ? 's' : ''} ${unknown.join(', ')}; allowed: ${allowed.join(', ')}`,
      { unknown, allowed },
    );
  }
  return allowed.filter((t) => wanted.includes(t));
}

/**
 * The data-dependent half of the gate: each event type needs the read scope that protects its
 * data elsewhere. Same error shape as the schema's scope check.
 */
function requireReadScopes(principal: Principal, eventTypes: readonly string[]): void {
  const missing = [...new Set(eventTypes.map((t) => WEBHOOK_READ_SCOPE[t]!))].filter(
    (scope) => !hasScope(principal.scopes, scope),
  );
  if (missing.length === 0) return;
  const types = eventTypes.filter((t) => missing.includes(WEBHOOK_READ_SCOPE[t]!));
  throw missingScopes(missing, ` (event types ${types.join(', ')} carry data they protect)`);
}

function requireUrl(raw: unknown): string {
  if (typeof raw !== 'string' || !raw.trim()) throw badInput('url', 'is required');
  if (raw.length > 2048) throw badInput('url', 'must be at most 2048 characters');
  return raw;
}

export async function registerEndpoint(
  { em, ...env }: WebhookDeps,
  principal: Principal,
  domain: WebhookDomain,
  input: RegisterEndpointInput,
): Promise<EndpointWithSecret> {
  const url = requireUrl(input.url);
  const eventTypes = parseEventTypes(domain, input.eventTypes ?? []);
  requireReadScopes(principal, eventTypes);
  const description = optionalText(input.description, 'description', 200);
  const target = await vetWebhookUrl(url, env.config.webhookAllowPrivate);

  endpointsChanged();
  const registered = await em.transactional(async (tx) => {
    const count = await tx.count(WebhookEndpoint, { accountId: principal.accountId, domain });
    if (count >= MAX_ENDPOINTS_PER_DOMAIN) {
      throw conflict(
        `Account already has ${count} webhook endpoints for ${domain} (the limit is ${MAX_ENDPOINTS_PER_DOMAIN}); delete one first`,
        { limit: MAX_ENDPOINTS_PER_DOMAIN },
      );
    }
    const secret = newSigningSecret(env.secrets);
    const endpoint = tx.create(WebhookEndpoint, {
      accountId: principal.accountId,
      domain,
      url: target.url.toString(),
      description,
      eventTypes,
      secret: secret.sealed,
      secretPrefix: secret.prefix,
      status: WebhookEndpointStatus.ACTIVE,
      consecutiveFailures: 0,
      createdAt: env.clock.now(),
    });
    tx.persist(endpoint);
    return shownOnce(endpoint, secret.plaintext);
  });
  endpointsChanged();
  return registered;
}

/**
 * An endpoint of the caller's account in the domain of the door used (the two doors have different
 * gates); anything else is as unknown as a missing one.
 */
export async function getEndpoint(
  em: EntityManager,
  principal: Principal,
  domain: WebhookDomain,
  id: string,
): Promise<WebhookEndpoint> {
  const endpoint = isUuid(id)
    ? await em.findOne(WebhookEndpoint, { id, accountId: principal.accountId, domain })
    : null;
  if (!endpoint) throw notFound(DOMAIN_NOUN[domain], id);
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

function activate(endpoint: WebhookEndpoint): void {
  endpoint.status = WebhookEndpointStatus.ACTIVE;
  endpoint.disabledReason = null;
  endpoint.disabledAt = null;
  endpoint.consecutiveFailures = 0;
}

/** Changes url, event types, description or the active flag; everything is checked before anything is written. */
export async function updateEndpoint(
  { em, ...env }: WebhookDeps,
  principal: Principal,
  domain: WebhookDomain,
  id: string,
  patch: EndpointPatch,
): Promise<WebhookEndpoint> {
  const given = (['url', 'eventTypes', 'description', 'active'] as const).filter(
    (k) => patch[k] !== undefined && patch[k] !== null,
  );
  if (given.length === 0)
    throw badInput('patch', 'name at least one of url, eventTypes, description, active');
  const endpoint = await getEndpoint(em, principal, domain, id);
  const eventTypes = patch.eventTypes ? parseEventTypes(domain, patch.eventTypes) : undefined;
  if (eventTypes) requireReadScopes(principal, eventTypes);
  const description =
    // '' clears; null keeps, like absent: compiled operations turn an unset variable inside an input object into null.
    patch.description !== undefined && patch.description !== null
      ? optionalText(patch.description, 'description', 200)
      : undefined;
  const target = patch.url
    ? await vetWebhookUrl(requireUrl(patch.url), env.config.webhookAllowPrivate)
    : undefined;

  if (target) endpoint.url = target.url.toString();
  if (eventTypes) endpoint.eventTypes = eventTypes;
  if (description !== undefined) endpoint.description = description;
  if (patch.active === true) activate(endpoint);
  if (patch.active === false && endpoint.status === WebhookEndpointStatus.ACTIVE) {
    endpoint.status = WebhookEndpointStatus.DISABLED;
    endpoint.disabledReason = 'Paused by the account (active: false)';
    endpoint.disabledAt = env.clock.now();
  }
  await flushEndpoint(em);
  return endpoint;
}

/**
 * A new signing secret, shown once. The old one keeps signing — as a second `v1` in both
 * signature headers — until WEBHOOK_SECRET_OVERLAP has passed, so receivers can switch without
 * dropping deliveries. Rotating again within the window drops the oldest secret at once.
 */
export async function rotateSecret(
  { em, ...env }: WebhookDeps,
  principal: Principal,
  domain: WebhookDomain,
  id: string,
): Promise<EndpointWithSecret> {
  const endpoint = await getEndpoint(em, principal, domain, id);
  const fresh = newSigningSecret(env.secrets);
  const previousSecretExpiresAt = new Date(env.clock.now().getTime() + env.config.webhookSecretOverlapMs);
  const changed = await em.nativeUpdate(
    WebhookEndpoint,
    { id: endpoint.id, secret: endpoint.secret },
    {
      secret: fresh.sealed,
      secretPrefix: fresh.prefix,
      previousSecret: sealedForm(env.secrets, endpoint.secret),
      previousSecretExpiresAt,
    },
  );
  if (changed === 0)
    throw conflict(`The secret of ${endpoint.id} was rotated by another request just now; try again`);
  await em.refresh(endpoint);
  return shownOnce(endpoint, fresh.plaintext);
}

export async function deleteEndpoint(
  em: EntityManager,
  principal: Principal,
  domain: WebhookDomain,
  id: string,
): Promise<WebhookEndpoint> {
  const endpoint = await getEndpoint(em, principal, domain, id);
  // Its deliveries and their attempt log go with it (ON DELETE CASCADE): it is never called again.
  await em.nativeDelete(WebhookEndpoint, { id: endpoint.id });
  return endpoint;
}

/** Re-enables an endpoint that was disabled (by the deliverer or paused); its pending deliveries resume. */
export async function enableEndpoint(
  em: EntityManager,
  principal: Principal,
  domain: WebhookDomain,
  id: string,
): Promise<WebhookEndpoint> {
  const endpoint = await getEndpoint(em, principal, domain, id);
  activate(endpoint);
  await flushEndpoint(em);
  return endpoint;
}

/** Writes a changed endpoint, telling this process's outbox before and after (`endpointsChanged`). */
async function flushEndpoint(em: EntityManager): Promise<void> {
  endpointsChanged();
  try {
    await em.flush();
  } finally {
    endpointsChanged();
  }
}

export async function listDeliveries(
  em: EntityManager,
  principal: Principal,
  domain: WebhookDomain,
  endpointId: string,
  page: Page,
  status?: WebhookDeliveryStatus | null,
): Promise<{ items: WebhookDelivery[]; total: number }> {
  const endpoint = await getEndpoint(em, principal, domain, endpointId);
  const [items, total] = await em.findAndCount(
    WebhookDelivery,
    { endpoint: endpoint.id, ...(status ? { status } : {}) },
    { orderBy: { createdAt: 'desc', id: 'asc' }, limit: page.limit, offset: page.offset },
  );
  return { items, total };
}

/** A delivery to one of the caller's endpoints of this domain (and of `endpointId`, when given). */
export async function getDelivery(
  em: EntityManager,
  principal: Principal,
  domain: WebhookDomain,
  deliveryId: string,
  endpointId?: string | null,
): Promise<WebhookDelivery> {
  const delivery =
    isUuid(deliveryId) && (!endpointId || isUuid(endpointId))
      ? await em.findOne(
          WebhookDelivery,
          {
            id: deliveryId,
            endpoint: { accountId: principal.accountId, domain, ...(endpointId ? { id: endpointId } : {}) },
          },
          { populate: ['endpoint'] },
        )
      : null;
  if (!delivery) throw notFound('Webhook delivery', deliveryId);
  return delivery;
}

/** Every attempt of each delivery, oldest first (for the per-request DataLoader). */
export async function attemptLogs(
  em: EntityManager,
  deliveryIds: readonly string[],
): Promise<WebhookDeliveryAttempt[][]> {
  const rows = await em.find(
    WebhookDeliveryAttempt,
    { delivery: { $in: [...deliveryIds] } },
    { orderBy: { attempt: 'asc' } },
  );
  return deliveryIds.map((id) => rows.filter((r) => r.delivery.id === id));
}

/**
 * Queues a delivery again, now, with a fresh attempt budget. The attempt count and the attempt
 * log continue (history is never wiped); the payload keeps its event id, so receivers that
 * de-duplicate by id see a repeat, not a new event.
 */
export async function redeliver(
  { em, ...env }: Pick<ServiceDeps, 'em' | 'clock'>,
  principal: Principal,
  domain: WebhookDomain,
  deliveryId: string,
  endpointId?: string | null,
): Promise<WebhookDelivery> {
  const delivery = await getDelivery(em, principal, domain, deliveryId, endpointId);
  if (delivery.endpoint.status === WebhookEndpointStatus.DISABLED) {
    throw conflict(
      `Webhook endpoint ${delivery.endpoint.id} is disabled (${delivery.endpoint.disabledReason ?? 'no reason recorded'}); enable it first`,
      { endpointId: delivery.endpoint.id },
    );
  }
  const now = env.clock.now();
  // Not while an attempt holds a live lease: its result would overwrite the new state.
  const updated = await em.nativeUpdate(
    WebhookDelivery,
    { id: delivery.id, $or: [{ leaseUntil: null }, { leaseUntil: { $lt: now } }] },
    {
      status: WebhookDeliveryStatus.PENDING,
      attemptsAtRedelivery: raw('attempts'),
      nextAttemptAt: now,
      leaseToken: null,
      leaseUntil: null,
    },
  );
  if (updated === 0)
    throw conflict(
      `An attempt of delivery ${delivery.id} is in flight; redeliver it once that attempt has ended`,
    );
  await em.refresh(delivery);
  return delivery;
}

/** The type of the event `sendTestWebhookEvent` sends: never staged by a change, never a live event. */
export const WEBHOOK_TEST_EVENT = 'webhook.test';

/**
 * A test event to one endpoint: an event record of type `webhook.test`, already dispatched, and
 * one PENDING delivery to that endpoint only, in one transaction. The outbox worker then sends it
 * like any delivery (same body shape, both signature headers, retries, attempt log), so a receiver
 * checks its signature verification and the console shows the attempts. Returns the delivery and
 * the event to publish after commit (it only nudges the worker: no live feed carries this type).
 */
export async function sendTestEvent(
  { em, clock }: Pick<ServiceDeps, 'em' | 'clock'>,
  principal: Principal,
  domain: WebhookDomain,
  endpointId: string,
): Promise<{ delivery: WebhookDelivery; event: EventRecord }> {
  return em.transactional(async (tx) => {
    const endpoint = await getEndpoint(tx, principal, domain, endpointId);
    if (endpoint.status === WebhookEndpointStatus.DISABLED) {
      throw conflict(
        `Webhook endpoint ${endpoint.id} is disabled (${endpoint.disabledReason ?? 'no reason recorded'}); enable it first`,
        { endpointId: endpoint.id },
      );
    }
    const now = clock.now();
    const event = tx.create(EventRecord, {
      type: WEBHOOK_TEST_EVENT,
      occurredAt: now,
      accountId: principal.accountId,
      payload: {
        test: true,
        endpoint_id: endpoint.id,
        domain,
        message: 'A test event: no data changed. Answer with a 2xx status to mark it delivered.',
      },
      dispatchedAt: now,
      relay: false,
    });
    // The delivery references the event row (no relation MikroORM could order the inserts by).
    await tx.persist(event).flush();
    const delivery = tx.create(WebhookDelivery, {
      endpoint,
      eventId: event.id,
      eventType: WEBHOOK_TEST_EVENT,
      status: WebhookDeliveryStatus.PENDING,
      attempts: 0,
      attemptsAtRedelivery: 0,
      nextAttemptAt: now,
      createdAt: now,
    });
    tx.persist(delivery);
    return { delivery, event };
  });
}
