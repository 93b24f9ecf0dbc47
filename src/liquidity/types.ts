import { ArgsType, Field, Float, ID, InputType, Int, ObjectType, registerEnumType } from 'type-graphql';
import { JSONObject } from '../gateway/schema/build.js';
import { Connection, PageArgs } from '../gateway/schema/connection.js';
import { LiquidityTier, Protocol, ProtocolCategory, WatchlistAlert } from './entities.js';

/** GraphQL shapes of the liquidity domain that are not entities. */

export enum ConfidenceLevel {
  HIGH = 'HIGH',
  MEDIUM = 'MEDIUM',
  LOW = 'LOW',
}
registerEnumType(ConfidenceLevel, { name: 'ConfidenceLevel' });

export enum Trajectory {
  IMPROVING = 'IMPROVING',
  STABLE = 'STABLE',
  DECLINING = 'DECLINING',
}
registerEnumType(Trajectory, {
  name: 'Trajectory',
  description: 'Fitted 30-day trend ≥ +3 points IMPROVING, ≤ −3 DECLINING, otherwise STABLE.',
});

export enum PenaltyKind {
  CONCENTRATION = 'CONCENTRATION',
  DEVIATION = 'DEVIATION',
  QUEUE = 'QUEUE',
  STALENESS = 'STALENESS',
  ATTESTATION = 'ATTESTATION',
}
registerEnumType(PenaltyKind, {
  name: 'PenaltyKind',
  description:
    'CONCENTRATION (top holder), DEVIATION (price vs NAV), QUEUE (redemption queue), STALENESS (data age), ATTESTATION (reserve attestation lapse).',
});

export enum IngestFormatEnum {
  CSV = 'CSV',
  JSON = 'JSON',
}
registerEnumType(IngestFormatEnum, { name: 'IngestFormat' });

@ObjectType({ simpleResolvers: true, description: 'The five components, each 0–100.' })
export class ScoreComponents {
  @Field(() => Float) aum!: number;
  @Field(() => Float) redemption!: number;
  @Field(() => Float) volume!: number;
  @Field(() => Float) issuer!: number;
  @Field(() => Float) jurisdiction!: number;
}

@ObjectType({ simpleResolvers: true, description: 'Component weights (sum to 1).' })
export class ScoreWeights extends ScoreComponents {}

@ObjectType('PenaltyCaps', { simpleResolvers: true, description: 'Maximum points each penalty may deduct.' })
export class PenaltyCapsType {
  @Field(() => Float) concentration!: number;
  @Field(() => Float) deviation!: number;
  @Field(() => Float) queue!: number;
  @Field(() => Float) staleness!: number;
  @Field(() => Float) attestation!: number;
}

@ObjectType({ simpleResolvers: true })
export class PenaltyAssessment {
  @Field(() => PenaltyKind) kind!: PenaltyKind;
  @Field(() => Float, { description: 'Points deducted (after the cap).' }) points!: number;
  @Field(() => Float) cap!: number;
}

@ObjectType({ simpleResolvers: true })
export class DataConfidence {
  @Field(() => ConfidenceLevel) level!: ConfidenceLevel;
  @Field(() => Float, { description: '0–100: 60 % freshness, 40 % completeness.' }) score!: number;
  @Field(() => Float, { description: '0–1: 1 − data age in days / 14.' }) freshness!: number;
  @Field(() => Float, { description: '0–1: share of the six optional metrics reported.' })
  completeness!: number;
}

@ObjectType({ simpleResolvers: true, description: 'A protocol score with its breakdown (methodology 1.7).' })
export class Score {
  @Field(() => ID) protocolId!: string;
  @Field(() => String) slug!: string;
  @Field(() => String) name!: string;
  @Field(() => Float) score!: number;
  @Field(() => LiquidityTier) tier!: LiquidityTier;
  @Field(() => ScoreComponents) components!: ScoreComponents;
  @Field(() => [PenaltyAssessment]) penalties!: PenaltyAssessment[];
  @Field(() => ScoreWeights) weights!: ScoreWeights;
  @Field(() => DataConfidence) confidence!: DataConfidence;
  @Field(() => String, { description: 'SHA-256 of methodology version + canonical inputs + weights + caps.' })
  auditId!: string;
  @Field(() => String, { description: 'Day scored, YYYY-MM-DD.' }) asOf!: string;
  @Field(() => String, { description: 'Day of the metrics used, YYYY-MM-DD.' }) dataDate!: string;
  @Field(() => String) methodologyVersion!: string;
  @Field(() => ID, {
    nullable: true,
    description: 'The scoring profile applied; null = methodology defaults.',
  })
  profileId!: string | null;
  @Field(() => Protocol, { description: 'The full protocol profile (export rows carry every field).' })
  protocol!: Protocol;
}

