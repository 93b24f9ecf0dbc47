import { Ctx, Field, ID, ObjectType, Query, Resolver } from 'type-graphql';
import { requirePrincipal, type GatewayContext } from '../gateway/schema/context.js';
import { Authenticated } from '../gateway/schema/directives.js';
import { Plan } from '../kernel/plans.js';
import { Account } from './entities.js';

@ObjectType({ description: 'The caller, as resolved from its credential.' })
// On the type as well as on Query.viewer: a federation router reaches it through `_entities` too.
@Authenticated()
export class Viewer {
  @Field(() => ID)
  accountId!: string;

  @Field(() => String)
  accountName!: string;

  @Field(() => Plan)
  plan!: Plan;

  @Field(() => [String], { description: 'Canonical scope names granted to this credential.' })
  scopes!: string[];

  @Field(() => String, { description: 'api_key, oauth_token or session.' })
  credentialKind!: string;

  @Field(() => ID)
  credentialId!: string;

  @Field(() => ID, { nullable: true })
  userId?: string | null;

  @Field(() => String, { nullable: true })
  clientId?: string | null;
}

@Resolver()
export class ViewerResolver {
  @Query(() => Viewer, { description: 'Who the gateway thinks you are: account, plan and scopes.' })
  @Authenticated()
  viewer(@Ctx() ctx: GatewayContext): Promise<Viewer> {
    return viewerOf(ctx);
  }
}

async function viewerOf(ctx: GatewayContext): Promise<Viewer> {
  const principal = requirePrincipal(ctx);
  const account = await ctx.em.findOneOrFail(Account, { id: principal.accountId });
  return {
    accountId: principal.accountId,
    accountName: account.name,
    plan: principal.plan,
    scopes: [...principal.scopes],
    credentialKind: principal.credential.kind,
    credentialId: principal.credential.id,
    userId: principal.userId ?? null,
    clientId: principal.clientId ?? null,
  };
}

/**
 * The Viewer entity of the accounts subgraph (key `accountId`): only the caller's own account
 * resolves; any other is null, as if it did not exist.
 */
export function viewerByReference(representation: Record<string, unknown>, ctx: GatewayContext) {
  return representation.accountId === requirePrincipal(ctx).accountId ? viewerOf(ctx) : null;
}
