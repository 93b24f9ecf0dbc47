import { Args, ArgsType, Ctx, Field, ID, Int, ObjectType, Query, Resolver } from 'type-graphql';
import type { FilterQuery } from '@mikro-orm/core';
import { Connection, PageArgs, toConnection, toPage } from '../gateway/schema/connection.js';
import type { GatewayContext } from '../gateway/schema/context.js';
import { RequiresScopes } from '../gateway/schema/directives.js';
import { checkDate } from '../kernel/dates.js';
import { isUuid } from '../kernel/ids.js';
import { badInput } from '../kernel/errors.js';
import { AuditRecord } from './entities.js';

@ObjectType('AuditRecord', {
  description: 'One API call: REST request, GraphQL operation or subscription start.',
})
export class AuditRecordType {
  @Field(() => ID)
  id!: string;

  @Field(() => Date)
  at!: Date;

  @Field(() => String)
  requestId!: string;

  @Field(() => ID, { nullable: true })
  accountId?: string | null;

  @Field(() => String, { nullable: true })
  credentialKind?: string | null;

  @Field(() => ID, { nullable: true })
  credentialId?: string | null;

  @Field(() => String, { nullable: true })
  ip?: string | null;

  @Field(() => String, { nullable: true })
  userAgent?: string | null;

  @Field(() => String, { nullable: true, description: 'Hash of credential + IP prefix + user agent.' })
  fingerprint?: string | null;

  @Field(() => String, { description: 'Route (`GET /v1/...`) or operation (`query Name`).' })
  operation!: string;

  @Field(() => Int)
  status!: number;

  @Field(() => Int)
  durationMs!: number;
}

const AuditConnection = Connection(AuditRecordType, 'AuditRecord');

@ArgsType()
class AuditLogArgs extends PageArgs {
  @Field(() => ID, { nullable: true })
  accountId?: string | null;

  @Field(() => Date, { nullable: true, description: 'Inclusive lower bound on `at`.' })
  since?: Date | null;

  @Field(() => Date, { nullable: true, description: 'Exclusive upper bound on `at`.' })
  until?: Date | null;
}

export function auditFilter(args: {
  accountId?: string | null;
  since?: Date | null;
  until?: Date | null;
}): FilterQuery<AuditRecord> {
  if (args.since && args.until && args.since >= args.until) throw badInput('since', 'must be before until');
  if (args.accountId && !isUuid(args.accountId)) throw badInput('accountId', 'must be a UUID');
  const at: Record<string, Date> = {};
  if (args.since) at.$gte = checkDate(args.since, 'since');
  if (args.until) at.$lt = checkDate(args.until, 'until');
  return {
    ...(args.accountId ? { accountId: args.accountId } : {}),
    ...(Object.keys(at).length ? { at } : {}),
  } as FilterQuery<AuditRecord>;
}

@Resolver()
export class AuditResolver {
  @Query(() => AuditConnection, { description: 'The audit log, newest first. Admins only.' })
  @RequiresScopes('admin')
  async auditLog(@Args(() => AuditLogArgs) args: AuditLogArgs, @Ctx() ctx: GatewayContext) {
    const page = toPage(args);
    const [items, total] = await ctx.em.findAndCount(AuditRecord, auditFilter(args), {
      orderBy: { at: 'desc', id: 'desc' },
      limit: page.limit,
      offset: page.offset,
    });
    return toConnection(items, total, page);
  }
}
