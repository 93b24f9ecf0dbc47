import { randomUUID } from 'node:crypto';
import { DateTimeType, Entity, Enum, Index, PrimaryKey, Property, Unique } from '@mikro-orm/core';
import { Field, Float, ID, Int, ObjectType, registerEnumType } from 'type-graphql';
import type {
  PenaltyCaps,
  RegulatoryStatus as EngineRegulatoryStatus,
  Tier,
  Weights,
} from './engine/score.js';

export enum ProtocolCategory {
  TREASURY = 'TREASURY',
  PRIVATE_CREDIT = 'PRIVATE_CREDIT',
  REAL_ESTATE = 'REAL_ESTATE',
  COMMODITY = 'COMMODITY',
  INFRASTRUCTURE = 'INFRASTRUCTURE',
}
registerEnumType(ProtocolCategory, { name: 'ProtocolCategory' });

export enum LiquidityTier {
  L1 = 'L1',
  L2 = 'L2',
  L3 = 'L3',
  ILLIQUID = 'ILLIQUID',
}
registerEnumType(LiquidityTier, {
  name: 'LiquidityTier',
  description: 'L1 ≥ 75, L2 ≥ 55, L3 ≥ 35, ILLIQUID below 35 (METHODOLOGY.md).',
});

export enum RegulatoryStatus {
  REGISTERED = 'REGISTERED',
  EXEMPT = 'EXEMPT',
  PENDING = 'PENDING',
  UNREGULATED = 'UNREGULATED',
}
registerEnumType(RegulatoryStatus, { name: 'RegulatoryStatus' });

export enum RedemptionFrequency {
  DAILY = 'DAILY',
  WEEKLY = 'WEEKLY',
  MONTHLY = 'MONTHLY',
  QUARTERLY = 'QUARTERLY',
}
registerEnumType(RedemptionFrequency, { name: 'RedemptionFrequency' });

export const FREQUENCY_DAYS: Record<RedemptionFrequency, number> = {
  DAILY: 1,
  WEEKLY: 7,
  MONTHLY: 30,
  QUARTERLY: 90,
};

export enum GovernanceMaturity {
  NASCENT = 'NASCENT',
  DEVELOPING = 'DEVELOPING',
  MATURE = 'MATURE',
}
registerEnumType(GovernanceMaturity, { name: 'GovernanceMaturity' });

@ObjectType({ simpleResolvers: true, description: 'Where a share of the yield comes from.' })
export class YieldSource {
  @Field(() => String)
  source!: string;

  @Field(() => Float, { description: 'Percent of the yield, 0–100.' })
  sharePct!: number;
}

@ObjectType({ simpleResolvers: true, description: 'A regulatory filing reference.' })
export class RegulatoryFiling {
  @Field(() => String)
  regulator!: string;

  @Field(() => String)
  reference!: string;

  @Field(() => String, { description: 'YYYY-MM-DD' })
  filedOn!: string;
}

/** A tokenized real-world-asset protocol: its profile and its latest score (denormalised at ingestion). */
@ObjectType({ simpleResolvers: true, description: 'A tokenized real-world-asset protocol.' })
@Entity({ tableName: 'liquidity_protocols' })
export class Protocol {
  @Field(() => ID)
  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @Field(() => String)
  @Property({ type: 'string', length: 80, unique: true })
  slug!: string;

  @Field(() => String)
  @Property({ type: 'string', length: 200 })
  name!: string;

  @Field(() => ProtocolCategory)
  @Enum({ items: () => ProtocolCategory })
  category!: ProtocolCategory;

  @Field(() => Boolean)
  @Property({ type: 'boolean' })
  active = true;

  @Field(() => String)
  @Property({ type: 'string', length: 1000 })
  description!: string;

  @Field(() => String)
  @Property({ type: 'string', length: 16 })
  tokenSymbol!: string;

  @Field(() => String)
  @Property({ type: 'string', length: 200 })
  issuer!: string;

  @Field(() => String, { description: 'ISO 3166-1 alpha-2 of the issuing entity.' })
  @Property({ type: 'string', length: 2 })
  jurisdiction!: string;

  @Field(() => RegulatoryStatus)
  @Enum({ items: () => RegulatoryStatus })
  regulatoryStatus!: RegulatoryStatus;

  @Field(() => String)
  @Property({ type: 'string', length: 200 })
  custodian!: string;

