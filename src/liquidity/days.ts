import type { EntityManager } from '@mikro-orm/knex';
import { knexIn } from '../db/knex.js';
import { FREQUENCY_DAYS, LiquidityDay, type Protocol } from './entities.js';
import type { ScoreInputs } from './engine/score.js';

/** The stored liquidity days: the engine inputs each holds, the latest per protocol, bulk inserts. */

/** The engine inputs a stored day holds. */
export function inputsOf(day: LiquidityDay): ScoreInputs {
  return {
    asOf: day.asOf,
    dataDate: day.dataDate,
    aumUsd: day.aumUsd,
    volumeUsd: day.volumeUsd,
    holders: day.holders,
    topHolderPct: day.topHolderPct,
    redemptionQueueUsd: day.redemptionQueueUsd,
    navDeviationBps: day.navDeviationBps,
    lastAttestationDate: day.lastAttestationDate,
    redemptionFrequencyDays: day.redemptionFrequencyDays,
    noticePeriodDays: day.noticePeriodDays,
    redemptionGates: day.redemptionGates,
    audited: day.audited,
    qualifiedCustodian: day.qualifiedCustodian,
    regulatoryStatus: day.regulatoryStatus,
  };
}

/** The profile facts of a protocol the engine uses, as of now. */
export function termsOf(
  p: Protocol,
): Pick<
  ScoreInputs,
  | 'redemptionFrequencyDays'
  | 'noticePeriodDays'
  | 'redemptionGates'
  | 'audited'
  | 'qualifiedCustodian'
  | 'regulatoryStatus'
> {
  return {
    redemptionFrequencyDays: FREQUENCY_DAYS[p.redemptionFrequency],
    noticePeriodDays: p.noticePeriodDays,
    redemptionGates: p.redemptionGates,
    audited: Boolean(p.auditor),
    qualifiedCustodian: p.qualifiedCustodian,
    regulatoryStatus: p.regulatoryStatus,
  };
}

/** The latest stored day of each protocol, in one query. */
export async function latestDays(
  em: EntityManager,
  protocols: Protocol[],
): Promise<Map<string, LiquidityDay>> {
  const scored = protocols.filter((p) => p.scoreAsOf);
  if (scored.length === 0) return new Map();
  const dates = [...new Set(scored.map((p) => p.scoreAsOf!))];
  const days = await em.find(LiquidityDay, {
    protocolId: { $in: scored.map((p) => p.id) },
    asOf: { $in: dates },
  });
  const wanted = new Map(scored.map((p) => [p.id, p.scoreAsOf]));
  return new Map(days.filter((d) => wanted.get(d.protocolId) === d.asOf).map((d) => [d.protocolId, d]));
}

export function shiftDate(date: string, days: number): string {
  return new Date(Date.parse(`${date}T00:00:00Z`) + days * 86_400_000).toISOString().slice(0, 10);
}

/**
 * Bulk insert of day rows straight through knex (inside the caller's transaction): the ORM's
 * per-entity bookkeeping costs seconds for the demo's 16,800 rows.
 */
export async function insertDays(em: EntityManager, days: Array<Omit<LiquidityDay, 'id'>>): Promise<void> {
  const knex = knexIn(em);
  for (let i = 0; i < days.length; i += 500) {
    const chunk = days.slice(i, i + 500).map((d) => ({
      protocol_id: d.protocolId,
      as_of: d.asOf,
      data_date: d.dataDate,
      aum_usd: d.aumUsd,
      volume_usd: d.volumeUsd,
      holders: d.holders,
      top_holder_pct: d.topHolderPct,
      redemption_queue_usd: d.redemptionQueueUsd,
      nav_deviation_bps: d.navDeviationBps,
      last_attestation_date: d.lastAttestationDate,
      redemption_frequency_days: d.redemptionFrequencyDays,
      notice_period_days: d.noticePeriodDays,
      redemption_gates: d.redemptionGates,
      audited: d.audited,
      qualified_custodian: d.qualifiedCustodian,
      regulatory_status: d.regulatoryStatus,
      score: d.score,
      tier: d.tier,
      audit_id: d.auditId,
    }));
    await knex('liquidity_days').insert(chunk);
  }
}
