import { Arg, Args, Ctx, ID, Int, Mutation, Query, Resolver } from 'type-graphql';
import type { GatewayContext } from '../gateway/schema/context.js';
import { requirePrincipal } from '../gateway/schema/context.js';
import { toConnection, toPage, type Page } from '../gateway/schema/connection.js';
import { Cost, RequiresPlan, RequiresScopes } from '../gateway/schema/directives.js';
import { badInput } from '../kernel/errors.js';
import type { MaybePromise } from '../kernel/maybe-async.js';
import { Plan } from '../kernel/plans.js';
import {
  LiquidityTier,
  Protocol,
  ProtocolCategory,
  type ScoringProfile,
  type Watchlist,
} from './entities.js';
import { ingestMetrics } from './ingest.js';
import {
  actorOf,
  createProfile,
  deleteProfile,
  listProfiles,
  profileChanges,
  updateProfile,
} from './profiles.js';
import { createProtocol, protocolChanges, updateProtocol, type WriterDeps } from './protocols.js';
import type { Published } from './read-model.js';
import { listProtocols, publishedProtocol } from './protocol-queries.js';
import {
  backtest,
  latestScores,
  market,
  scoreAudit,
  scoreHistory,
  scoreOf,
  scoringFor,
  type EmWhenNeeded,
  type ScoreView,
} from './scores.js';
import {
  Backtest,
  IngestFormatEnum,
  IngestResultType,
  ListArgs,
  Market,
  PenaltyKind,
  ProtocolArgs,
  ProtocolChangeType,
  ProtocolConnection,
  ProtocolInput,
  Score,
  ScoreAuditRecord,
  ScoreConnection,
  ScoreHistory,
  ScoringProfileChangeType,
  ScoringProfileConnection,
  ScoringProfileInput,
  ScoringProfileType,
  Trajectory,
  WatchlistAlertConnection,
  WatchlistInputType,
  WatchlistType,
} from './types.js';
import {
  getWatchlist,
  listAlerts,
  removeFromWatchlist,
  updateWatchlist,
  type WatchlistView,
} from './watchlists.js';

/** `first`/`after` as everywhere, or `offset` for REST-style paging. */
export function pageOf(args: ListArgs): Page {
  const page = toPage(args);
  if (args.offset === undefined || args.offset === null) return page;
  if (args.after) throw badInput('offset', 'give either offset or after, not both');
  if (!Number.isInteger(args.offset) || args.offset < 0)
    throw badInput('offset', `must be 0 or more (got ${args.offset})`);
  return { limit: page.limit, offset: args.offset };
}

/**
 * Latest-score views are made once per snapshot and scoring (scores.ts) and read by every request:
 * their GraphQL form is made once with them. The executor only reads it.
 */
const scoreForms = new WeakMap<ScoreView, Score>();

function toScore(v: ScoreView): Score {
  let score = scoreForms.get(v);
  if (!score) scoreForms.set(v, (score = scoreFromView(v)));
  return score;
}

function scoreFromView(v: ScoreView): Score {
  return {
    protocolId: v.protocol.id,
    slug: v.protocol.slug,
    name: v.protocol.name,
    protocol: v.protocol,
    score: v.score,
    tier: v.tier as LiquidityTier,
    components: v.components,
    penalties: v.penalties.map((p) => ({
      kind: p.name.toUpperCase() as PenaltyKind,
      points: p.points,
      cap: p.cap,
    })),
    weights: v.weights,
    confidence: v.confidence as Score['confidence'],
    auditId: v.auditId,
    asOf: v.asOf,
    dataDate: v.dataDate,
    methodologyVersion: v.methodologyVersion,
    profileId: v.profileId,
  };
}

function toWatchlist(v: WatchlistView): WatchlistType {
  const w: Watchlist = v.watchlist;
  return {
    id: v.persisted ? w.id : null,
    scoreChangeThreshold: w.scoreChangeThreshold,
    tierShift: w.tierShift,
    aumChangePct: w.aumChangePct,
    complianceEvents: w.complianceEvents,
    protocols: v.protocols,
  };
}

function toProfile(p: ScoringProfile): ScoringProfileType {
  return {
    id: p.id,
    name: p.name,
    weights: p.weights,
    penaltyCaps: p.penaltyCaps,
    createdAt: p.createdAt,
    updatedAt: p.updatedAt,
  };
}