@ObjectType('ScoreAudit', {
  simpleResolvers: true,
  description: 'The stored inputs behind an audit id, and the score they give.',
})
export class ScoreAuditRecord {
  @Field(() => String) auditId!: string;
  @Field(() => String) methodologyVersion!: string;
  @Field(() => JSONObject, { description: 'Exactly the engine inputs hashed into the audit id.' })
  inputs!: Record<string, unknown>;
  @Field(() => ScoreWeights) weights!: ScoreWeights;
  @Field(() => PenaltyCapsType) penaltyCaps!: PenaltyCapsType;
  @Field(() => Score) result!: Score;
}

@ObjectType({ simpleResolvers: true })
export class ScorePoint {
  @Field(() => String) date!: string;
  @Field(() => Float) score!: number;
  @Field(() => LiquidityTier) tier!: LiquidityTier;
  @Field(() => String) auditId!: string;
}

@ObjectType({ simpleResolvers: true, description: 'The last 30 daily scores with their trajectory.' })
export class ScoreHistory {
  @Field(() => String) slug!: string;
  @Field(() => ID, { nullable: true }) profileId!: string | null;
  @Field(() => Trajectory) trajectory!: Trajectory;
  @Field(() => Float, { description: 'Change of the least-squares line over the window, points.' })
  trend!: number;
  @Field(() => [ScorePoint]) points!: ScorePoint[];
}

@ObjectType({ simpleResolvers: true })
export class Backtest {
  @Field(() => Int) lookbackDays!: number;
  @Field(() => String) from!: string;
  @Field(() => String) to!: string;
  @Field(() => Int) protocolsEvaluated!: number;
  @Field(() => Float, {
    nullable: true,
    description: 'Pearson correlation of the start score with AUM retention (end AUM / start AUM).',
  })
  aumRetentionCorrelation!: number | null;
  @Field(() => Float, {
    nullable: true,
    description: 'Share of protocols L1 at the start that are L1 at the end.',
  })
  l1StabilityRate!: number | null;
  @Field(() => Float, {
    nullable: true,
    description: 'Share of protocols for which "start score < 45" correctly predicted "ILLIQUID at the end".',
  })
  illiquidPredictionAccuracy!: number | null;
  @Field(() => Int) l1AtStart!: number;
  @Field(() => Int) illiquidAtEnd!: number;
}

@ObjectType({ simpleResolvers: true })
export class TierDistribution {
  @Field(() => Int) L1!: number;
  @Field(() => Int) L2!: number;
  @Field(() => Int) L3!: number;
  @Field(() => Int) ILLIQUID!: number;
}

@ObjectType({ simpleResolvers: true })
export class CompositeIndex {
  @Field(() => String, { description: 'ILT, ILC, ILRA, ILRWA or ILIG.' }) code!: string;
  @Field(() => String) name!: string;
  @Field(() => Float, { nullable: true }) score!: number | null;
}

@ObjectType({ simpleResolvers: true, description: 'Aggregates over active protocols with a score.' })
export class Market {
  @Field(() => ProtocolCategory, { nullable: true }) category!: ProtocolCategory | null;
  @Field(() => String, { nullable: true }) asOf!: string | null;
  @Field(() => Int) protocolCount!: number;
  @Field(() => String, { description: 'Decimal string, USD.' }) totalAumUsd!: string;
  @Field(() => String) currency!: string;
  @Field(() => Float, { nullable: true }) averageScore!: number | null;
  @Field(() => Float, { nullable: true, description: 'AUM-weighted, percent.' }) averageYieldPct!:
    number | null;
  @Field(() => TierDistribution) tierDistribution!: TierDistribution;
  @Field(() => [CompositeIndex]) indices!: CompositeIndex[];
}

@ObjectType('Watchlist', {
  simpleResolvers: true,
  description: "The caller's account watchlist and its alert configuration.",
})
export class WatchlistType {
  @Field(() => ID, { nullable: true, description: 'Null until the first change.' }) id!: string | null;
  @Field(() => Float, {
    nullable: true,
    description: 'Alert when a score moves at least this many points; null = off.',
  })
  scoreChangeThreshold!: number | null;
  @Field(() => Boolean) tierShift!: boolean;
  @Field(() => Float, {
    nullable: true,
    description: 'Alert when AUM moves at least this percentage; null = off.',
  })
  aumChangePct!: number | null;
  @Field(() => Boolean) complianceEvents!: boolean;
  @Field(() => [Protocol]) protocols!: Protocol[];
}

