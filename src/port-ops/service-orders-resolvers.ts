import {
  Arg,
  Args,
  Ctx,
  Field,
  FieldResolver,
  ID,
  InputType,
  Mutation,
  Query,
  Resolver,
  Root,
} from 'type-graphql';
import { JSONObjectResolver as JSONObject } from 'graphql-scalars';
import { Connection } from '../gateway/schema/connection.js';
import { requirePrincipal, serviceDeps, type GatewayContext } from '../gateway/schema/context.js';
import { RequiresScopes } from '../gateway/schema/directives.js';
import { OffsetPageArgs, pageEchoResolver, pageOf, pagedConnection } from '../gateway/schema/paging.js';
import { findOwnedOrNull } from './common.js';
import {
  PortCall,
  ServiceOrder,
  ServiceOrderStatus,
  ServiceType,
  StatusChange,
  StatusSubject,
  Vendor,
} from './entities.js';
import { loadPortCall, loadStatusHistory, loadVendor } from './loaders.js';
import { createServiceOrder, listServiceOrders, transitionServiceOrder } from './service-orders.js';

export const ServiceOrderConnection = Connection(ServiceOrder, 'ServiceOrder');

@InputType({ description: "The seed's service-order request shape." })
class ServiceOrderInput {
  @Field(() => ID) portCallId!: string;
  @Field(() => ServiceType) serviceType!: ServiceType;
  @Field(() => ID) vendorId!: string;
  @Field(() => JSONObject, {
    description: 'Validated per service type, e.g. BUNKERING {quantity, unit, fuelType}.',
  })
  details!: Record<string, unknown>;
  @Field(() => Date, {
    nullable: true,
    description: "When the service is wanted; defaults to the call's ETB (or ETA).",
  })
  requestedFor?: Date | null;
}

@Resolver(() => ServiceOrder)
export class ServiceOrderResolver {
  @Query(() => ServiceOrder, { nullable: true })
  @RequiresScopes('read:service_orders')
  async serviceOrder(
    @Arg('id', () => ID) id: string,
    @Ctx() ctx: GatewayContext,
  ): Promise<ServiceOrder | null> {
    return findOwnedOrNull(ctx.em, ServiceOrder, requirePrincipal(ctx), id);
  }

  @Query(() => ServiceOrderConnection, { description: 'Service orders, newest first.' })
  @RequiresScopes('read:service_orders')
  async serviceOrders(
    @Args(() => OffsetPageArgs) args: OffsetPageArgs,
    @Arg('portCallId', () => ID, { nullable: true }) portCallId: string | null,
    @Arg('vendorId', () => ID, { nullable: true }) vendorId: string | null,
    @Arg('status', () => ServiceOrderStatus, { nullable: true }) status: ServiceOrderStatus | null,
    @Arg('serviceType', () => ServiceType, { nullable: true }) serviceType: ServiceType | null,
    @Ctx() ctx: GatewayContext,
  ) {
    const page = pageOf(args);
    return pagedConnection(
      await listServiceOrders(
        ctx.em,
        requirePrincipal(ctx),
        { portCallId, vendorId, status, serviceType },
        page,
      ),
      page,
    );
  }

  @Mutation(() => ServiceOrder, {
    description: 'Orders a service for a port call (status REQUESTED). Emits service_order.created.',
  })
  @RequiresScopes('write:service_orders')
  async createServiceOrder(
    @Arg('input', () => ServiceOrderInput) input: ServiceOrderInput,
    @Ctx() ctx: GatewayContext,
  ): Promise<ServiceOrder> {
    return createServiceOrder(serviceDeps(ctx), requirePrincipal(ctx), input);
  }

  @Mutation(() => ServiceOrder, {
    description:
      'REQUESTED → CONFIRMED → IN_PROGRESS → COMPLETED; REJECTED from REQUESTED; CANCELLED from REQUESTED or CONFIRMED. Emits service_order.status_changed.',
  })
  @RequiresScopes('write:service_orders')
  async transitionServiceOrder(
    @Arg('id', () => ID) id: string,
    @Arg('status', () => ServiceOrderStatus) status: ServiceOrderStatus,
    @Ctx() ctx: GatewayContext,
  ): Promise<ServiceOrder> {
    return transitionServiceOrder(serviceDeps(ctx), requirePrincipal(ctx), id, status);
  }

  @FieldResolver(() => Vendor)
  @RequiresScopes('read:vendors')
  vendor(@Root() order: ServiceOrder, @Ctx() ctx: GatewayContext) {
    return loadVendor(ctx, order.vendorId);
  }

  @FieldResolver(() => PortCall)
  @RequiresScopes('read:port_calls')
  portCall(@Root() order: ServiceOrder, @Ctx() ctx: GatewayContext) {
    return loadPortCall(ctx, order.portCallId);
  }

  @FieldResolver(() => [StatusChange])
  @RequiresScopes('read:service_orders')
  statusHistory(@Root() order: ServiceOrder, @Ctx() ctx: GatewayContext) {
    return loadStatusHistory(ctx, StatusSubject.SERVICE_ORDER, order.id);
  }
}

export const serviceOrderResolvers = [ServiceOrderResolver, pageEchoResolver(ServiceOrderConnection)];
