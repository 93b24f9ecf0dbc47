import { Arg, Field, Float, ID, ObjectType, Resolver, Root, Subscription } from 'type-graphql';
import { JSONObjectResolver } from 'graphql-scalars';
import type { GatewayContext } from '../gateway/schema/context.js';
import type { DomainEvent } from '../kernel/events.js';
import { RequiresPlan, RequiresScopes } from '../gateway/schema/directives.js';
import { badInput } from '../kernel/errors.js';
import { Plan } from '../kernel/plans.js';
import { liveEvents } from './live.js';

/**
 * Live feeds. Each subscription is a filtered view of the event bus: liquidity events are
 * market-wide (accountId null) and go to every entitled caller; watchlist alerts and port-ops
 * events carry their tenant's accountId and go to that account only. The port-ops feeds are in
 * src/port-ops/subscriptions.ts, built with the helpers exported here.
 */

export type Payload = Record<string, unknown>;
export type Args = Record<string, unknown>;

const MAX_FILTER_VALUES = 100;

export function str(p: Payload, key: string): string {
  const v = p[key];
  return v === undefined || v === null ? '' : String(v);
}
function num(p: Payload, key: string): number {
  return Number(p[key] ?? 0);
}
function date(p: Payload, key: string, fallback: Date): Date {
  const v = p[key];
  const d = typeof v === 'string' || typeof v === 'number' || v instanceof Date ? new Date(v) : fallback;
  return Number.isNaN(d.getTime()) ? fallback : d;
}

function listFilter(args: Args, name: string): Set<string> | null {
  const values = args[name] as string[] | null | undefined;
  if (!values || values.length === 0) return null;
  if (values.length > MAX_FILTER_VALUES)
    throw badInput(name, `may name at most ${MAX_FILTER_VALUES} values (got ${values.length})`);
  return new Set(values.map((v) => v.trim().toLowerCase()));
}

export function optional(args: Args, name: string): string | null {
  const value = args[name];
  return typeof value === 'string' && value.trim() ? value.trim() : null;
}

/** Subscribes the caller to events of `types` that pass `accept`; tenant events only for their own account. */
export function subscribe(
  context: GatewayContext,
  types: readonly string[],
  accept: (event: DomainEvent<Payload>) => boolean = () => true,
) {
  const bus = context.services.bus;
  const accountId = context.principal?.accountId;
  const wanted = new Set(types);
  return liveEvents(
    bus,
    (event) =>
      wanted.has(event.type) &&
      (event.accountId === null || event.accountId === accountId) &&
      accept(event as DomainEvent<Payload>),
    context.services.config.wsMaxBacklogEvents,
  );
}

export interface SubscribeData {
  args: Args;
  context: GatewayContext;
}

function bySlug(args: Args): (event: DomainEvent<Payload>) => boolean {
  const slugs = listFilter(args, 'slugs');
  return (event) => !slugs || slugs.has(str(event.payload, 'slug').toLowerCase());
}

@ObjectType({ description: 'A protocol liquidity score moved (event `score_change`).' })
export class ScoreChange {
  @Field(() => ID, { description: 'Event id; the same id a webhook for this event carries.' })
  eventId!: string;
  @Field(() => Date)
  occurredAt!: Date;
  @Field(() => String)
  slug!: string;
  @Field(() => ID)
  protocolId!: string;
  @Field(() => Float)
  previousScore!: number;
  @Field(() => Float)
  score!: number;
  @Field(() => Float, { description: 'score − previousScore.' })
  delta!: number;
  @Field(() => String, { description: 'Audit trail id of the new score.' })
  auditId!: string;
  @Field(() => Date)
  asOf!: Date;
}

@ObjectType({ description: 'A protocol moved to another liquidity tier (event `tier_change`).' })
export class TierChange {
  @Field(() => ID)
  eventId!: string;
  @Field(() => Date)
  occurredAt!: Date;
  @Field(() => String)
  slug!: string;
  @Field(() => ID)
  protocolId!: string;
  @Field(() => String)
  previousTier!: string;
  @Field(() => String)
  tier!: string;
  @Field(() => Float)
  score!: number;
  @Field(() => Date)
  asOf!: Date;
}

@ObjectType({
  description:
    'A market-wide liquidity event (`aum_change`, `compliance_alert`, `data_stale`, `circuit_breaker`). `data` is the webhook payload of the event type.',
})
export class LiquidityEvent {
  @Field(() => ID)
  eventId!: string;
  @Field(() => String)
  type!: string;
  @Field(() => Date)
  occurredAt!: Date;
  @Field(() => String)
  slug!: string;
  @Field(() => ID)
  protocolId!: string;
  @Field(() => Date)
  asOf!: Date;
  @Field(() => JSONObjectResolver)
  data!: Payload;
}

@ObjectType({ description: "An alert on one of the caller's watchlists (event `watchlist_alert`)." })
export class WatchlistAlertEvent {
  @Field(() => ID)
  eventId!: string;
  @Field(() => Date)
  occurredAt!: Date;
  @Field(() => ID)
  watchlistId!: string;
  @Field(() => ID)
  alertId!: string;
  @Field(() => String)
  kind!: string;
  @Field(() => String)
  slug!: string;
  @Field(() => String)
  message!: string;
  @Field(() => Date)
  asOf!: Date;
}

function toLiquidityEvent(event: DomainEvent<Payload>): LiquidityEvent {
  const p = event.payload;
  return {
    eventId: event.id,
    type: event.type,
    occurredAt: event.occurredAt,
    slug: str(p, 'slug'),
    protocolId: str(p, 'protocolId'),
    asOf: date(p, 'asOf', event.occurredAt),
    data: p,
  };
}

