import {
  Arg,
  Args,
  ArgsType,
  Ctx,
  Field,
  ID,
  Int,
  ObjectType,
  Query,
  Resolver,
  registerEnumType,
} from 'type-graphql';
import type { FilterQuery } from '@mikro-orm/core';
import { Connection, PageArgs, toConnection, toPage } from '../gateway/schema/connection.js';
import { requirePrincipal, type GatewayContext } from '../gateway/schema/context.js';
import { RequiresScopes } from '../gateway/schema/directives.js';
import { checkDate } from '../kernel/dates.js';
import { isUuid } from '../kernel/ids.js';
import { badInput } from '../kernel/errors.js';
import { Plan } from '../kernel/plans.js';
import { AuditRecord } from './entities.js';
import {
  CallOutcome,
  MAX_USAGE_DAYS,
  MAX_USAGE_OPERATIONS,
  accountOf,
  requestLogEntry,
  requestLogFilter,
  usageReport,
  type UsageReport,
} from './usage.js';

registerEnumType(CallOutcome, {
  name: 'CallOutcome',
  description: 'A call by its HTTP status: SUCCESS below 400, CLIENT_ERROR 4xx, SERVER_ERROR 5xx.',
});

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

  @Field(() => Int, { description: 'Latency: from the request arriving to the response sent.' })
  durationMs!: number;

  @Field(() => String, {
    nullable: true,
    description: 'The door the call came in by: graphql-http, graphql-ws, rest or console.',
  })
  door?: string | null;

  @Field(() => String, {
    nullable: true,
    description: 'The `extensions.code` (REST: `error.code`) of the first error, if any.',
  })
  errorCode?: string | null;
}

@ObjectType({ description: 'Calls of one kind, split by outcome.' })
class CallCountsType {
  @Field(() => Int)
  calls!: number;

  @Field(() => Int, { description: 'Status below 400.' })
  successful!: number;

  @Field(() => Int, { description: 'Status 4xx.' })
  clientErrors!: number;

  @Field(() => Int, { description: 'Status 5xx.' })
  serverErrors!: number;
}

@ObjectType('UsageDay', { description: 'One UTC day of calls.' })
class UsageDayType extends CallCountsType {
  @Field(() => String, { description: '`YYYY-MM-DD` (UTC).' })
  date!: string;
}

@ObjectType('UsageByOperation', { description: 'Calls of one operation or REST route.' })
class UsageByOperationType extends CallCountsType {
  @Field(() => String, { description: 'Route (`GET /v1/...`) or operation (`query Name`).' })
  operation!: string;
}

@ObjectType('UsageByOutcome', { description: 'Calls answered with one status (and, for errors, one code).' })
class UsageByOutcomeType {
  @Field(() => CallOutcome)
  outcome!: CallOutcome;

  @Field(() => Int)
  status!: number;

  @Field(() => String, { nullable: true, description: 'The error code of 4xx and 5xx answers.' })
  code?: string | null;

  @Field(() => Int)
  calls!: number;
}

@ObjectType('Usage', {
  description:
    'An account’s calls per day against its plan’s limits, by operation and by outcome (from the audit log).',
})
class UsageType extends CallCountsType {
  @Field(() => ID)
  accountId!: string;

  @Field(() => Plan)
  plan!: Plan;

  @Field(() => Date, { description: 'Start of the first day counted (UTC midnight).' })
  since!: Date;

  @Field(() => Date, { description: 'When the figures were read.' })
  until!: Date;

  @Field(() => Int, { description: 'Calls per minute the plan allows (liquidity API, per account).' })
  perMinute!: number;

  @Field(() => Int, {
    nullable: true,
    description: 'Calls per calendar month (UTC) the plan includes (liquidity API); null: unlimited.',
  })
  perMonth?: number | null;

  @Field(() => Int, { description: 'Calls per minute per credential for the port-operations API.' })
  portOperationsPerMinute!: number;

  @Field(() => Int, { description: 'Every call of this calendar month (UTC), whatever the API.' })
  callsThisMonth!: number;

  @Field(() => [UsageDayType], {
    description: 'One entry per day, oldest first, days without calls included.',
  })
  days!: UsageDayType[];

  @Field(() => [UsageByOperationType], {
    description: `The ${MAX_USAGE_OPERATIONS} most called operations and routes of the period, busiest first.`,
  })
  byOperation!: UsageByOperationType[];

  @Field(() => [UsageByOutcomeType], { description: 'Calls of the period by status and error code.' })
  byOutcome!: UsageByOutcomeType[];
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

@ArgsType()
class RequestLogArgs extends PageArgs {
  @Field(() => ID, {
    nullable: true,
    description: 'Another account’s calls (admins only); your own account when omitted.',
  })
  accountId?: string | null;

  @Field(() => CallOutcome, { nullable: true })
  outcome?: CallOutcome | null;

  @Field(() => Int, { nullable: true, description: 'Only calls answered with this HTTP status.' })
  status?: number | null;

  @Field(() => String, { nullable: true, description: 'Only this operation or route, exactly.' })
  operation?: string | null;

  @Field(() => Date, { nullable: true, description: 'Inclusive lower bound on `at`.' })
  since?: Date | null;

  @Field(() => Date, { nullable: true, description: 'Exclusive upper bound on `at`.' })
  until?: Date | null;
}

@Resolver()
export class RequestLogResolver {
  @Query(() => UsageType, {
    description:
      'Your account’s calls per day over the last `days` days (today included), against its plan’s limits.',
  })
  @RequiresScopes('read:analytics')
  usage(
    @Arg('days', () => Int, { defaultValue: 30, description: `1–${MAX_USAGE_DAYS}.` }) days: number,
    @Arg('accountId', () => ID, {
      nullable: true,
      description: 'Another account (admins only); your own when omitted.',
    })
    accountId: string | null | undefined,
    @Ctx() ctx: GatewayContext,
  ): Promise<UsageReport> {
    const { config, clock, db } = ctx.services;
    return usageReport(
      ctx.em,
      { config, clock, dialect: db.dialect },
      accountOf(requirePrincipal(ctx), accountId),
      days,
    );
  }

  @Query(() => AuditConnection, { description: 'Your account’s calls, newest first.' })
  @RequiresScopes('read:analytics')
  async requestLog(@Args(() => RequestLogArgs) args: RequestLogArgs, @Ctx() ctx: GatewayContext) {
    const account = accountOf(requirePrincipal(ctx), args.accountId);
    const page = toPage(args);
    const [items, total] = await ctx.em.findAndCount(AuditRecord, requestLogFilter(account, args), {
      orderBy: { at: 'desc', id: 'desc' },
      limit: page.limit,
      offset: page.offset,
    });
    return toConnection(items, total, page);
  }

  @Query(() => AuditRecordType, {
    description:
      'The call a request id (`X-Request-Id`, `requestId` of an error body) names, in your account.',
  })
  @RequiresScopes('read:analytics')
  requestLogEntry(
    @Arg('requestId', () => String) requestId: string,
    @Arg('accountId', () => ID, {
      nullable: true,
      description: 'Another account (admins only); your own when omitted.',
    })
    accountId: string | null | undefined,
    @Ctx() ctx: GatewayContext,
  ): Promise<AuditRecord> {
    return requestLogEntry(ctx.em, accountOf(requirePrincipal(ctx), accountId), requestId);
  }
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