  @Field(() => Boolean, { description: 'The custodian is a regulated qualified custodian.' })
  @Property({ type: 'boolean' })
  qualifiedCustodian!: boolean;

  @Field(() => String, { nullable: true })
  @Property({ type: 'string', length: 200, nullable: true })
  auditor?: string | null;

  @Field(() => String, { description: 'e.g. CORPORATE_BOARD, TRUSTEE, DAO, MULTISIG.' })
  @Property({ type: 'string', length: 40 })
  governanceModel!: string;

  @Field(() => GovernanceMaturity)
  @Enum({ items: () => GovernanceMaturity })
  governanceMaturity!: GovernanceMaturity;

  @Field(() => [String])
  @Property({ type: 'json' })
  chains: string[] = [];

  @Field(() => String, { description: 'e.g. ERC-20, ERC-3643, ERC-4626, SPL.' })
  @Property({ type: 'string', length: 20 })
  tokenStandard!: string;

  @Field(() => RedemptionFrequency)
  @Enum({ items: () => RedemptionFrequency })
  redemptionFrequency!: RedemptionFrequency;

  @Field(() => Int)
  @Property({ type: 'integer' })
  noticePeriodDays!: number;

  @Field(() => Boolean, { description: 'The issuer may gate (suspend or pro-rate) redemptions.' })
  @Property({ type: 'boolean' })
  redemptionGates!: boolean;

  /** Whole US dollars. */
  @Property({ type: 'integer' })
  minimumInvestment!: number;

  @Field(() => Float, { description: 'Current annual yield, percent.' })
  @Property({ type: 'double' })
  yieldPct!: number;

  @Field(() => [YieldSource])
  @Property({ type: 'json' })
  yieldAttribution: YieldSource[] = [];

  @Field(() => String, { description: 'YYYY-MM-DD' })
  @Property({ type: 'string', length: 10 })
  launchDate!: string;

  @Field(() => Boolean)
  @Property({ type: 'boolean' })
  kycRequired!: boolean;

  @Field(() => Boolean)
  @Property({ type: 'boolean' })
  accreditedOnly!: boolean;

  @Field(() => Boolean)
  @Property({ type: 'boolean' })
  sanctionsScreening!: boolean;

  @Field(() => String, {
    description: 'Transfer restrictions in plain words (e.g. whitelist-only transfers).',
  })
  @Property({ type: 'string', length: 300 })
  transferRestrictions!: string;

  @Field(() => [RegulatoryFiling])
  @Property({ type: 'json' })
  regulatoryFilings: RegulatoryFiling[] = [];

  @Field(() => String, { nullable: true })
  @Property({ type: 'string', length: 300, nullable: true })
  website?: string | null;

  /** Latest AUM, USD (mirrors the newest daily row). */
  @Property({ type: 'double' })
  aum = 0;

  @Field(() => Float, {
    nullable: true,
    description: 'Latest score under methodology 1.7 (default weights).',
  })
  @Property({ type: 'double', nullable: true })
  liquidityScore?: number | null;

  @Field(() => LiquidityTier, { nullable: true })
  @Enum({ items: () => LiquidityTier, nullable: true })
  liquidityTier?: LiquidityTier | null;

  @Field(() => String, { nullable: true, description: 'Day of the latest score, YYYY-MM-DD.' })
  @Property({ type: 'string', length: 10, nullable: true })
  scoreAsOf?: string | null;

  @Field(() => String, { nullable: true, description: 'Day of the newest reported metrics, YYYY-MM-DD.' })
  @Property({ type: 'string', length: 10, nullable: true })
  lastDataAt?: string | null;

  @Property({ type: 'boolean' })
  staleNotified = false;

  @Field(() => Date)
  @Property({ type: DateTimeType })
  createdAt!: Date;

  @Field(() => Date)
  @Property({ type: DateTimeType })
  updatedAt!: Date;

  @Field(() => String, {
    name: 'aumUsd',
    description: 'Latest assets under management: decimal string, USD.',
  })
  get aumUsd(): string {
    return this.aum.toFixed(2);
  }

  @Field(() => String, { name: 'minimumInvestmentUsd', description: 'Decimal string, USD.' })
  get minimumInvestmentUsd(): string {
    return this.minimumInvestment.toFixed(2);
  }

  @Field(() => String, { description: 'ISO 4217 currency of every money field: USD.' })
  get currency(): string {
    return 'USD';
  }
}

