import {
  Arg,
  Args,
  ArgsType,
  Ctx,
  Field,
  ID,
  InputType,
  Int,
  Mutation,
  ObjectType,
  Query,
  Resolver,
} from 'type-graphql';
import {
  Connection,
  PageArgs,
  toConnection,
  toPage,
  type ConnectionShape,
  type Page,
} from '../gateway/connection.js';
import { requirePrincipal, type GatewayContext } from '../gateway/context.js';
import { RequiresPlan, RequiresScopes } from '../gateway/directives.js';
import { badInput } from '../kernel/errors.js';
import { Plan } from '../kernel/plans.js';
import { WebhookDomain } from './catalog.js';
import { WebhookDelivery, WebhookDeliveryStatus, WebhookEndpoint } from './entities.js';
import {
  deleteEndpoint,
  enableEndpoint,
  listDeliveries,
  listEndpoints,
  redeliver,
  registerEndpoint,
} from './webhooks.js';

const WebhookEndpointConnection = Connection(WebhookEndpoint, 'WebhookEndpoint');
const WebhookDeliveryConnection = Connection(WebhookDelivery, 'WebhookDelivery');

@InputType({ description: 'A webhook endpoint to register.' })
export class WebhookEndpointInput {
  @Field(() => String, { description: 'http(s) URL; must resolve to a public address.' })
  url!: string;

  @Field(() => [String], { description: 'Event types to receive (see the README catalog for each domain).' })
  eventTypes!: string[];

  @Field(() => String, { nullable: true })
  description?: string | null;
}

@ObjectType({
  description: 'A newly registered endpoint and its signing secret — the only time the secret is shown.',
})
export class WebhookRegistration {
  @Field(() => WebhookEndpoint)
  endpoint!: WebhookEndpoint;

  @Field(() => String, { description: 'HMAC-SHA256 signing secret. Store it now: it is never shown again.' })
  secret!: string;
}

/** Connection paging plus `offset`, which the REST shims' limit/offset maps onto. */
@ArgsType()
export class WebhookPageArgs extends PageArgs {
  @Field(() => Int, {
    nullable: true,
    description: 'Skip this many items (REST offset); ignored when `after` is given.',
  })
  offset?: number | null;
}

function pageOf(args: WebhookPageArgs): Page {
  const page = toPage(args);
  if (args.after || args.offset === null || args.offset === undefined) return page;
  if (!Number.isInteger(args.offset) || args.offset < 0)
    throw badInput('offset', `must be zero or more (got ${args.offset})`);
  return { ...page, offset: args.offset };
}

async function endpoints(
  ctx: GatewayContext,
  domain: WebhookDomain,
  args: WebhookPageArgs,
): Promise<ConnectionShape<WebhookEndpoint>> {
  const page = pageOf(args);
  const { items, total } = await listEndpoints(ctx.em, requirePrincipal(ctx), domain, page);
  return toConnection(items, total, page);
}

function register(
  ctx: GatewayContext,
  domain: WebhookDomain,
  input: WebhookEndpointInput,
): Promise<WebhookRegistration> {
  return registerEndpoint(ctx.em, requirePrincipal(ctx), domain, input, ctx.services);
}

@Resolver()
export class WebhookResolver {
  @Query(() => WebhookEndpointConnection, { description: 'Liquidity webhook endpoints of your account.' })
  @RequiresPlan(Plan.PROFESSIONAL)
  @RequiresScopes('webhooks:manage')
  webhooks(
    @Args(() => WebhookPageArgs) args: WebhookPageArgs,
    @Ctx() ctx: GatewayContext,
  ): Promise<ConnectionShape<WebhookEndpoint>> {
    return endpoints(ctx, WebhookDomain.LIQUIDITY, args);
  }

  @Mutation(() => WebhookRegistration, {
    description:
      'Registers an endpoint for liquidity events: score_change, tier_change, aum_change, compliance_alert, data_stale, circuit_breaker.',
  })
  @RequiresPlan(Plan.PROFESSIONAL)
  @RequiresScopes('webhooks:manage')
  registerWebhook(
    @Arg('input', () => WebhookEndpointInput) input: WebhookEndpointInput,
    @Ctx() ctx: GatewayContext,
  ): Promise<WebhookRegistration> {
    return register(ctx, WebhookDomain.LIQUIDITY, input);
  }

  @Query(() => WebhookEndpointConnection, {
    description: 'Port-operations webhook subscriptions of your account.',
  })
  @RequiresScopes('webhooks:manage')
  webhookSubscriptions(
    @Args(() => WebhookPageArgs) args: WebhookPageArgs,
    @Ctx() ctx: GatewayContext,
  ): Promise<ConnectionShape<WebhookEndpoint>> {
    return endpoints(ctx, WebhookDomain.PORT_OPS, args);
  }

  @Mutation(() => WebhookRegistration, {
    description:
      'Subscribes an endpoint to port-operations events of your account: port_call.created, port_call.status_changed, service_order.created, service_order.status_changed, invoice.issued, document.uploaded.',
  })
  @RequiresScopes('webhooks:manage')
  createWebhookSubscription(
    @Arg('input', () => WebhookEndpointInput) input: WebhookEndpointInput,
    @Ctx() ctx: GatewayContext,
  ): Promise<WebhookRegistration> {
    return register(ctx, WebhookDomain.PORT_OPS, input);
  }

  @Query(() => WebhookDeliveryConnection, {
    description: 'The delivery log of one of your endpoints (either domain), newest first.',
  })
  @RequiresScopes('webhooks:manage')
  async webhookDeliveries(
    @Arg('endpointId', () => ID) endpointId: string,
    @Arg('status', () => WebhookDeliveryStatus, { nullable: true })
    status: WebhookDeliveryStatus | null | undefined,
    @Args(() => WebhookPageArgs) args: WebhookPageArgs,
    @Ctx() ctx: GatewayContext,
  ): Promise<ConnectionShape<WebhookDelivery>> {
    const page = pageOf(args);
    const { items, total } = await listDeliveries(ctx.em, requirePrincipal(ctx), endpointId, page, status);
    return toConnection(items, total, page);
  }

  @Mutation(() => WebhookDelivery, {
    description: 'Queues a delivery again now, with a fresh attempt budget and the same event id.',
  })
  @RequiresScopes('webhooks:manage')
  redeliverWebhook(
    @Arg('deliveryId', () => ID) deliveryId: string,
    @Ctx() ctx: GatewayContext,
  ): Promise<WebhookDelivery> {
    return redeliver(ctx.em, requirePrincipal(ctx), deliveryId, ctx.services);
  }

  @Mutation(() => WebhookEndpoint, {
    description: 'Re-enables an endpoint that was disabled after repeated failures.',
  })
  @RequiresScopes('webhooks:manage')
  enableWebhookEndpoint(
    @Arg('id', () => ID) id: string,
    @Ctx() ctx: GatewayContext,
  ): Promise<WebhookEndpoint> {
    return enableEndpoint(ctx.em, requirePrincipal(ctx), id);
  }

  @Mutation(() => WebhookEndpoint, { description: 'Deletes an endpoint and its pending deliveries.' })
  @RequiresScopes('webhooks:manage')
  deleteWebhookEndpoint(
    @Arg('id', () => ID) id: string,
    @Ctx() ctx: GatewayContext,
  ): Promise<WebhookEndpoint> {
    return deleteEndpoint(ctx.em, requirePrincipal(ctx), id);
  }
}
