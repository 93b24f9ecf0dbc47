import {
  Arg,
  Args,
  Ctx,
  Field,
  FieldResolver,
  ID,
  InputType,
  Mutation,
  ObjectType,
  Query,
  Resolver,
  Root,
} from 'type-graphql';
import { Connection } from '../gateway/schema/connection.js';
import { requirePrincipal, type GatewayContext } from '../gateway/schema/context.js';
import { RequiresPlan, RequiresScopes } from '../gateway/schema/directives.js';
import { Plan } from '../kernel/plans.js';
import {
  OffsetPageArgs,
  pageEchoResolver,
  pageOf,
  pagedConnection,
  type PagedConnection,
} from '../gateway/schema/paging.js';
import { WEBHOOK_TYPES, WebhookDomain } from './catalog.js';
import {
  WebhookDelivery,
  WebhookDeliveryAttempt,
  WebhookDeliveryStatus,
  WebhookEndpoint,
} from './entities.js';
import {
  attemptLogs,
  deleteEndpoint,
  enableEndpoint,
  getDelivery,
  getEndpoint,
  listDeliveries,
  listEndpoints,
  redeliver,
  registerEndpoint,
  rotateSecret,
  sendTestEvent,
  updateEndpoint,
  WEBHOOK_TEST_EVENT,
} from './webhooks.js';

const WebhookEndpointConnection = Connection(WebhookEndpoint, 'WebhookEndpoint');
const WebhookDeliveryConnection = Connection(WebhookDelivery, 'WebhookDelivery');

@InputType({ description: 'A webhook endpoint to register.' })
export class WebhookEndpointInput {
  @Field(() => String, { description: 'http(s) URL; must resolve to a public address.' })
  url!: string;

  @Field(() => [String], {
    description:
      "Event types to receive (see src/events/README.md for each domain's catalog). Each needs the read scope that protects its data.",
  })
  eventTypes!: string[];

  @Field(() => String, { nullable: true })
  description?: string | null;
}

@InputType({ description: 'Changes to a webhook endpoint; omitted fields stay as they are.' })
export class WebhookEndpointPatch {
  @Field(() => String, { nullable: true })
  url?: string | null;

  @Field(() => [String], { nullable: true })
  eventTypes?: string[] | null;

  @Field(() => String, {
    nullable: true,
    description: 'An empty string clears it; null or omitted keeps it.',
  })
  description?: string | null;

  @Field(() => Boolean, {
    nullable: true,
    description: 'false pauses the endpoint (DISABLED; queued deliveries wait); true enables it.',
  })
  active?: boolean | null;
}

@ObjectType({
  description: 'An endpoint and its new signing secret — the only time the secret is shown.',
})
export class WebhookRegistration {
  @Field(() => WebhookEndpoint)
  endpoint!: WebhookEndpoint;

  @Field(() => String, {
    description:
      'HMAC-SHA256 signing secret of the Tidegate-Signature header. Store it now: it is never shown again.',
  })
  secret!: string;

  @Field(() => String, {
    description:
      'The same secret as Standard Webhooks libraries take it (whsec_ + base64 of the key bytes), for the webhook-signature header. Shown only now, like secret.',
  })
  standardWebhooksSecret!: string;
}

/** The GraphQL field names of one door; the two doors differ in names and gate only. */
interface WebhookDoor {
  domain: WebhookDomain;
  /** What the door is called in descriptions. */
  noun: string;
  /** The plan gate of every field of the door (none for port operations). */
  plan?: Plan;
  names: {
    list: string;
    one: string;
    register: string;
    update: string;
    rotate: string;
    enable: string;
    remove: string;
    deliveries: string;
    delivery: string;
    redeliver: string;
    test: string;
  };
  /** Lead of the register mutation's description; the door's event types are appended. */
  registerDescription: string;
}

const noGate: MethodDecorator = () => undefined;

