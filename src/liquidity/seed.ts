import type { EntityManager } from '@mikro-orm/knex';
import type { Clock } from '../kernel/clock.js';
import { mulberry32 } from '../kernel/random.js';
import {
  GovernanceMaturity,
  type LiquidityDay,
  Protocol,
  ProtocolCategory,
  RedemptionFrequency,
  RegulatoryStatus,
  type LiquidityTier,
} from './entities.js';
import { scoreProtocol, type ScoreInputs } from './engine/score.js';
import { bumpVersion } from '../db/versions.js';
import { insertDays, shiftDate, termsOf } from './days.js';

/**
 * Demo data: 40 fictional protocols and 420 days of daily metrics ending yesterday (by the
 * injected clock), from a seeded PRNG so every run produces the same data for the same day.
 * Scenarios (per category of eight): three steady protocols that stay L1 with weekly
 * attestations; two that drift down to ILLIQUID over the last 200 days and are still falling at
 * the end; one whose data stops 20 days before the end (stale, carried forward); one in
 * trouble for most of the period that recovers over the last 120 days; one in between.
 */
export const DEMO_DAYS = 420;
export const DEMO_PROTOCOLS = 40;
/** Drifting protocols decline over this many final days; they stop attesting for the last ATTESTATION_LAPSE. */
const DRIFT_DAYS = 200;
const ATTESTATION_LAPSE = 120;
/** Recovering protocols improve over this many final days, after a lapse in attestations. */
const RECOVERY_DAYS = 120;
const STALE_DAYS = 20;

export type Scenario = 'steady' | 'drift' | 'stale' | 'middle' | 'recovering';

export const DEMO_NAMES = [
  'Harbor Treasury',
  'Meridian Bills',
  'Northgate T-Bill',
  'Atlas Gilt',
  'Solace Notes',
  'Keystone Cash',
  'Beacon Sovereign',
  'Cobalt Treasury',
  'Fernwood Credit',
  'Granite Lending',
  'Ridgeline Trade Finance',
  'Juniper Receivables',
  'Lantern SME Credit',
  'Orchid Invoice',
  'Quarry Private Debt',
  'Tidewater Credit',
  'Elm Street Realty',
  'Skyline Residential',
  'Copperleaf Commercial',
  'Wharf Logistics Property',
  'Palisade Homes',
  'Marble Office',
  'Crescent Estates',
  'Delta Storage REIT',
  'Aurum Vault',
  'Silverline Bullion',
  'Verdant Carbon',
  'Prairie Grain',
  'Oreline Copper',
  'Saffron Commodities',
  'Obsidian Metals',
  'Basalt Energy Credits',
  'Gridway Solar',
  'Tollbridge Roads',
  'Aqueduct Water',
  'Fiberlane Networks',
  'Portside Terminals',
  'Windmere Power',
  'Railhaven Freight',
  'Datavault Centers',
];
const CATEGORIES = [
  ProtocolCategory.TREASURY,
  ProtocolCategory.PRIVATE_CREDIT,
  ProtocolCategory.REAL_ESTATE,
  ProtocolCategory.COMMODITY,
  ProtocolCategory.INFRASTRUCTURE,
];
const JURISDICTIONS = ['US', 'SG', 'CH', 'LU', 'GB', 'KY', 'BM', 'IE'];
const CUSTODIANS = ['Anchor Trust Co.', 'Bastion Custody', 'Keel Fiduciary', 'Lodestar Custody Bank'];
const AUDITORS = ['Ledger & Finch LLP', 'Morrow Audit', 'Pellucid Assurance'];
const CHAINS = ['ethereum', 'polygon', 'arbitrum', 'base', 'solana', 'avalanche', 'stellar'];

export function scenarioOf(index: number): Scenario {
  const slot = index % 8;
  if (slot < 3) return 'steady';
  if (slot === 3 || slot === 6) return 'drift';
  return slot === 5 ? 'stale' : slot === 7 ? 'recovering' : 'middle';
}

