import { Arg, Field, ID, ObjectType, Resolver, Root, Subscription } from 'type-graphql';
import { JSONObjectResolver } from 'graphql-scalars';
import { optional, str, subscribe, type Payload, type SubscribeData } from '../events/subscriptions.js';
import type { DomainEvent } from '../kernel/events.js';
import { RequiresScopes } from '../gateway/schema/directives.js';
import { PortCallStatus, ServiceOrderStatus } from './entities.js';

/** Live feeds of port calls and service orders: their tenant's events only (see src/events/subscriptions.ts). */

@ObjectType({
  description: 'A port call was created or changed status (`port_call.created`, `port_call.status_changed`).',
})
export class PortCallUpdate {
  @Field(() => ID)
  eventId!: string;
  @Field(() => String)
  type!: string;
  @Field(() => Date)
  occurredAt!: Date;
  @Field(() => ID)
  portCallId!: string;
  @Field(() => String, { description: 'The status after the change.' })
  status!: string;
  @Field(() => String, { nullable: true, description: 'The status before the change; null on creation.' })
  previousStatus?: string | null;
  @Field(() => JSONObjectResolver, { description: 'The webhook payload of the event.' })
  data!: Payload;
}

@ObjectType({
  description:
    'A service order was created or changed status (`service_order.created`, `service_order.status_changed`).',
})
export class ServiceOrderUpdate {
  @Field(() => ID)
  eventId!: string;
  @Field(() => String)
  type!: string;
  @Field(() => Date)
  occurredAt!: Date;
  @Field(() => ID)
  serviceOrderId!: string;
  @Field(() => ID)
  portCallId!: string;
  @Field(() => String)
  status!: string;
  @Field(() => String, { nullable: true })
  previousStatus?: string | null;
  @Field(() => JSONObjectResolver)
  data!: Payload;
}

/** Creation events carry the whole record; status changes carry from/to. */
function recordOf(event: DomainEvent<Payload>, key: string): Payload | null {
  const record = event.payload[key];
  return record && typeof record === 'object' ? (record as Payload) : null;
}

function portCallOf(event: DomainEvent<Payload>): PortCallUpdate {
  const created = recordOf(event, 'portCall');
  const p = event.payload;
  return {
    eventId: event.id,
    type: event.type,
    occurredAt: event.occurredAt,
    portCallId: created ? str(created, 'id') : str(p, 'portCallId'),
    status: created ? str(created, 'status') : str(p, 'to'),
    previousStatus: created ? null : str(p, 'from') || null,
    data: p,
  };
}

function serviceOrderOf(event: DomainEvent<Payload>): ServiceOrderUpdate {
  const created = recordOf(event, 'serviceOrder');
  const p = event.payload;
  return {
    eventId: event.id,
    type: event.type,
    occurredAt: event.occurredAt,
    serviceOrderId: created ? str(created, 'id') : str(p, 'serviceOrderId'),
    portCallId: str(created ?? p, 'portCallId'),
    status: created ? str(created, 'status') : str(p, 'to'),
    previousStatus: created ? null : str(p, 'from') || null,
    data: p,
  };
}

function sameText(a: string, b: string | null): boolean {
  return b === null || a.toUpperCase() === b.toUpperCase();
}

@Resolver()
export class PortOpsLiveResolver {
  @Subscription(() => PortCallUpdate, {
    description:
      "Port calls of the caller's account created or changing status; optionally one port call and/or one new status.",
    subscribe: ({ args, context }: SubscribeData) => {
      const status = optional(args, 'status');
      const portCallId = optional(args, 'portCallId');
      return subscribe(context, ['port_call.created', 'port_call.status_changed'], (e) => {
        const update = portCallOf(e);
        return sameText(update.status, status) && (portCallId === null || update.portCallId === portCallId);
      });
    },
  })
  @RequiresScopes('read:port_calls')
  portCallUpdated(
    @Root() event: DomainEvent<Payload>,
    @Arg('status', () => PortCallStatus, { nullable: true, description: 'Only changes into this status.' })
    _status?: PortCallStatus | null,
    @Arg('portCallId', () => ID, { nullable: true }) _portCallId?: string | null,
  ): PortCallUpdate {
    return portCallOf(event);
  }

  @Subscription(() => ServiceOrderUpdate, {
    description: "Service orders of the caller's account created or changing status; optionally filtered.",
    subscribe: ({ args, context }: SubscribeData) => {
      const status = optional(args, 'status');
      const serviceOrderId = optional(args, 'serviceOrderId');
      const portCallId = optional(args, 'portCallId');
      return subscribe(context, ['service_order.created', 'service_order.status_changed'], (e) => {
        const update = serviceOrderOf(e);
        return (
          sameText(update.status, status) &&
          (serviceOrderId === null || update.serviceOrderId === serviceOrderId) &&
          (portCallId === null || update.portCallId === portCallId)
        );
      });
    },
  })
  @RequiresScopes('read:service_orders')
  serviceOrderUpdated(
    @Root() event: DomainEvent<Payload>,
    @Arg('status', () => ServiceOrderStatus, { nullable: true }) _status?: ServiceOrderStatus | null,
    @Arg('serviceOrderId', () => ID, { nullable: true }) _serviceOrderId?: string | null,
    @Arg('portCallId', () => ID, { nullable: true }) _portCallId?: string | null,
  ): ServiceOrderUpdate {
    return serviceOrderOf(event);
  }
}