/** One resolver class per door, so each field carries its door's gate in the schema. */
function webhookDoorResolver(door: WebhookDoor) {
  const { domain, noun, names } = door;
  const gate = door.plan ? RequiresPlan(door.plan) : noGate;

  @Resolver()
  class WebhookDoorResolver {
    @Query(() => WebhookEndpointConnection, { name: names.list, description: `${noun}s of your account.` })
    @gate
    @RequiresScopes('webhooks:manage')
    async list(
      @Args(() => OffsetPageArgs) args: OffsetPageArgs,
      @Ctx() ctx: GatewayContext,
    ): Promise<PagedConnection<WebhookEndpoint>> {
      const page = pageOf(args);
      return pagedConnection(await listEndpoints(ctx.em, requirePrincipal(ctx), domain, page), page);
    }

    @Query(() => WebhookEndpoint, {
      name: names.one,
      description: `One ${noun.toLowerCase()} of your account.`,
    })
    @gate
    @RequiresScopes('webhooks:manage')
    one(@Arg('id', () => ID) id: string, @Ctx() ctx: GatewayContext): Promise<WebhookEndpoint> {
      return getEndpoint(ctx.em, requirePrincipal(ctx), domain, id);
    }

    @Mutation(() => WebhookRegistration, {
      name: names.register,
      description: `${door.registerDescription}: ${WEBHOOK_TYPES[door.domain].join(', ')}.`,
    })
    @gate
    @RequiresScopes('webhooks:manage')
    register(
      @Arg('input', () => WebhookEndpointInput) input: WebhookEndpointInput,
      @Ctx() ctx: GatewayContext,
    ): Promise<WebhookRegistration> {
      return registerEndpoint({ em: ctx.em, ...ctx.services }, requirePrincipal(ctx), domain, input);
    }

    @Mutation(() => WebhookEndpoint, {
      name: names.update,
      description: 'Changes url, event types, description or active; checked like a registration.',
    })
    @gate
    @RequiresScopes('webhooks:manage')
    update(
      @Arg('id', () => ID) id: string,
      @Arg('patch', () => WebhookEndpointPatch) patch: WebhookEndpointPatch,
      @Ctx() ctx: GatewayContext,
    ): Promise<WebhookEndpoint> {
      return updateEndpoint({ em: ctx.em, ...ctx.services }, requirePrincipal(ctx), domain, id, patch);
    }

    @Mutation(() => WebhookRegistration, {
      name: names.rotate,
      description:
        'Issues a new signing secret (shown once). Deliveries are signed with both secrets until previousSecretExpiresAt.',
    })
    @gate
    @RequiresScopes('webhooks:manage')
    rotate(@Arg('id', () => ID) id: string, @Ctx() ctx: GatewayContext): Promise<WebhookRegistration> {
      return rotateSecret({ em: ctx.em, ...ctx.services }, requirePrincipal(ctx), domain, id);
    }

    @Mutation(() => WebhookEndpoint, {
      name: names.enable,
      description: 'Re-enables an endpoint that was disabled after repeated failures or paused.',
    })
    @gate
    @RequiresScopes('webhooks:manage')
    enable(@Arg('id', () => ID) id: string, @Ctx() ctx: GatewayContext): Promise<WebhookEndpoint> {
      return enableEndpoint(ctx.em, requirePrincipal(ctx), domain, id);
    }

    @Mutation(() => WebhookEndpoint, {
      name: names.remove,
      description: 'Deletes an endpoint, its pending deliveries and its delivery log.',
    })
    @gate
    @RequiresScopes('webhooks:manage')
    remove(@Arg('id', () => ID) id: string, @Ctx() ctx: GatewayContext): Promise<WebhookEndpoint> {
      return deleteEndpoint(ctx.em, requirePrincipal(ctx), domain, id);
    }

    @Query(() => WebhookDeliveryConnection, {
      name: names.deliveries,
      description: `The delivery log of one ${noun.toLowerCase()}, newest first.`,
    })
    @gate
    @RequiresScopes('webhooks:manage')
    async deliveries(
      @Arg('endpointId', () => ID) endpointId: string,
      @Arg('status', () => WebhookDeliveryStatus, { nullable: true })
      status: WebhookDeliveryStatus | null | undefined,
      @Args(() => OffsetPageArgs) args: OffsetPageArgs,
      @Ctx() ctx: GatewayContext,
    ): Promise<PagedConnection<WebhookDelivery>> {
      const page = pageOf(args);
      const found = await listDeliveries(ctx.em, requirePrincipal(ctx), domain, endpointId, page, status);
      return pagedConnection(found, page);
    }

    @Query(() => WebhookDelivery, {
      name: names.delivery,
      description: 'One delivery with its attempt log.',
    })
    @gate
    @RequiresScopes('webhooks:manage')
    delivery(
      @Arg('id', () => ID) id: string,
      @Arg('endpointId', () => ID, { nullable: true, description: 'When given, the delivery must be to it.' })
      endpointId: string | null | undefined,
      @Ctx() ctx: GatewayContext,
    ): Promise<WebhookDelivery> {
      return getDelivery(ctx.em, requirePrincipal(ctx), domain, id, endpointId);
    }

    @Mutation(() => WebhookDelivery, {
      name: names.redeliver,
      description:
        'Queues a delivery again now, with a fresh attempt budget and the same event id; its attempt log continues.',
    })
    @gate
    @RequiresScopes('webhooks:manage')
    redeliver(
      @Arg('deliveryId', () => ID) deliveryId: string,
      @Arg('endpointId', () => ID, { nullable: true, description: 'When given, the delivery must be to it.' })
      endpointId: string | null | undefined,
      @Ctx() ctx: GatewayContext,
    ): Promise<WebhookDelivery> {
      return redeliver(
        { em: ctx.em, ...ctx.services },
        requirePrincipal(ctx),
        domain,
        deliveryId,
        endpointId,
      );
    }

    @Mutation(() => WebhookDelivery, {
      name: names.test,
      description: `Sends a \`${WEBHOOK_TEST_EVENT}\` event to this endpoint only, signed and retried like any delivery; returns its delivery (PENDING). CONFLICT when the endpoint is disabled.`,
    })
    @gate
    @RequiresScopes('webhooks:manage')
    async sendTest(@Arg('id', () => ID) id: string, @Ctx() ctx: GatewayContext): Promise<WebhookDelivery> {
      const { delivery, event } = await sendTestEvent(
        { em: ctx.em, ...ctx.services },
        requirePrincipal(ctx),
        domain,
        id,
      );
      // Committed: wake the outbox worker now rather than at its next poll.
      await ctx.services.events.publish([
        {
          id: event.id,
          type: event.type,
          occurredAt: event.occurredAt,
          accountId: event.accountId ?? null,
          payload: event.payload,
        },
      ]);
      return delivery;
    }
  }
  return WebhookDoorResolver;
}