/**
 * One protocol on one day: the metrics in force (carried forward from `dataDate` when nothing new
 * was reported), the profile facts the engine used, and the default-methodology result. The row
 * holds every input of the score, so `auditId` resolves to it.
 */
@Entity({ tableName: 'liquidity_days' })
@Unique({ properties: ['protocolId', 'asOf'] })
export class LiquidityDay {
  @PrimaryKey({ type: 'integer', autoincrement: true })
  id!: number;

  @Property({ type: 'uuid' })
  protocolId!: string;

  @Property({ type: 'string', length: 10, index: true })
  asOf!: string;

  @Property({ type: 'string', length: 10 })
  dataDate!: string;

  @Property({ type: 'double' })
  aumUsd!: number;

  @Property({ type: 'double', nullable: true })
  volumeUsd!: number | null;

  @Property({ type: 'integer', nullable: true })
  holders!: number | null;

  @Property({ type: 'double', nullable: true })
  topHolderPct!: number | null;

  @Property({ type: 'double', nullable: true })
  redemptionQueueUsd!: number | null;

  @Property({ type: 'double', nullable: true })
  navDeviationBps!: number | null;

  @Property({ type: 'string', length: 10, nullable: true })
  lastAttestationDate!: string | null;

  @Property({ type: 'integer' })
  redemptionFrequencyDays!: number;

  @Property({ type: 'integer' })
  noticePeriodDays!: number;

  @Property({ type: 'boolean' })
  redemptionGates!: boolean;

  @Property({ type: 'boolean' })
  audited!: boolean;

  @Property({ type: 'boolean' })
  qualifiedCustodian!: boolean;

  @Property({ type: 'string', length: 16 })
  regulatoryStatus!: EngineRegulatoryStatus;

  @Property({ type: 'double' })
  score!: number;

  @Property({ type: 'string', length: 10 })
  tier!: Tier;

  @Property({ type: 'string', length: 64, index: true })
  auditId!: string;
}

/**
 * The audit trail of profile-weighted results: the day whose inputs were used and the weights
 * and caps applied, keyed by the result's audit id. Default-methodology results need no row —
 * their audit id is on the day itself.
 */
@Entity({ tableName: 'liquidity_profile_audits' })
export class ProfileScoreAudit {
  @PrimaryKey({ type: 'string', length: 64 })
  auditId!: string;

  @Property({ type: 'integer' })
  dayId!: number;

  /** Kept after the profile is deleted: the audit outlives it. */
  @Property({ type: 'uuid' })
  profileId!: string;

  @Property({ type: 'json' })
  weights!: Weights;

  @Property({ type: 'json' })
  penaltyCaps!: PenaltyCaps;

  @Property({ type: DateTimeType })
  createdAt!: Date;
}

/**
 * A score that a later ingestion recomputed (late data filled a carried-forward day, or a
 * correction replaced a report): its inputs, weights and caps, so the audit id that was served
 * still resolves to exactly what produced it.
 */
@Entity({ tableName: 'liquidity_superseded_audits' })
export class SupersededAudit {
  @PrimaryKey({ type: 'string', length: 64 })
  auditId!: string;

  @Property({ type: 'uuid' })
  protocolId!: string;

  @Property({ type: 'string', length: 10 })
  asOf!: string;

  /** Null for the default-methodology score of the day. */
  @Property({ type: 'uuid', nullable: true })
  profileId!: string | null;

  @Property({ type: 'json' })
  inputs!: Record<string, unknown>;

  @Property({ type: 'json' })
  weights!: Weights;

  @Property({ type: 'json' })
  penaltyCaps!: PenaltyCaps;

  @Property({ type: DateTimeType })
  supersededAt!: Date;
}

@Entity({ tableName: 'liquidity_watchlists' })
export class Watchlist {
  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @Property({ type: 'uuid', unique: true })
  accountId!: string;

  /** Alert when a score moves by at least this many points in one ingestion; null = off. */
  @Property({ type: 'double', nullable: true })
  scoreChangeThreshold: number | null = 5;

  @Property({ type: 'boolean' })
  tierShift = true;

  /** Alert when AUM moves by at least this percentage; null = off. */
  @Property({ type: 'double', nullable: true })
  aumChangePct: number | null = 10;

  @Property({ type: 'boolean' })
  complianceEvents = true;

  @Property({ type: DateTimeType })
  createdAt!: Date;

  @Property({ type: DateTimeType })
  updatedAt!: Date;
}

