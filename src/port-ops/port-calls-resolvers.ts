import {
  Arg,
  Args,
  Ctx,
  Field,
  FieldResolver,
  ID,
  Info,
  InputType,
  Mutation,
  Query,
  Resolver,
  Root,
} from 'type-graphql';
import type { FieldNode, GraphQLResolveInfo, SelectionSetNode } from 'graphql';
import { Connection } from '../gateway/schema/connection.js';
import { requirePrincipal, serviceDeps, type GatewayContext } from '../gateway/schema/context.js';
import { RequiresScopes } from '../gateway/schema/directives.js';
import { OffsetPageArgs, pageEchoResolver, pageOf, pagedConnection } from '../gateway/schema/paging.js';
import { andThen } from '../kernel/maybe-async.js';
import { findOwnedOrNull } from './common.js';
import {
  Port,
  PortCall,
  PortCallStatus,
  ServiceOrder,
  StatusChange,
  StatusSubject,
  Vessel,
} from './entities.js';
import {
  loadPort,
  loadServiceOrders,
  loadStatusHistory,
  loadVessel,
  propertiesRead,
  readServiceOrders,
  readServiceOrdersFrom,
} from './loaders.js';
import {
  createPortCall,
  deletePortCall,
  listPortCalls,
  transitionPortCall,
  updatePortCall,
} from './port-calls.js';

export const PortCallConnection = Connection(PortCall, 'PortCall');

@InputType()
class PortCallInput {
  @Field(() => String) vesselImo!: string;
  @Field(() => String) portLocode!: string;
  @Field(() => String) voyageReference!: string;
  @Field(() => String, { nullable: true }) agent?: string | null;
  @Field(() => Date) eta!: Date;
  @Field(() => Date, { nullable: true }) etb?: Date | null;
  @Field(() => Date, { nullable: true }) etd?: Date | null;
}

@InputType({ description: 'Only the fields given change; null clears an optional field.' })
class PortCallPatch {
  @Field(() => String, { nullable: true }) voyageReference?: string | null;
  @Field(() => String, { nullable: true }) agent?: string | null;
  @Field(() => Date, { nullable: true }) eta?: Date | null;
  @Field(() => Date, { nullable: true }) etb?: Date | null;
  @Field(() => Date, { nullable: true }) etd?: Date | null;
}

@Resolver(() => PortCall)
export class PortCallResolver {
  @Query(() => PortCall, {
    nullable: true,
    description: "One of your account's port calls; null when unknown.",
  })
  @RequiresScopes('read:port_calls')
  async portCall(@Arg('id', () => ID) id: string, @Ctx() ctx: GatewayContext): Promise<PortCall | null> {
    return findOwnedOrNull(ctx.em, PortCall, requirePrincipal(ctx), id);
  }

  @Query(() => PortCallConnection, {
    description: 'Port calls; SCHEDULED lists soonest ETA first, everything else latest first.',
  })
  @RequiresScopes('read:port_calls')
  async portCalls(
    @Args(() => OffsetPageArgs) args: OffsetPageArgs,
    @Arg('status', () => PortCallStatus, { nullable: true }) status: PortCallStatus | null,
    @Arg('portLocode', () => String, { nullable: true }) portLocode: string | null,
    @Arg('vesselImo', () => String, { nullable: true }) vesselImo: string | null,
    @Arg('etaFrom', () => Date, { nullable: true }) etaFrom: Date | null,
    @Arg('etaTo', () => Date, { nullable: true }) etaTo: Date | null,
    @Ctx() ctx: GatewayContext,
    @Info() info: GraphQLResolveInfo,
  ) {
    const page = pageOf(args);
    const principal = requirePrincipal(ctx);
    // The account's calls, orders and vendors in memory when the read model holds them
    // (account-calls.ts); otherwise the page is read by statement.
    const model = await ctx.services.accountCalls.model(ctx.reads, principal);
    // A LOCODE or IMO filter is looked up as an entity (the request's entity manager); the page
    // itself is a prepared read, which needs no fork of its own. Its rows have only the columns
    // the operation's fields on PortCall read (and the id, which reads the calls' orders).
    const calls = await listPortCalls(
      portLocode || vesselImo ? ctx.em : ctx.reads,
      principal,
      { status, portLocode, vesselImo, etaFrom, etaTo },
      page,
      model ? undefined : propertiesRead(info, ctx.reads, PortCall, 'PortCall', ['id']),
      model,
    );
    // What a kept answer of this list hangs on (src/port-ops/answers.ts, RECORDED), and the calls it
    // answers: all of them, or those a change touched when a kept answer is executed again in part.
    const notes = ctx.recorded;
    let answered = calls.items;
    if (notes) {
      notes.list(
        info.path.key as string,
        calls.items.map((c) => c.id),
        calls.total,
      );
      if (notes.only) answered = calls.items.filter((c) => notes.answers(c.id));
    }
    // The calls' orders (and their vendors), when the query reads them: from the model, or in one
    // statement now.
    const read = ordersReadBy(info);
    if (read.orders && answered.length > 0) {
      if (model) {
        const reading = ctx.services.accountCalls.readOrders(ctx.reads, model, answered);
        if (reading) await reading;
        readServiceOrdersFrom(ctx, answered, model);
      } else
        await readServiceOrders(
          ctx,
          answered.map((c) => c.id),
          read.vendors,
          info,
        );
    }
    return pagedConnection(calls, page, notes?.only && ((c) => notes.answers(c.id)));
  }