const slugsArg = {
  nullable: true,
  description: 'Only these protocols (by slug); all when omitted.',
} as const;

/**
 * A market-wide liquidity feed: the events of one type, optionally for some protocols, from a
 * plan up. These feeds differ in nothing else, so one resolver class is made per feed.
 */
function liquidityFeed(name: string, type: string, plan: Plan, description: string) {
  @Resolver()
  class LiquidityFeedResolver {
    @Subscription(() => LiquidityEvent, {
      name,
      description,
      subscribe: ({ args, context }: SubscribeData) => subscribe(context, [type], bySlug(args)),
    })
    @RequiresPlan(plan)
    @RequiresScopes('read:liquidity')
    feed(
      @Root() event: DomainEvent<Payload>,
      @Arg('slugs', () => [String], slugsArg) _slugs?: string[] | null,
    ): LiquidityEvent {
      return toLiquidityEvent(event);
    }
  }
  return LiquidityFeedResolver;
}

const PROFESSIONAL_NOTE = 'Professional plan or higher, like liquidity webhooks.';

export const liquidityFeedResolvers = [
  liquidityFeed('aumChanged', 'aum_change', Plan.ANALYST, 'AUM movements (`aum_change`).'),
  liquidityFeed('dataStale', 'data_stale', Plan.ANALYST, 'Stale-data warnings (`data_stale`).'),
  liquidityFeed(
    'complianceAlerts',
    'compliance_alert',
    Plan.PROFESSIONAL,
    `Compliance alerts (\`compliance_alert\`). ${PROFESSIONAL_NOTE}`,
  ),
  liquidityFeed(
    'circuitBreakers',
    'circuit_breaker',
    Plan.PROFESSIONAL,
    `Circuit-breaker trips (\`circuit_breaker\`). ${PROFESSIONAL_NOTE}`,
  ),
];

@Resolver()
export class LiveEventsResolver {
  @Subscription(() => ScoreChange, {
    description: 'Score changes, optionally for some protocols and at least |minDelta| points.',
    subscribe: ({ args, context }: SubscribeData) => {
      const minDelta = args.minDelta as number | null | undefined;
      if (minDelta !== null && minDelta !== undefined && !(minDelta >= 0))
        throw badInput('minDelta', `must be zero or more (got ${minDelta})`);
      const slug = bySlug(args);
      return subscribe(
        context,
        ['score_change'],
        (e) => slug(e) && Math.abs(num(e.payload, 'delta')) >= (minDelta ?? 0),
      );
    },
  })
  @RequiresPlan(Plan.ANALYST)
  @RequiresScopes('read:liquidity')
  scoreChanged(
    @Root() event: DomainEvent<Payload>,
    @Arg('slugs', () => [String], slugsArg) _slugs?: string[] | null,
    @Arg('minDelta', () => Float, {
      nullable: true,
      description: 'Smallest absolute score change to report (default 0).',
    })
    _minDelta?: number | null,
  ): ScoreChange {
    const p = event.payload;
    return {
      eventId: event.id,
      occurredAt: event.occurredAt,
      slug: str(p, 'slug'),
      protocolId: str(p, 'protocolId'),
      previousScore: num(p, 'previousScore'),
      score: num(p, 'score'),
      delta: num(p, 'delta'),
      auditId: str(p, 'auditId'),
      asOf: date(p, 'asOf', event.occurredAt),
    };
  }

  @Subscription(() => TierChange, {
    description: 'Tier changes, optionally for some protocols.',
    subscribe: ({ args, context }: SubscribeData) => subscribe(context, ['tier_change'], bySlug(args)),
  })
  @RequiresPlan(Plan.ANALYST)
  @RequiresScopes('read:liquidity')
  tierChanged(
    @Root() event: DomainEvent<Payload>,
    @Arg('slugs', () => [String], slugsArg) _slugs?: string[] | null,
  ): TierChange {
    const p = event.payload;
    return {
      eventId: event.id,
      occurredAt: event.occurredAt,
      slug: str(p, 'slug'),
      protocolId: str(p, 'protocolId'),
      previousTier: str(p, 'previousTier'),
      tier: str(p, 'tier'),
      score: num(p, 'score'),
      asOf: date(p, 'asOf', event.occurredAt),
    };
  }

  @Subscription(() => WatchlistAlertEvent, {
    description: "Alerts on the caller's own watchlists, optionally one watchlist.",
    subscribe: ({ args, context }: SubscribeData) => {
      const watchlistId = optional(args, 'watchlistId');
      return subscribe(
        context,
        ['watchlist_alert'],
        (e) => watchlistId === null || str(e.payload, 'watchlistId') === watchlistId,
      );
    },
  })
  @RequiresPlan(Plan.ANALYST)
  @RequiresScopes('read:liquidity')
  watchlistAlerts(
    @Root() event: DomainEvent<Payload>,
    @Arg('watchlistId', () => ID, { nullable: true }) _watchlistId?: string | null,
  ): WatchlistAlertEvent {
    const p = event.payload;
    return {
      eventId: event.id,
      occurredAt: event.occurredAt,
      watchlistId: str(p, 'watchlistId'),
      alertId: str(p, 'alertId'),
      kind: str(p, 'kind'),
      slug: str(p, 'slug'),
      message: str(p, 'message'),
      asOf: date(p, 'asOf', event.occurredAt),
    };
  }
}