@Entity({ tableName: 'liquidity_watchlist_items' })
@Unique({ properties: ['watchlistId', 'protocolId'] })
export class WatchlistItem {
  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @Property({ type: 'uuid', index: true })
  watchlistId!: string;

  @Property({ type: 'uuid', index: true })
  protocolId!: string;

  @Property({ type: DateTimeType })
  addedAt!: Date;
}

export enum WatchlistAlertKind {
  SCORE_CHANGE = 'SCORE_CHANGE',
  TIER_SHIFT = 'TIER_SHIFT',
  AUM_MOVE = 'AUM_MOVE',
  COMPLIANCE = 'COMPLIANCE',
}
registerEnumType(WatchlistAlertKind, { name: 'WatchlistAlertKind' });

@ObjectType({
  simpleResolvers: true,
  description: 'An alert raised by ingestion crossing a watchlist threshold.',
})
@Entity({ tableName: 'liquidity_watchlist_alerts' })
@Index({ properties: ['accountId', 'createdAt'] })
export class WatchlistAlert {
  @Field(() => ID)
  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @Field(() => ID)
  @Property({ type: 'uuid' })
  watchlistId!: string;

  @Property({ type: 'uuid' })
  accountId!: string;

  @Property({ type: 'uuid' })
  protocolId!: string;

  @Field(() => String)
  @Property({ type: 'string', length: 80 })
  slug!: string;

  @Field(() => WatchlistAlertKind)
  @Enum({ items: () => WatchlistAlertKind })
  kind!: WatchlistAlertKind;

  @Field(() => String)
  @Property({ type: 'string', length: 500 })
  message!: string;

  @Field(() => String, { description: 'Day of the data that raised it, YYYY-MM-DD.' })
  @Property({ type: 'string', length: 10 })
  asOf!: string;

  @Field(() => Date)
  @Property({ type: DateTimeType })
  createdAt!: Date;
}

@Entity({ tableName: 'liquidity_scoring_profiles' })
@Unique({ properties: ['accountId', 'name'] })
export class ScoringProfile {
  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @Property({ type: 'uuid' })
  accountId!: string;

  @Property({ type: 'string', length: 100 })
  name!: string;

  @Property({ type: 'json' })
  weights!: Weights;

  @Property({ type: 'json' })
  penaltyCaps!: PenaltyCaps;

  @Property({ type: DateTimeType })
  createdAt!: Date;

  @Property({ type: DateTimeType })
  updatedAt!: Date;
}

/** The audit log of scoring profiles: every create, update and delete with the before and after. */
@Entity({ tableName: 'liquidity_scoring_profile_changes' })
@Index({ properties: ['profileId', 'at'] })
export class ScoringProfileChange {
  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @Property({ type: 'uuid' })
  profileId!: string;

  @Property({ type: 'uuid' })
  accountId!: string;

  /** `api_key:<id>`, `oauth_token:<jti>`, `session:<id>`. */
  @Property({ type: 'string', length: 120 })
  actor!: string;

  @Property({ type: 'string', length: 10 })
  action!: 'CREATE' | 'UPDATE' | 'DELETE';

  @Property({ type: 'json', nullable: true })
  before!: Record<string, unknown> | null;

  @Property({ type: 'json', nullable: true })
  after!: Record<string, unknown> | null;

  @Property({ type: DateTimeType })
  at!: Date;
}

/** The audit log of protocol profiles: every create and update with the before and after. */
@Entity({ tableName: 'liquidity_protocol_changes' })
@Index({ properties: ['protocolId', 'at'] })
export class ProtocolChange {
  @PrimaryKey({ type: 'uuid' })
  id: string = randomUUID();

  @Property({ type: 'uuid' })
  protocolId!: string;

  /** `api_key:<id>`, `oauth_token:<jti>`, `session:<id>`, or `cli` for the operator CLI. */
  @Property({ type: 'string', length: 120 })
  actor!: string;

  @Property({ type: 'string', length: 10 })
  action!: 'CREATE' | 'UPDATE';

  @Property({ type: 'json', nullable: true })
  before!: Record<string, unknown> | null;

  @Property({ type: 'json', nullable: true })
  after!: Record<string, unknown> | null;

  @Property({ type: DateTimeType })
  at!: Date;
}

export const liquidityEntities = [
  Protocol,
  LiquidityDay,
  ProfileScoreAudit,
  Watchlist,
  WatchlistItem,
  WatchlistAlert,
  ScoringProfile,
  ScoringProfileChange,
  SupersededAudit,
  ProtocolChange,
];
