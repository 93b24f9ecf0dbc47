import { Arg, Args, Ctx, Field, InputType, Int, Mutation, Query, Resolver } from 'type-graphql';
import { Connection } from '../gateway/schema/connection.js';
import { serviceDeps, type GatewayContext } from '../gateway/schema/context.js';
import { RequiresScopes } from '../gateway/schema/directives.js';
import { OffsetPageArgs, pageEchoResolver, pageOf, pagedConnection } from '../gateway/schema/paging.js';
import { findPage } from './common.js';
import { Port, Vessel, VesselType } from './entities.js';
import { createPort, createVessel } from './reference-data.js';
import { parseImo, parseLocode } from './validation.js';

export const VesselConnection = Connection(Vessel, 'Vessel');
export const PortConnection = Connection(Port, 'Port');

@InputType()
class VesselInput {
  @Field(() => String) imo!: string;
  @Field(() => String) name!: string;
  @Field(() => String, { description: 'ISO 3166-1 alpha-2.' }) flag!: string;
  @Field(() => VesselType) type!: VesselType;
  @Field(() => Int) grossTonnage!: number;
  @Field(() => Int) deadweight!: number;
  @Field(() => Int) yearBuilt!: number;
}

@InputType()
class PortInput {
  @Field(() => String) locode!: string;
  @Field(() => String) name!: string;
  @Field(() => String, { description: 'IANA time zone.' }) timeZone!: string;
}

@Resolver(() => Vessel)
export class VesselResolver {
  @Query(() => Vessel, {
    nullable: true,
    description:
      'Look a vessel up by IMO number. A malformed IMO (bad length or check digit) is an error; an unknown one is null.',
  })
  @RequiresScopes('read:vessels')
  vessel(
    @Arg('imo', () => String) imo: string,
    @Ctx() ctx: GatewayContext,
  ): Vessel | null | Promise<Vessel | null> {
    return ctx.services.vessels.find(() => ctx.em, parseImo(imo));
  }

  @Query(() => VesselConnection, { description: 'Vessels by name.' })
  @RequiresScopes('read:vessels')
  async vessels(@Args(() => OffsetPageArgs) args: OffsetPageArgs, @Ctx() ctx: GatewayContext) {
    const page = pageOf(args);
    return pagedConnection(await findPage(ctx.reads, Vessel, {}, { name: 'asc', id: 'asc' }, page), page);
  }

  @Mutation(() => Vessel, { description: 'Adds a vessel to the shared register (admin only).' })
  @RequiresScopes('admin')
  async createVessel(
    @Arg('input', () => VesselInput) input: VesselInput,
    @Ctx() ctx: GatewayContext,
  ): Promise<Vessel> {
    const vessel = await createVessel(serviceDeps(ctx), input);
    ctx.services.vessels.forget(vessel.imo);
    return vessel;
  }
}

@Resolver(() => Port)
export class PortResolver {
  @Query(() => Port, { nullable: true, description: 'A port by UN/LOCODE; null when unknown.' })
  @RequiresScopes('read:port_calls', 'read:vessels')
  async port(@Arg('locode', () => String) locode: string, @Ctx() ctx: GatewayContext): Promise<Port | null> {
    return ctx.em.findOne(Port, { locode: parseLocode(locode, 'locode') });
  }

  @Query(() => PortConnection, { description: 'Ports by UN/LOCODE.' })
  @RequiresScopes('read:port_calls', 'read:vessels')
  async ports(@Args(() => OffsetPageArgs) args: OffsetPageArgs, @Ctx() ctx: GatewayContext) {
    const page = pageOf(args);
    return pagedConnection(await findPage(ctx.reads, Port, {}, { locode: 'asc' }, page), page);
  }

  @Mutation(() => Port, { description: 'Adds a port to the shared register (admin only).' })
  @RequiresScopes('admin')
  async createPort(
    @Arg('input', () => PortInput) input: PortInput,
    @Ctx() ctx: GatewayContext,
  ): Promise<Port> {
    return createPort(serviceDeps(ctx), input);
  }
}

export const referenceDataResolvers = [
  VesselResolver,
  PortResolver,
  pageEchoResolver(VesselConnection),
  pageEchoResolver(PortConnection),
];