@ObjectType('ScoringProfile', { simpleResolvers: true })
export class ScoringProfileType {
  @Field(() => ID) id!: string;
  @Field(() => String) name!: string;
  @Field(() => ScoreWeights) weights!: ScoreWeights;
  @Field(() => PenaltyCapsType) penaltyCaps!: PenaltyCapsType;
  @Field(() => Date) createdAt!: Date;
  @Field(() => Date) updatedAt!: Date;
}

@ObjectType('ScoringProfileChange', { simpleResolvers: true })
export class ScoringProfileChangeType {
  @Field(() => ID) id!: string;
  @Field(() => String, { description: 'CREATE, UPDATE or DELETE.' }) action!: string;
  @Field(() => String) actor!: string;
  @Field(() => JSONObject, { nullable: true }) before!: Record<string, unknown> | null;
  @Field(() => JSONObject, { nullable: true }) after!: Record<string, unknown> | null;
  @Field(() => Date) at!: Date;
}

@ObjectType('IngestResult', { simpleResolvers: true })
export class IngestResultType {
  @Field(() => Int) rows!: number;
  @Field(() => Int) protocols!: number;
  @Field(() => Int) daysScored!: number;
  @Field(() => Int) alerts!: number;
  @Field(() => Int) events!: number;
}

export const ProtocolConnection = Connection(Protocol, 'Protocol');
export const ScoreConnection = Connection(Score, 'Score');
export const WatchlistAlertConnection = Connection(WatchlistAlert, 'WatchlistAlert');
export const ScoringProfileConnection = Connection(ScoringProfileType, 'ScoringProfile');

@ArgsType()
export class ListArgs extends PageArgs {
  @Field(() => Int, {
    nullable: true,
    description: 'Skip this many items (REST-style paging; use instead of `after`).',
  })
  offset?: number | null;
}

@ArgsType()
export class ProtocolArgs extends ListArgs {
  @Field(() => ProtocolCategory, { nullable: true })
  category?: ProtocolCategory | null;

  @Field(() => LiquidityTier, { nullable: true })
  tier?: LiquidityTier | null;

  @Field(() => Float, { nullable: true })
  minScore?: number | null;

  @Field(() => Float, { nullable: true, description: 'Minimum AUM, USD.' })
  minAum?: number | null;
}

/**
 * Every weight is required, but the schema marks them nullable so that a missing one reaches
 * the service, whose 400 names it (`weights.volume: is required …`) on GraphQL and REST alike.
 */
@InputType({ description: 'All five weights are required: non-negative, summing to 1 (± 0.000001).' })
export class WeightsInput {
  @Field(() => Float, { nullable: true }) aum?: number | null;
  @Field(() => Float, { nullable: true }) redemption?: number | null;
  @Field(() => Float, { nullable: true }) volume?: number | null;
  @Field(() => Float, { nullable: true }) issuer?: number | null;
  @Field(() => Float, { nullable: true }) jurisdiction?: number | null;
}

@InputType()
export class PenaltyCapsInput {
  @Field(() => Float, { nullable: true }) concentration?: number | null;
  @Field(() => Float, { nullable: true }) deviation?: number | null;
  @Field(() => Float, { nullable: true }) queue?: number | null;
  @Field(() => Float, { nullable: true }) staleness?: number | null;
  @Field(() => Float, { nullable: true }) attestation?: number | null;
}

@InputType()
export class ScoringProfileInput {
  @Field(() => String, { nullable: true }) name?: string | null;
  @Field(() => WeightsInput, { nullable: true }) weights?: WeightsInput | null;
  @Field(() => PenaltyCapsInput, {
    nullable: true,
    description: 'Caps not given keep the methodology default (create) or the current value (update).',
  })
  penaltyCaps?: PenaltyCapsInput | null;
}

@InputType()
export class WatchlistInputType {
  @Field(() => [String], { nullable: true, description: 'Protocol slugs to add.' }) add?: string[] | null;
  @Field(() => Float, { nullable: true, description: '0 turns the alert off; null or omitted keeps it.' })
  scoreChangeThreshold?: number | null;
  @Field(() => Boolean, { nullable: true }) tierShift?: boolean | null;
  @Field(() => Float, { nullable: true, description: '0 turns the alert off; null or omitted keeps it.' })
  aumChangePct?: number | null;
  @Field(() => Boolean, { nullable: true }) complianceEvents?: boolean | null;
}