function writerOf(ctx: GatewayContext): WriterDeps {
  return { em: ctx.em, clock: ctx.services.clock, versions: ctx.services.versions };
}

/** The caller's entity manager, forked only when a read needs one (scores.ts). */
function emOf(ctx: GatewayContext): EmWhenNeeded {
  return () => ctx.em;
}

function published(ctx: GatewayContext): MaybePromise<Published> {
  return ctx.services.readModel.current();
}

@Resolver()
export class LiquidityResolver {
  @Query(() => ProtocolConnection, { description: 'Active protocols, by slug, with filters.' })
  @RequiresPlan(Plan.ANALYST)
  @RequiresScopes('read:liquidity')
  async protocols(@Args(() => ProtocolArgs) args: ProtocolArgs, @Ctx() ctx: GatewayContext) {
    const page = pageOf(args);
    const { items, total } = listProtocols(await published(ctx), args, page);
    return toConnection(items, total, page);
  }

  @Query(() => Protocol, {
    nullable: true,
    description: 'The full profile of one protocol; null when the slug is unknown.',
  })
  @RequiresPlan(Plan.ANALYST)
  @RequiresScopes('read:liquidity')
  async protocol(@Arg('slug', () => String) slug: string, @Ctx() ctx: GatewayContext) {
    return publishedProtocol(await published(ctx), slug);
  }

  @Query(() => ScoreConnection, {
    description:
      'Latest score of every active protocol, by slug; under a scoring profile when profileId is given.',
  })
  @RequiresPlan(Plan.ANALYST)
  @RequiresScopes('read:liquidity')
  async scores(
    @Args(() => ListArgs) args: ListArgs,
    @Arg('profileId', () => ID, { nullable: true }) profileId: string | null,
    @Ctx() ctx: GatewayContext,
  ) {
    const page = pageOf(args);
    const scoring = await scoringFor(emOf(ctx), requirePrincipal(ctx), profileId);
    const { items, total } = await latestScores(
      emOf(ctx),
      await published(ctx),
      scoring,
      page,
      ctx.services.clock.now(),
    );
    return toConnection(items.map(toScore), total, page);
  }

  @Query(() => Score, {
    nullable: true,
    description: 'Latest score of one protocol; null when the slug is unknown.',
  })
  @RequiresPlan(Plan.ANALYST)
  @RequiresScopes('read:liquidity')
  async score(
    @Arg('slug', () => String) slug: string,
    @Arg('profileId', () => ID, { nullable: true }) profileId: string | null,
    @Ctx() ctx: GatewayContext,
  ) {
    const scoring = await scoringFor(emOf(ctx), requirePrincipal(ctx), profileId);
    const view = await scoreOf(emOf(ctx), await published(ctx), slug, scoring, ctx.services.clock.now());
    return view ? toScore(view) : null;
  }

  @Query(() => ScoreAuditRecord, {
    nullable: true,
    description:
      'The inputs, weights and caps behind an audit id: a stored default score, a scoring-profile result once served, or a score superseded by late or corrected data.',
  })
  @RequiresPlan(Plan.ANALYST)
  @RequiresScopes('read:liquidity')
  async scoreAudit(@Arg('auditId', () => String) auditId: string, @Ctx() ctx: GatewayContext) {
    const view = await scoreAudit(ctx.em, auditId);
    if (!view) return null;
    return {
      auditId: view.auditId,
      methodologyVersion: view.methodologyVersion,
      inputs: view.inputs,
      weights: view.weights,
      penaltyCaps: view.caps,
      result: toScore(view),
    };
  }

  @Query(() => ScoreHistory, {
    nullable: true,
    description: 'The last 30 daily scores and the trajectory; null when the slug is unknown.',
  })
  @Cost(100)
  @RequiresPlan(Plan.ANALYST)
  @RequiresScopes('read:liquidity')
  async scoreHistory(
    @Arg('slug', () => String) slug: string,
    @Arg('profileId', () => ID, { nullable: true }) profileId: string | null,
    @Ctx() ctx: GatewayContext,
  ) {
    const scoring = await scoringFor(emOf(ctx), requirePrincipal(ctx), profileId);
    const h = await scoreHistory(emOf(ctx), await published(ctx), slug, scoring, ctx.services.clock.now());
    if (!h) return null;
    return {
      slug: h.protocol.slug,
      profileId: h.profileId,
      trajectory: h.trajectory as Trajectory,
      trend: h.trend,
      points: h.points,
    };
  }