/** Liquidity endpoints (`/v1/webhooks`): Professional and higher, like the liquidity document says. */
export const LiquidityWebhookResolver = webhookDoorResolver({
  domain: WebhookDomain.LIQUIDITY,
  noun: 'Liquidity webhook endpoint',
  plan: Plan.PROFESSIONAL,
  names: {
    list: 'webhooks',
    one: 'webhook',
    register: 'registerWebhook',
    update: 'updateWebhook',
    rotate: 'rotateWebhookSecret',
    enable: 'enableWebhookEndpoint',
    remove: 'deleteWebhookEndpoint',
    deliveries: 'webhookDeliveries',
    delivery: 'webhookDelivery',
    redeliver: 'redeliverWebhook',
    test: 'sendTestWebhookEvent',
  },
  registerDescription: 'Registers an endpoint for liquidity events',
});

/** Port-operations subscriptions (`/v1/webhook-subscriptions`): no plan gate. */
export const PortOpsWebhookResolver = webhookDoorResolver({
  domain: WebhookDomain.PORT_OPS,
  noun: 'Port-operations webhook subscription',
  names: {
    list: 'webhookSubscriptions',
    one: 'webhookSubscription',
    register: 'createWebhookSubscription',
    update: 'updateWebhookSubscription',
    rotate: 'rotateWebhookSubscriptionSecret',
    enable: 'enableWebhookSubscription',
    remove: 'deleteWebhookSubscription',
    deliveries: 'webhookSubscriptionDeliveries',
    delivery: 'webhookSubscriptionDelivery',
    redeliver: 'redeliverWebhookSubscription',
    test: 'sendTestWebhookSubscriptionEvent',
  },
  registerDescription: 'Subscribes an endpoint to port-operations events of your account',
});

@Resolver(() => WebhookDelivery)
export class WebhookDeliveryResolver {
  @FieldResolver(() => [WebhookDeliveryAttempt], {
    description: 'Every attempt of this delivery, oldest first; redeliveries add to it.',
  })
  attemptLog(
    @Root() delivery: WebhookDelivery,
    @Ctx() ctx: GatewayContext,
  ): Promise<WebhookDeliveryAttempt[]> {
    return ctx.loaders
      .get<string, WebhookDeliveryAttempt[]>('webhookAttemptLog', attemptLogs)
      .load(delivery.id);
  }
}

export const WebhookEndpointPageResolver = pageEchoResolver(WebhookEndpointConnection);
export const WebhookDeliveryPageResolver = pageEchoResolver(WebhookDeliveryConnection);