const unit = (x: number) => Math.min(1, Math.max(0, x));

export function slugOf(name: string): string {
  return name
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '');
}

export async function seedLiquidityDemo(em: EntityManager, services: { clock: Clock }): Promise<void> {
  const now = services.clock.now();
  const lastDay = shiftDate(now.toISOString().slice(0, 10), -1);
  const firstDay = shiftDate(lastDay, -(DEMO_DAYS - 1));
  const rows: Array<Omit<LiquidityDay, 'id'>> = [];
  const protocols: Protocol[] = [];

  for (let i = 0; i < DEMO_PROTOCOLS; i++) {
    const rand = mulberry32(1000 + i);
    const pick = <T>(items: readonly T[]): T => items[Math.floor(rand() * items.length)]!;
    const scenario = scenarioOf(i);
    const name = DEMO_NAMES[i]!;
    const category = CATEGORIES[Math.floor(i / 8)]!;
    const strong = scenario === 'steady';
    const protocol = Object.assign(new Protocol(), {
      slug: slugOf(name),
      name,
      category,
      active: true,
      description: `${name} is a fictional tokenized ${category.toLowerCase().replace('_', ' ')} protocol used for demonstrations.`,
      tokenSymbol: name.replace(/[^A-Z]/g, '').slice(0, 4) + 'X',
      issuer: `${name} Issuer Ltd.`,
      jurisdiction: pick(JURISDICTIONS),
      regulatoryStatus: strong
        ? RegulatoryStatus.REGISTERED
        : pick([
            RegulatoryStatus.EXEMPT,
            RegulatoryStatus.PENDING,
            RegulatoryStatus.UNREGULATED,
            RegulatoryStatus.REGISTERED,
          ]),
      custodian: pick(CUSTODIANS),
      qualifiedCustodian: strong || rand() < 0.6,
      auditor: strong || rand() < 0.7 ? pick(AUDITORS) : null,
      governanceModel: pick(['CORPORATE_BOARD', 'TRUSTEE', 'DAO', 'MULTISIG']),
      governanceMaturity: strong
        ? GovernanceMaturity.MATURE
        : pick([GovernanceMaturity.NASCENT, GovernanceMaturity.DEVELOPING, GovernanceMaturity.MATURE]),
      chains: [...new Set([pick(CHAINS), pick(CHAINS)])].sort(),
      tokenStandard: pick(['ERC-20', 'ERC-3643', 'ERC-4626', 'SPL']),
      redemptionFrequency: strong
        ? RedemptionFrequency.DAILY
        : pick([
            RedemptionFrequency.DAILY,
            RedemptionFrequency.WEEKLY,
            RedemptionFrequency.MONTHLY,
            RedemptionFrequency.QUARTERLY,
          ]),
      noticePeriodDays: strong ? 0 : Math.floor(rand() * 15),
      redemptionGates: !strong && rand() < 0.5,
      minimumInvestment: pick([1_000, 10_000, 100_000, 250_000, 1_000_000]),
      yieldPct:
        Math.round((category === ProtocolCategory.TREASURY ? 4 + rand() : 6 + rand() * 6) * 100) / 100,
      yieldAttribution:
        category === ProtocolCategory.TREASURY
          ? [{ source: 'Government bill coupons', sharePct: 100 }]
          : [
              { source: 'Underlying asset income', sharePct: 85 },
              { source: 'Fees and incentives', sharePct: 15 },
            ],
      launchDate: shiftDate(firstDay, -Math.floor(100 + rand() * 900)),
      kycRequired: true,
      accreditedOnly: rand() < 0.5,
      sanctionsScreening: true,
      transferRestrictions: rand() < 0.5 ? 'Whitelisted wallets only' : 'Transfers between verified holders',
      regulatoryFilings: [
        {
          regulator: pick(['SEC', 'MAS', 'FINMA', 'CSSF', 'FCA']),
          reference: `RF-${1000 + i}`,
          filedOn: shiftDate(firstDay, -30),
        },
      ],
      website: `https://${slugOf(name)}.example`,
      aum: 0,
      staleNotified: false,
      createdAt: now,
      updatedAt: now,
    });
    const terms = termsOf(protocol);

    let aum = Math.exp(Math.log(strong ? 800e6 : 40e6) + rand() * Math.log(strong ? 6 : 20));
    const turnover = strong ? 0.006 + rand() * 0.004 : 0.0005 + rand() * 0.004;
    let holders = Math.floor(strong ? 8_000 + rand() * 20_000 : 200 + rand() * 5_000);
    const topHolder = strong ? 5 + rand() * 10 : 10 + rand() * 25;
    // Steady issuers attest weekly (a monthly cycle would saw the score by ~2.5 points); others fortnightly.
    const attestEvery = strong ? 7 : 14;
    const stopAt = scenario === 'stale' ? DEMO_DAYS - STALE_DAYS : DEMO_DAYS;
    let attestation = shiftDate(firstDay, -Math.floor(rand() * 7));
    let last: ScoreInputs | null = null;
    for (let d = 0; d < DEMO_DAYS; d++) {
      const asOf = shiftDate(firstDay, d);
      if (d < stopAt || !last) {
        // 0 → 1 over the final DRIFT_DAYS for drifting protocols: outflows, a growing queue, NAV discount, concentration.
        const decline = scenario === 'drift' ? unit((d - (DEMO_DAYS - DRIFT_DAYS)) / DRIFT_DAYS) : 0;
        // 0 → 1 over the final RECOVERY_DAYS for recovering protocols; before that they are fully stressed.
        const recovery =
          scenario === 'recovering' ? unit((d - (DEMO_DAYS - RECOVERY_DAYS)) / RECOVERY_DAYS) : 0;
        const stress = scenario === 'recovering' ? 1 - recovery : decline;
        aum *= 1 + (rand() - 0.5) * 0.01 - decline * 0.008 + recovery * 0.004 + (strong ? 0.0004 : 0);
        holders = Math.max(10, holders + Math.round((rand() - 0.48) * 20 + recovery * 5));
        const lapsed =
          (scenario === 'drift' && d >= DEMO_DAYS - ATTESTATION_LAPSE) ||
          (scenario === 'recovering' && d >= 150 && recovery === 0);
        if (d % attestEvery === 0 && !lapsed) attestation = asOf;
        last = {
          asOf,
          dataDate: asOf,
          aumUsd: Math.round(aum * 100) / 100,
          volumeUsd:
            rand() < 0.03 && !strong
              ? null
              : Math.round(aum * turnover * (0.5 + rand()) * (1 - stress * 0.8)),
          holders,
          topHolderPct: Math.round((topHolder + stress * 10) * 100) / 100,
          redemptionQueueUsd: Math.round(aum * (strong ? rand() * 0.005 : rand() * 0.02 + stress * 0.1)),
          navDeviationBps: Math.round(((rand() - 0.5) * (strong ? 10 : 40) + stress * 80) * 10) / 10,
          lastAttestationDate: attestation,
          ...terms,
        };
      }
      const inputs: ScoreInputs = { ...last, asOf };
      const result = scoreProtocol(inputs);
      rows.push({
        protocolId: protocol.id,
        ...inputs,
        score: result.score,
        tier: result.tier,
        auditId: result.auditId,
      });
      if (d === DEMO_DAYS - 1) {
        protocol.aum = inputs.aumUsd;
        protocol.liquidityScore = result.score;
        protocol.liquidityTier = result.tier as LiquidityTier;
        protocol.scoreAsOf = asOf;
        protocol.lastDataAt = inputs.dataDate;
        protocol.staleNotified = scenario === 'stale';
      }
    }
    protocols.push(protocol);
  }
  em.persist(protocols);
  await em.flush();
  await insertDays(em, rows);
  // seedDemo announces the change once its transaction has committed.
  await bumpVersion(em, 'liquidity');
}