@InputType()
export class YieldSourceInput {
  @Field(() => String) source!: string;
  @Field(() => Float) sharePct!: number;
}

@InputType()
export class RegulatoryFilingInput {
  @Field(() => String) regulator!: string;
  @Field(() => String) reference!: string;
  @Field(() => String, { description: 'YYYY-MM-DD' }) filedOn!: string;
}

@InputType({
  description:
    'A protocol profile. createProtocol needs every field except description, active, auditor, yieldAttribution, transferRestrictions, regulatoryFilings and website; updateProtocol takes any subset (null clears auditor or website). Enum-like values accept any case.',
})
export class ProtocolInput {
  @Field(() => String, {
    nullable: true,
    description: 'Lower-case letters, digits and single hyphens, 2–80.',
  })
  slug?: string | null;
  @Field(() => String, { nullable: true }) name?: string | null;
  @Field(() => String, {
    nullable: true,
    description: 'treasury, private_credit, real_estate, commodity or infrastructure.',
  })
  category?: string | null;
  @Field(() => Boolean, { nullable: true, description: 'Inactive protocols are hidden and not ingested.' })
  active?: boolean | null;
  @Field(() => String, { nullable: true }) description?: string | null;
  @Field(() => String, { nullable: true }) tokenSymbol?: string | null;
  @Field(() => String, { nullable: true }) issuer?: string | null;
  @Field(() => String, { nullable: true, description: 'ISO 3166-1 alpha-2.' }) jurisdiction?: string | null;
  @Field(() => String, { nullable: true, description: 'REGISTERED, EXEMPT, PENDING or UNREGULATED.' })
  regulatoryStatus?: string | null;
  @Field(() => String, { nullable: true }) custodian?: string | null;
  @Field(() => Boolean, { nullable: true }) qualifiedCustodian?: boolean | null;
  @Field(() => String, { nullable: true }) auditor?: string | null;
  @Field(() => String, { nullable: true }) governanceModel?: string | null;
  @Field(() => String, { nullable: true, description: 'NASCENT, DEVELOPING or MATURE.' })
  governanceMaturity?: string | null;
  @Field(() => [String], { nullable: true }) chains?: string[] | null;
  @Field(() => String, { nullable: true }) tokenStandard?: string | null;
  @Field(() => String, { nullable: true, description: 'DAILY, WEEKLY, MONTHLY or QUARTERLY.' })
  redemptionFrequency?: string | null;
  @Field(() => Int, { nullable: true }) noticePeriodDays?: number | null;
  @Field(() => Boolean, { nullable: true }) redemptionGates?: boolean | null;
  @Field(() => String, { nullable: true, description: 'Whole US dollars, decimal string.' })
  minimumInvestmentUsd?: string | null;
  @Field(() => Float, { nullable: true }) yieldPct?: number | null;
  @Field(() => [YieldSourceInput], { nullable: true, description: 'Shares add up to 100.' })
  yieldAttribution?: YieldSourceInput[] | null;
  @Field(() => String, { nullable: true, description: 'YYYY-MM-DD, not in the future.' })
  launchDate?: string | null;
  @Field(() => Boolean, { nullable: true }) kycRequired?: boolean | null;
  @Field(() => Boolean, { nullable: true }) accreditedOnly?: boolean | null;
  @Field(() => Boolean, { nullable: true }) sanctionsScreening?: boolean | null;
  @Field(() => String, { nullable: true }) transferRestrictions?: string | null;
  @Field(() => [RegulatoryFilingInput], { nullable: true }) regulatoryFilings?:
    RegulatoryFilingInput[] | null;
  @Field(() => String, { nullable: true, description: 'Absolute http(s) URL.' }) website?: string | null;
}

@ObjectType('ProtocolChange', {
  simpleResolvers: true,
  description: 'One create or update of a protocol profile.',
})
export class ProtocolChangeType {
  @Field(() => ID) id!: string;
  @Field(() => String, { description: 'CREATE or UPDATE.' }) action!: string;
  @Field(() => String) actor!: string;
  @Field(() => JSONObject, { nullable: true }) before!: Record<string, unknown> | null;
  @Field(() => JSONObject, { nullable: true }) after!: Record<string, unknown> | null;
  @Field(() => Date) at!: Date;
}