  @Query(() => Backtest, { description: 'Methodology backtest over stored history; lookback 7–365 days.' })
  @Cost(500)
  @RequiresPlan(Plan.ANALYST)
  @RequiresScopes('read:liquidity')
  async backtest(
    @Arg('lookback', () => Int, { defaultValue: 90 }) lookback: number,
    @Ctx() ctx: GatewayContext,
  ) {
    return backtest(await published(ctx), lookback, ctx.deadline);
  }

  @Query(() => Market, {
    description: 'Market aggregates and the five composite indices, optionally for one category.',
  })
  @Cost(100)
  @RequiresPlan(Plan.ANALYST)
  @RequiresScopes('read:liquidity')
  async market(
    @Arg('category', () => ProtocolCategory, { nullable: true }) category: ProtocolCategory | null,
    @Ctx() ctx: GatewayContext,
  ) {
    const m = market(await published(ctx), category);
    return { ...m, totalAumUsd: m.totalAumUsd.toFixed(2), currency: 'USD' };
  }

  @Query(() => WatchlistType, { description: "The caller's watchlist (defaults until first changed)." })
  @RequiresPlan(Plan.ANALYST)
  @RequiresScopes('read:liquidity')
  async watchlist(@Ctx() ctx: GatewayContext) {
    return toWatchlist(await getWatchlist({ em: ctx.em, clock: ctx.services.clock }, requirePrincipal(ctx)));
  }

  @Query(() => WatchlistAlertConnection, {
    description: 'Alerts raised for the caller’s watchlist, newest first.',
  })
  @RequiresPlan(Plan.ANALYST)
  @RequiresScopes('read:liquidity')
  async watchlistAlerts(@Args(() => ListArgs) args: ListArgs, @Ctx() ctx: GatewayContext) {
    const page = pageOf(args);
    const { items, total } = await listAlerts(ctx.em, requirePrincipal(ctx), page);
    return toConnection(items, total, page);
  }

  @Mutation(() => WatchlistType, { description: 'Adds protocols and/or changes alert thresholds.' })
  @RequiresPlan(Plan.ANALYST)
  @RequiresScopes('write:watchlists')
  async updateWatchlist(
    @Arg('input', () => WatchlistInputType) input: WatchlistInputType,
    @Ctx() ctx: GatewayContext,
  ) {
    return toWatchlist(
      await updateWatchlist({ em: ctx.em, clock: ctx.services.clock }, requirePrincipal(ctx), input),
    );
  }

  @Mutation(() => Boolean, { description: 'Removes a protocol from the watchlist.' })
  @RequiresPlan(Plan.ANALYST)
  @RequiresScopes('write:watchlists')
  async removeFromWatchlist(@Arg('slug', () => String) slug: string, @Ctx() ctx: GatewayContext) {
    return removeFromWatchlist(ctx.em, requirePrincipal(ctx), slug);
  }

  @Query(() => ScoringProfileConnection)
  @RequiresPlan(Plan.PROFESSIONAL)
  @RequiresScopes('read:liquidity')
  async scoringProfiles(@Args(() => ListArgs) args: ListArgs, @Ctx() ctx: GatewayContext) {
    const page = pageOf(args);
    const { items, total } = await listProfiles(ctx.em, requirePrincipal(ctx), page);
    return toConnection(items.map(toProfile), total, page);
  }

  @Query(() => [ScoringProfileChangeType], {
    description: 'The audit log of one scoring profile: every create, update and delete.',
  })
  @RequiresPlan(Plan.PROFESSIONAL)
  @RequiresScopes('read:liquidity')
  async scoringProfileChanges(@Arg('id', () => ID) id: string, @Ctx() ctx: GatewayContext) {
    return profileChanges(ctx.em, requirePrincipal(ctx), id);
  }

