import { Ctx, Field, ID, ObjectType, Query, Resolver } from 'type-graphql';
import { requirePrincipal, type GatewayContext } from '../gateway/schema/context.js';
import { Authenticated } from '../gateway/schema/directives.js';
import { Plan } from '../kernel/plans.js';
import { Account } from './entities.js';

@ObjectType({ description: 'The caller, as resolved from its credential.' })
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
  async viewer(@Ctx() ctx: GatewayContext): Promise<Viewer> {
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
}
