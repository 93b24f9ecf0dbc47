import { registerEnumType } from 'type-graphql';

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
export const CREDENTIAL_REVOKED = 'credential.revoked';

export function webhookDomainOf(eventType: string): WebhookDomain | undefined {
  if ((LIQUIDITY_WEBHOOK_TYPES as readonly string[]).includes(eventType)) return WebhookDomain.LIQUIDITY;
  if ((PORT_OPS_WEBHOOK_TYPES as readonly string[]).includes(eventType)) return WebhookDomain.PORT_OPS;
  return undefined;
}
