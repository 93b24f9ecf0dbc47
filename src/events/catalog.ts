import { registerEnumType } from 'type-graphql';
import type { Scope } from '../kernel/scopes.js';

/** Which side of the gateway a webhook endpoint belongs to; decides its event types and its gate. */
export enum WebhookDomain {
  LIQUIDITY = 'LIQUIDITY',
  PORT_OPS = 'PORT_OPS',
}

registerEnumType(WebhookDomain, {
  name: 'WebhookDomain',
  description: 'LIQUIDITY (Professional+, market-wide events) or PORT_OPS (tenant events).',
});

/** The six liquidity event types of the liquidity document; market-wide (accountId null). */
export const LIQUIDITY_WEBHOOK_TYPES = [
  'score_change',
  'tier_change',
  'aum_change',
  'compliance_alert',
  'data_stale',
  'circuit_breaker',
] as const;

/** Port-operations event types, each delivered only to endpoints of the account that owns the data. */
export const PORT_OPS_WEBHOOK_TYPES = [
  'port_call.created',
  'port_call.status_changed',
  'service_order.created',
  'service_order.status_changed',
  'invoice.issued',
  'document.uploaded',
] as const;

export const WEBHOOK_TYPES: Record<WebhookDomain, readonly string[]> = {
  [WebhookDomain.LIQUIDITY]: LIQUIDITY_WEBHOOK_TYPES,
  [WebhookDomain.PORT_OPS]: PORT_OPS_WEBHOOK_TYPES,
};

/** Internal: tells every process to drop a credential and end its subscriptions. Never a webhook. */
export { CREDENTIAL_REVOKED } from '../kernel/events.js';
/** Internal: tells every process to re-resolve an account's credentials (plan change). Never a webhook. */
export { ACCOUNT_CHANGED } from '../kernel/events.js';

export function webhookDomainOf(eventType: string): WebhookDomain | undefined {
  if ((LIQUIDITY_WEBHOOK_TYPES as readonly string[]).includes(eventType)) return WebhookDomain.LIQUIDITY;
  if ((PORT_OPS_WEBHOOK_TYPES as readonly string[]).includes(eventType)) return WebhookDomain.PORT_OPS;
  return undefined;
}

/**
 * The read scope that protects, on every other door, the data each event type carries. Registering
 * or updating an endpoint for a type needs that scope as well as `webhooks:manage`, so a webhook is
 * never a way around a read scope.
 */
export const WEBHOOK_READ_SCOPE: Readonly<Record<string, Scope>> = {
  ...Object.fromEntries(LIQUIDITY_WEBHOOK_TYPES.map((t) => [t, 'read:liquidity' as const])),
  'port_call.created': 'read:port_calls',
  'port_call.status_changed': 'read:port_calls',
  'service_order.created': 'read:service_orders',
  'service_order.status_changed': 'read:service_orders',
  'invoice.issued': 'read:invoices',
  'document.uploaded': 'read:documents',
};