  @Mutation(() => PortCall, {
    description: 'Schedules a port call (status SCHEDULED). Emits port_call.created.',
  })
  @RequiresScopes('write:port_calls')
  async createPortCall(
    @Arg('input', () => PortCallInput) input: PortCallInput,
    @Ctx() ctx: GatewayContext,
  ): Promise<PortCall> {
    return createPortCall(serviceDeps(ctx), requirePrincipal(ctx), input);
  }

  @Mutation(() => PortCall, {
    description:
      'Changes estimates, agent or voyage reference of a call that has not departed or been cancelled.',
  })
  @RequiresScopes('write:port_calls')
  async updatePortCall(
    @Arg('id', () => ID) id: string,
    @Arg('patch', () => PortCallPatch) patch: PortCallPatch,
    @Ctx() ctx: GatewayContext,
  ): Promise<PortCall> {
    return updatePortCall(serviceDeps(ctx), requirePrincipal(ctx), id, patch);
  }

  @Mutation(() => PortCall, {
    description:
      'Moves a call along SCHEDULED → ARRIVED → BERTHED → DEPARTED (CANCELLED from SCHEDULED or ARRIVED), stamping ATA/ATB/ATD with `at` (default now). Emits port_call.status_changed.',
  })
  @RequiresScopes('write:port_calls')
  async transitionPortCall(
    @Arg('id', () => ID) id: string,
    @Arg('status', () => PortCallStatus) status: PortCallStatus,
    @Arg('at', () => Date, { nullable: true }) at: Date | null,
    @Ctx() ctx: GatewayContext,
  ): Promise<PortCall> {
    return transitionPortCall(serviceDeps(ctx), requirePrincipal(ctx), id, status, at);
  }

  @Mutation(() => ID, {
    description:
      'Deletes a call created by mistake (one without service orders or documents); returns its id.',
  })
  @RequiresScopes('delete:port_calls')
  async deletePortCall(@Arg('id', () => ID) id: string, @Ctx() ctx: GatewayContext): Promise<string> {
    return deletePortCall(serviceDeps(ctx), requirePrincipal(ctx), id);
  }

  @FieldResolver(() => Vessel)
  @RequiresScopes('read:vessels')
  vessel(@Root() call: PortCall, @Ctx() ctx: GatewayContext) {
    return loadVessel(ctx, call.vesselId);
  }

  @FieldResolver(() => Port)
  @RequiresScopes('read:port_calls', 'read:vessels')
  port(@Root() call: PortCall, @Ctx() ctx: GatewayContext) {
    return loadPort(ctx, call.portId);
  }

  @FieldResolver(() => String, {
    description: "The vessel's IMO number (part of the call itself, so read:port_calls suffices).",
  })
  vesselImo(@Root() call: PortCall, @Ctx() ctx: GatewayContext) {
    return andThen(loadVessel(ctx, call.vesselId), (vessel) => vessel.imo);
  }

  @FieldResolver(() => String, { description: "The port's UN/LOCODE." })
  portLocode(@Root() call: PortCall, @Ctx() ctx: GatewayContext) {
    return andThen(loadPort(ctx, call.portId), (port) => port.locode);
  }

  @FieldResolver(() => [ServiceOrder], { description: 'Every service order of the call, oldest first.' })
  @RequiresScopes('read:service_orders')
  serviceOrders(@Root() call: PortCall, @Ctx() ctx: GatewayContext) {
    return loadServiceOrders(ctx, call.id);
  }

  @FieldResolver(() => [StatusChange], { description: 'Every status transition, oldest first.' })
  @RequiresScopes('read:port_calls')
  statusHistory(@Root() call: PortCall, @Ctx() ctx: GatewayContext) {
    return loadStatusHistory(ctx, StatusSubject.PORT_CALL, call.id);
  }
}

/** What a list of calls reads of its calls' orders, worked out once per field of a document. */
const ordersRead = new WeakMap<FieldNode, { orders: boolean; vendors: boolean }>();
function ordersReadBy(info: GraphQLResolveInfo): { orders: boolean; vendors: boolean } {
  const node = info.fieldNodes[0]!;
  let read = ordersRead.get(node);
  if (!read) {
    /** The selection sets of the fields named `name` in `sets`, through fragments. */
    const fields = (sets: ReadonlyArray<SelectionSetNode | undefined>, name: string): SelectionSetNode[] =>
      sets.flatMap((set) =>
        (set?.selections ?? []).flatMap((selection) =>
          selection.kind === 'Field'
            ? selection.name.value === name && selection.selectionSet
              ? [selection.selectionSet]
              : []
            : fields(
                [
                  selection.kind === 'InlineFragment'
                    ? selection.selectionSet
                    : info.fragments[selection.name.value]?.selectionSet,
                ],
                name,
              ),
        ),
      );
    const lists = info.fieldNodes.map((n) => n.selectionSet);
    const calls = [...fields(lists, 'nodes'), ...fields(fields(lists, 'edges'), 'node')];
    const orders = fields(calls, 'serviceOrders');
    read = { orders: orders.length > 0, vendors: fields(orders, 'vendor').length > 0 };
    ordersRead.set(node, read);
  }
  return read;
}

export const portCallResolvers = [PortCallResolver, pageEchoResolver(PortCallConnection)];
