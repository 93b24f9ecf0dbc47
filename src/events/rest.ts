import type { ParamSpec, RestRoute } from '../gateway/rest-routes.js';

/**
 * Webhook REST routes: liquidity endpoints at /v1/webhooks (Professional+), port-operations
 * subscriptions at /v1/webhook-subscriptions; the delivery log, redelivery, enabling and deleting
 * are the same operations under both prefixes. Request bodies use snake_case like the rest of /v1.
 */
const registration = {
  url: { from: 'body', name: 'url', type: 'string', required: true },
  eventTypes: { from: 'body', name: 'event_types', type: 'stringList', required: true },
  description: { from: 'body', name: 'description', type: 'string' },
} satisfies Record<string, ParamSpec>;

const paging = {
  first: { from: 'query', name: 'limit', type: 'int', min: 1, max: 100, default: 20 },
  offset: { from: 'query', name: 'offset', type: 'int', min: 0, default: 0 },
} satisfies Record<string, ParamSpec>;

function endpointRoutes(prefix: string): RestRoute[] {
  return [
    {
      method: 'GET',
      path: `${prefix}/:endpointId/deliveries`,
      operation: 'RestWebhookDeliveries',
      variables: {
        endpointId: { from: 'path', type: 'string' },
        status: { from: 'query', type: 'string' },
        ...paging,
      },
      result: 'webhookDeliveries',
    },
    {
      method: 'POST',
      path: `${prefix}/:id/enable`,
      operation: 'RestEnableWebhookEndpoint',
      variables: { id: { from: 'path', type: 'string' } },
      result: 'enableWebhookEndpoint',
    },
    {
      method: 'DELETE',
      path: `${prefix}/:id`,
      operation: 'RestDeleteWebhookEndpoint',
      variables: { id: { from: 'path', type: 'string' } },
      result: 'deleteWebhookEndpoint',
      status: 204,
    },
  ];
}

export const eventsRestRoutes: RestRoute[] = [
  {
    method: 'POST',
    path: '/v1/webhooks',
    operation: 'RestRegisterWebhook',
    variables: registration,
    result: 'registerWebhook',
    status: 201,
  },
  { method: 'GET', path: '/v1/webhooks', operation: 'RestWebhooks', variables: paging, result: 'webhooks' },
  {
    method: 'POST',
    path: '/v1/webhook-subscriptions',
    operation: 'RestCreateWebhookSubscription',
    variables: registration,
    result: 'createWebhookSubscription',
    status: 201,
  },
  {
    method: 'GET',
    path: '/v1/webhook-subscriptions',
    operation: 'RestWebhookSubscriptions',
    variables: paging,
    result: 'webhookSubscriptions',
  },
  ...endpointRoutes('/v1/webhooks'),
  ...endpointRoutes('/v1/webhook-subscriptions'),
  {
    method: 'POST',
    path: '/v1/webhook-deliveries/:deliveryId/redeliver',
    operation: 'RestRedeliverWebhook',
    variables: { deliveryId: { from: 'path', type: 'string' } },
    result: 'redeliverWebhook',
    status: 202,
  },
];
