import type { ParamSpec, RestRoute } from '../gateway/doors/rest-routes.js';

/**
 * Webhook REST routes, one set per door, each running its own door's GraphQL fields (so each
 * carries that door's gate):
 * - liquidity endpoints at /v1/webhooks (Professional+): snake_case bodies, lists as bare arrays,
 *   like the rest of the liquidity API;
 * - port-operations subscriptions at /v1/webhook-subscriptions: camelCase bodies, lists as
 *   {"data","total","limit","offset"}, like the rest of the port-operations API.
 */
const paging = {
  first: { from: 'query', name: 'limit', type: 'int', min: 1, max: 100, default: 20 },
  offset: { from: 'query', name: 'offset', type: 'int', min: 0, default: 0 },
} satisfies Record<string, ParamSpec>;

const id = { id: { from: 'path', type: 'string' } } satisfies Record<string, ParamSpec>;
const deliveryPath = {
  endpointId: { from: 'path', name: 'id', type: 'string' },
  deliveryId: { from: 'path', type: 'string' },
} satisfies Record<string, ParamSpec>;
const wholeBody: ParamSpec = { from: 'body', type: 'json', required: true };

/** The operations behind one door's routes, named `Rest<Door><Action>` in events.graphql. */
function doorRoutes(
  prefix: string,
  door: 'Webhook' | 'WebhookSubscription',
  bodies: { register: Record<string, ParamSpec>; update: Record<string, ParamSpec> },
  lists: { endpoints: string; deliveries: string },
  fields: Record<
    'register' | 'one' | 'update' | 'remove' | 'enable' | 'rotate' | 'delivery' | 'redeliver',
    string
  >,
): RestRoute[] {
  return [
    {
      method: 'POST',
      path: prefix,
      operation: `Rest${door}Register`,
      variables: bodies.register,
      result: fields.register,
      status: 201,
    },
    { method: 'GET', path: prefix, operation: `Rest${door}List`, variables: paging, result: lists.endpoints },
    { method: 'GET', path: `${prefix}/:id`, operation: `Rest${door}`, variables: id, result: fields.one },
    {
      method: 'PATCH',
      path: `${prefix}/:id`,
      operation: `Rest${door}Update`,
      variables: { ...id, ...bodies.update },
      result: fields.update,
    },
    {
      method: 'DELETE',
      path: `${prefix}/:id`,
      operation: `Rest${door}Delete`,
      variables: id,
      result: fields.remove,
      status: 204,
    },
    {
      method: 'POST',
      path: `${prefix}/:id/enable`,
      operation: `Rest${door}Enable`,
      variables: id,
      result: fields.enable,
    },
    {
      method: 'POST',
      path: `${prefix}/:id/rotate-secret`,
      operation: `Rest${door}RotateSecret`,
      variables: id,
      result: fields.rotate,
    },
    {
      method: 'GET',
      path: `${prefix}/:id/deliveries`,
      operation: `Rest${door}Deliveries`,
      variables: {
        endpointId: deliveryPath.endpointId,
        status: { from: 'query', type: 'string' },
        ...paging,
      },
      result: lists.deliveries,
    },
    {
      method: 'GET',
      path: `${prefix}/:id/deliveries/:deliveryId`,
      operation: `Rest${door}Delivery`,
      variables: deliveryPath,
      result: fields.delivery,
    },
    {
      method: 'POST',
      path: `${prefix}/:id/deliveries/:deliveryId/redeliver`,
      operation: `Rest${door}Redeliver`,
      variables: deliveryPath,
      result: fields.redeliver,
      status: 202,
    },
  ];
}

export const eventsRestRoutes: RestRoute[] = [
  ...doorRoutes(
    '/v1/webhooks',
    'Webhook',
    {
      register: {
        url: { from: 'body', name: 'url', type: 'string', required: true },
        eventTypes: { from: 'body', name: 'event_types', type: 'stringList', required: true },
        description: { from: 'body', name: 'description', type: 'string' },
      },
      update: {
        url: { from: 'body', name: 'url', type: 'string' },
        eventTypes: { from: 'body', name: 'event_types', type: 'stringList' },
        // "" clears the description; null or absent keeps it.
        description: { from: 'body', name: 'description', type: 'string' },
        active: { from: 'body', name: 'active', type: 'boolean' },
      },
    },
    { endpoints: 'webhooks.nodes', deliveries: 'webhookDeliveries.nodes' },
    {
      register: 'registerWebhook',
      one: 'webhook',
      update: 'updateWebhook',
      remove: 'deleteWebhookEndpoint',
      enable: 'enableWebhookEndpoint',
      rotate: 'rotateWebhookSecret',
      delivery: 'webhookDelivery',
      redeliver: 'redeliverWebhook',
    },
  ),
  ...doorRoutes(
    '/v1/webhook-subscriptions',
    'WebhookSubscription',
    { register: { input: wholeBody }, update: { patch: wholeBody } },
    { endpoints: 'webhookSubscriptions', deliveries: 'webhookSubscriptionDeliveries' },
    {
      register: 'createWebhookSubscription',
      one: 'webhookSubscription',
      update: 'updateWebhookSubscription',
      remove: 'deleteWebhookSubscription',
      enable: 'enableWebhookSubscription',
      rotate: 'rotateWebhookSubscriptionSecret',
      delivery: 'webhookSubscriptionDelivery',
      redeliver: 'redeliverWebhookSubscription',
    },
  ),
];