  @Mutation(() => ScoringProfileType)
  @RequiresPlan(Plan.PROFESSIONAL)
  @RequiresScopes('write:scoring_profiles')
  async createScoringProfile(
    @Arg('input', () => ScoringProfileInput) input: ScoringProfileInput,
    @Ctx() ctx: GatewayContext,
  ) {
    return toProfile(await createProfile(ctx.em, requirePrincipal(ctx), ctx.services.clock, input));
  }

  @Mutation(() => ScoringProfileType)
  @RequiresPlan(Plan.PROFESSIONAL)
  @RequiresScopes('write:scoring_profiles')
  async updateScoringProfile(
    @Arg('id', () => ID) id: string,
    @Arg('input', () => ScoringProfileInput) input: ScoringProfileInput,
    @Ctx() ctx: GatewayContext,
  ) {
    return toProfile(await updateProfile(ctx.em, requirePrincipal(ctx), ctx.services.clock, id, input));
  }

  @Mutation(() => Boolean)
  @RequiresPlan(Plan.PROFESSIONAL)
  @RequiresScopes('write:scoring_profiles')
  async deleteScoringProfile(@Arg('id', () => ID) id: string, @Ctx() ctx: GatewayContext) {
    return deleteProfile(ctx.em, requirePrincipal(ctx), ctx.services.clock, id);
  }

  @Query(() => ScoreConnection, {
    description:
      'Bulk export: every protocol field with its score. GET /v1/export streams the same rows as CSV or JSON.',
  })
  @RequiresPlan(Plan.PROFESSIONAL)
  @RequiresScopes('export:liquidity')
  async exportRows(
    @Args(() => ListArgs) args: ListArgs,
    @Arg('profileId', () => ID, { nullable: true }) profileId: string | null,
    @Ctx() ctx: GatewayContext,
  ) {
    return this.scores(args, profileId, ctx);
  }

  @Mutation(() => Protocol, {
    description: 'Onboards a protocol (admin). Its scores start with its first ingested day.',
  })
  @RequiresPlan(Plan.ANALYST)
  @RequiresScopes('admin')
  async createProtocol(@Arg('input', () => ProtocolInput) input: ProtocolInput, @Ctx() ctx: GatewayContext) {
    return createProtocol(writerOf(ctx), actorOf(requirePrincipal(ctx)), {
      ...input,
    });
  }

  @Mutation(() => Protocol, {
    description:
      'Changes a protocol profile or its active flag (admin). Scoring terms apply from the next reported day.',
  })
  @RequiresPlan(Plan.ANALYST)
  @RequiresScopes('admin')
  async updateProtocol(
    @Arg('slug', () => String) slug: string,
    @Arg('input', () => ProtocolInput) input: ProtocolInput,
    @Ctx() ctx: GatewayContext,
  ) {
    return updateProtocol(writerOf(ctx), actorOf(requirePrincipal(ctx)), slug, {
      ...input,
    });
  }

  @Query(() => [ProtocolChangeType], {
    description:
      'The change log of one protocol profile (admin): every create and update with before and after.',
  })
  @RequiresPlan(Plan.ANALYST)
  @RequiresScopes('admin')
  async protocolChanges(@Arg('slug', () => String) slug: string, @Ctx() ctx: GatewayContext) {
    return protocolChanges(ctx.em, slug);
  }

  @Mutation(() => IngestResultType, {
    description: 'Ingests daily metrics (CSV or JSON text); the same service as `tidegate liquidity ingest`.',
  })
  // Its work grows with its text (bounded by the 1 MiB body limit): parse, validate, re-score and
  // rebuild the read model. Priced like a prediction, so one operation holds at most a few ingests.
  @Cost(4000)
  @RequiresPlan(Plan.ANALYST)
  @RequiresScopes('admin')
  async ingestLiquidityMetrics(
    @Arg('format', () => IngestFormatEnum) format: IngestFormatEnum,
    @Arg('data', () => String) data: string,
    @Arg('replace', () => Boolean, {
      defaultValue: false,
      description:
        'Overwrite days that already hold reported data (a correction); otherwise such a row is rejected.',
    })
    replace: boolean,
    @Ctx() ctx: GatewayContext,
  ) {
    const result = await ingestMetrics({ ...writerOf(ctx), events: ctx.services.events }, data, format, {
      replace,
    });
    await ctx.services.events.publish(result.events);
    return { ...result, events: result.events.length };
  }
}
