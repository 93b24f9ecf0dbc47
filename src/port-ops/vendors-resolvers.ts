import { Arg, Args, Ctx, Field, ID, InputType, Mutation, Query, Resolver } from 'type-graphql';
import { Connection } from '../gateway/schema/connection.js';
import { requirePrincipal, serviceDeps, type GatewayContext } from '../gateway/schema/context.js';
import { RequiresScopes } from '../gateway/schema/directives.js';
import { OffsetPageArgs, pageEchoResolver, pageOf, pagedConnection } from '../gateway/schema/paging.js';
import { findOwnedOrNull } from './common.js';
import { ServiceType, Vendor } from './entities.js';
import { createVendor, listVendors, updateVendor } from './vendors.js';

export const VendorConnection = Connection(Vendor, 'Vendor');

@InputType()
class VendorInput {
  @Field(() => String) name!: string;
  @Field(() => [ServiceType]) services!: ServiceType[];
  @Field(() => [String], { description: 'UN/LOCODEs of the ports served.' }) ports!: string[];
  @Field(() => String, { nullable: true }) contactEmail?: string | null;
  @Field(() => String, { nullable: true }) contactPhone?: string | null;
  @Field(() => Boolean, { nullable: true }) active?: boolean | null;
}

@InputType()
class VendorPatch {
  @Field(() => String, { nullable: true }) name?: string;
  @Field(() => [ServiceType], { nullable: true }) services?: ServiceType[];
  @Field(() => [String], { nullable: true }) ports?: string[];
  @Field(() => String, { nullable: true }) contactEmail?: string | null;
  @Field(() => String, { nullable: true }) contactPhone?: string | null;
  @Field(() => Boolean, { nullable: true }) active?: boolean | null;
}

@Resolver(() => Vendor)
export class VendorResolver {
  @Query(() => Vendor, { nullable: true })
  @RequiresScopes('read:vendors')
  async vendor(@Arg('id', () => ID) id: string, @Ctx() ctx: GatewayContext): Promise<Vendor | null> {
    return findOwnedOrNull(ctx.em, Vendor, requirePrincipal(ctx), id);
  }

  @Query(() => VendorConnection, {
    description: 'Vendors by name, optionally those offering a service at a port.',
  })
  @RequiresScopes('read:vendors')
  async vendors(
    @Args(() => OffsetPageArgs) args: OffsetPageArgs,
    @Arg('portLocode', () => String, { nullable: true }) portLocode: string | null,
    @Arg('serviceType', () => ServiceType, { nullable: true }) serviceType: ServiceType | null,
    @Arg('active', () => Boolean, { nullable: true }) active: boolean | null,
    @Ctx() ctx: GatewayContext,
  ) {
    const page = pageOf(args);
    return pagedConnection(
      await listVendors(ctx.em, requirePrincipal(ctx), { portLocode, serviceType, active }, page),
      page,
    );
  }

  @Mutation(() => Vendor)
  @RequiresScopes('write:vendors')
  async createVendor(
    @Arg('input', () => VendorInput) input: VendorInput,
    @Ctx() ctx: GatewayContext,
  ): Promise<Vendor> {
    return createVendor(serviceDeps(ctx), requirePrincipal(ctx), input);
  }

  @Mutation(() => Vendor, {
    description: 'Changes a vendor; `active: false` stops new orders but keeps history.',
  })
  @RequiresScopes('write:vendors')
  async updateVendor(
    @Arg('id', () => ID) id: string,
    @Arg('patch', () => VendorPatch) patch: VendorPatch,
    @Ctx() ctx: GatewayContext,
  ): Promise<Vendor> {
    return updateVendor(serviceDeps(ctx), requirePrincipal(ctx), id, stripNulls(patch));
  }
}

/** In a patch, null on a required field means "leave it" rather than "clear it". */
function stripNulls<T extends object>(patch: T): T {
  const out = { ...patch } as Record<string, unknown>;
  for (const key of ['name', 'services', 'ports']) if (out[key] === null) delete out[key];
  return out as T;
}

export const vendorResolvers = [VendorResolver, pageEchoResolver(VendorConnection)];
