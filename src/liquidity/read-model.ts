import { randomUUID } from 'node:crypto';
import { IsolationLevel } from '@mikro-orm/core';
import type { EntityManager } from '@mikro-orm/knex';
import type { FastifyBaseLogger } from 'fastify';
import { readingTransaction, type Database } from '../db/orm.js';
import { knexIn } from '../db/knex.js';
import { findPlain } from '../db/plain.js';
import { readVersion, type ReadModelVersions } from '../db/versions.js';
import type {} from '../gateway/schema/context.js';
import type { DomainEvent } from '../kernel/events.js';
import { Lru } from '../kernel/lru.js';
import type { MaybePromise } from '../kernel/maybe-async.js';
import { FREQUENCY_DAYS, LiquidityDay, Protocol, ProtocolCategory, type LiquidityTier } from './entities.js';
import { redemptionComponent, type Tier } from './engine/score.js';
import { indices, INDEX_NAMES, type BacktestPair, type IndexCode } from './engine/series.js';

/*
 * The published liquidity state, in memory: every protocol with its profile, the latest score of
 * each (components, penalties, audit id), the last 30 stored days, a year of (score, tier, AUM) for
 * backtests, and the market aggregates with the five indices for the whole market and each
 * category. It changes when a day is ingested or a protocol is written, a few times a day, while
 * dashboards read it thousands of times a second; so it is loaded whole into an immutable
 * `Published` snapshot and swapped at once when it changes. A read holds one snapshot for its whole
 * answer and so never sees half of an ingest.
 *
 * Staying current (src/liquidity/README.md, "Read model"):
 * - a write in this process announces itself after commit (src/db/versions.ts); the next read waits
 *   for the rebuild, so a client reads its own write;
 * - a write in another gateway reaches this one through the event bus (LIQUIDITY_CHANGED);
 * - anything else (the CLI, a lost bus message) is found by polling `read_model_versions` every
 *   READ_MODEL_POLL.
 */

export const HISTORY_DAYS = 30;
export const BACKTEST_MAX = 365;

/** The bus message one gateway sends the others when it has committed a change to the published state. */
export const LIQUIDITY_CHANGED = 'liquidity.published_changed';

const TIERS: Tier[] = ['L1', 'L2', 'L3', 'ILLIQUID'];
const DAY_MS = 86_400_000;
const MEMO_LIMIT = 64;

export interface MarketView {
  category: ProtocolCategory | null;
  asOf: string | null;
  protocolCount: number;
  totalAumUsd: number;
  averageScore: number | null;
  averageYieldPct: number | null;
  tierDistribution: Record<LiquidityTier, number>;
  indices: Array<{ code: IndexCode; name: string; score: number | null }>;
}

/** A year of one protocol's days, by offset from the snapshot's first backtest day (NaN: no row). */
interface Series {
  score: Float64Array;
  aum: Float64Array;
  tier: Uint8Array;
}

function dayNumber(date: string): number {
  return Date.parse(`${date}T00:00:00Z`) / DAY_MS;
}

function round2(x: number): number {
  return Math.round(x * 100) / 100;
}

/** Market aggregates and indices over the scored protocols given. */
function marketOf(protocols: Protocol[], category: ProtocolCategory | null): MarketView {
  const scored = protocols.filter((p) => p.liquidityScore !== null && p.liquidityScore !== undefined);
  const totalAum = scored.reduce((s, p) => s + p.aum, 0);
  const tierDistribution = { L1: 0, L2: 0, L3: 0, ILLIQUID: 0 } as Record<LiquidityTier, number>;
  for (const p of scored) tierDistribution[p.liquidityTier!]++;
  const idx = indices(
    scored.map((p) => ({
      category: p.category,
      aumUsd: p.aum,
      score: p.liquidityScore!,
      tier: p.liquidityTier!,
      redemption: redemptionComponent({
        redemptionFrequencyDays: FREQUENCY_DAYS[p.redemptionFrequency],
        noticePeriodDays: p.noticePeriodDays,
        redemptionGates: p.redemptionGates,
      }),
    })),
  );
  return {
    category,
    asOf: scored.reduce<string | null>(
      (max, p) => (p.scoreAsOf && (!max || p.scoreAsOf > max) ? p.scoreAsOf : max),
      null,
    ),
    protocolCount: scored.length,
    totalAumUsd: totalAum,
    averageScore: scored.length
      ? round2(scored.reduce((s, p) => s + p.liquidityScore!, 0) / scored.length)
      : null,
    averageYieldPct:
      totalAum > 0 ? round2(scored.reduce((s, p) => s + p.aum * p.yieldPct, 0) / totalAum) : null,
    tierDistribution,
    indices: (Object.keys(idx) as IndexCode[]).map((code) => ({
      code,
      name: INDEX_NAMES[code],
      score: idx[code],
    })),
  };
}

/** Raw `liquidity_days` rows (snake_case, SQLite booleans as 0/1) as read-only LiquidityDay objects. */
function dayOf(r: Record<string, unknown>): LiquidityDay {
  return Object.setPrototypeOf(
    {
      id: Number(r.id),
      protocolId: r.protocol_id as string,
      asOf: r.as_of as string,
      dataDate: r.data_date as string,
      aumUsd: Number(r.aum_usd),
      volumeUsd: r.volume_usd === null ? null : Number(r.volume_usd),
      holders: r.holders === null ? null : Number(r.holders),
      topHolderPct: r.top_holder_pct === null ? null : Number(r.top_holder_pct),
      redemptionQueueUsd: r.redemption_queue_usd === null ? null : Number(r.redemption_queue_usd),
      navDeviationBps: r.nav_deviation_bps === null ? null : Number(r.nav_deviation_bps),
      lastAttestationDate: r.last_attestation_date as string | null,
      redemptionFrequencyDays: Number(r.redemption_frequency_days),
      noticePeriodDays: Number(r.notice_period_days),
      redemptionGates: Boolean(r.redemption_gates),
      audited: Boolean(r.audited),
      qualifiedCustodian: Boolean(r.qualified_custodian),
      regulatoryStatus: r.regulatory_status as LiquidityDay['regulatoryStatus'],
      score: Number(r.score),
      tier: r.tier as Tier,
      auditId: r.audit_id as string,
    },
    LiquidityDay.prototype,
  ) as LiquidityDay;
}

/** One immutable version of the published state. */
export class Published {
  readonly bySlug: Map<string, Protocol>;
  /** Active protocols, by slug. */
  readonly active: Protocol[];
  /** Each protocol's last HISTORY_DAYS stored days, oldest first. */
  readonly history: Map<string, LiquidityDay[]>;
  /** Each scored protocol's latest day (the one its `scoreAsOf` names). */
  readonly latest: Map<string, LiquidityDay>;
  readonly markets: Map<ProtocolCategory | null, MarketView>;
  private readonly series: Map<string, Series>;
  private readonly seriesStart: number;
  /** The newest stored day of any protocol, '' when there is none. */
  readonly newestDay: string;

  constructor(
    readonly version: number,
    protocols: Protocol[],
    days: LiquidityDay[],
    backtestRows: Array<{ protocolId: string; asOf: string; score: number; tier: Tier; aumUsd: number }>,
  ) {
    this.bySlug = new Map(protocols.map((p) => [p.slug, p]));
    this.active = protocols.filter((p) => p.active);
    this.history = new Map();
    for (const d of days) {
      const list = this.history.get(d.protocolId);
      if (list) list.push(d);
      else this.history.set(d.protocolId, [d]);
    }
    this.latest = new Map();
    for (const p of protocols) {
      const day = p.scoreAsOf ? this.history.get(p.id)?.find((d) => d.asOf === p.scoreAsOf) : undefined;
      if (day) this.latest.set(p.id, day);
    }
    this.markets = new Map<ProtocolCategory | null, MarketView>([[null, marketOf(this.active, null)]]);
    for (const c of Object.values(ProtocolCategory))
      this.markets.set(
        c,
        marketOf(
          this.active.filter((p) => p.category === c),
          c,
        ),
      );

    this.newestDay = backtestRows.reduce((max, r) => (r.asOf > max ? r.asOf : max), '');
    this.seriesStart = this.newestDay ? dayNumber(this.newestDay) - BACKTEST_MAX : 0;
    this.series = new Map();
    for (const r of backtestRows) {
      let s = this.series.get(r.protocolId);
      if (!s) {
        s = {
          score: new Float64Array(BACKTEST_MAX + 1).fill(NaN),
          aum: new Float64Array(BACKTEST_MAX + 1),
          tier: new Uint8Array(BACKTEST_MAX + 1),
        };
        this.series.set(r.protocolId, s);
      }
      const at = dayNumber(r.asOf) - this.seriesStart;
      s.score[at] = r.score;
      s.aum[at] = r.aumUsd;
      s.tier[at] = TIERS.indexOf(r.tier);
    }
  }

  private readonly memo = new Lru<string, unknown>({ maxEntries: MEMO_LIMIT });

  /**
   * A value derived from this snapshot alone (e.g. every latest score under one scoring profile),
   * computed once per snapshot. Bounded: profiles are per account, so the least recently used
   * goes past MEMO_LIMIT entries rather than the cache growing with the number of profiles read.
   */
  derived<T>(key: string, compute: () => T): T {
    if (this.memo.has(key)) return this.memo.get(key) as T;
    const value = compute();
    this.memo.set(key, value);
    return value;
  }

  /** The (start, end) pairs of a backtest `lookback` days back from the newest stored day. */
  backtestPairs(lookback: number): { from: string; to: string; pairs: BacktestPair[] } {
    if (!this.newestDay) return { from: '', to: '', pairs: [] };
    const end = BACKTEST_MAX;
    const start = BACKTEST_MAX - lookback;
    const pairs: BacktestPair[] = [];
    for (const s of this.series.values()) {
      if (Number.isNaN(s.score[start]!) || Number.isNaN(s.score[end]!)) continue;
      pairs.push({
        start: { score: s.score[start]!, tier: TIERS[s.tier[start]!]!, aumUsd: s.aum[start]! },
        end: { score: s.score[end]!, tier: TIERS[s.tier[end]!]!, aumUsd: s.aum[end]! },
      });
    }
    const date = (n: number) => new Date((this.seriesStart + n) * DAY_MS).toISOString().slice(0, 10);
    return { from: date(start), to: date(end), pairs };
  }

  /** Loads one consistent version: every query of the load sees the same committed state. */
  static async load(db: Database): Promise<Published> {
    const em = db.em();
    const work = async (tx: EntityManager): Promise<Published> => {
      const version = await readVersion(tx, 'liquidity');
      const trx = knexIn(tx);
      const protocols = await findPlain(tx, Protocol, {}, { orderBy: { slug: 'asc' } });
      const recent = (await trx
        .select('*')
        .from(
          trx('liquidity_days')
            .select('*')
            .select(trx.raw('row_number() over (partition by protocol_id order by as_of desc) as recency'))
            .as('d'),
        )
        .where('recency', '<=', HISTORY_DAYS)
        .orderBy([{ column: 'protocol_id' }, { column: 'as_of' }])) as Array<Record<string, unknown>>;
      const newest = (await trx('liquidity_days').max({ day: 'as_of' }).first()) as
        { day: string | null } | undefined;
      const from = newest?.day
        ? new Date((dayNumber(newest.day) - BACKTEST_MAX) * DAY_MS).toISOString().slice(0, 10)
        : '';
      const yearRows = from
        ? ((await trx('liquidity_days')
            .select('protocol_id', 'as_of', 'score', 'tier', 'aum_usd')
            .where('as_of', '>=', from)) as Array<Record<string, unknown>>)
        : [];
      return new Published(
        version,
        protocols,
        recent.map(dayOf),
        yearRows.map((r) => ({
          protocolId: r.protocol_id as string,
          asOf: r.as_of as string,
          score: Number(r.score),
          tier: r.tier as Tier,
          aumUsd: Number(r.aum_usd),
        })),
      );
    };
    // READ COMMITTED (PostgreSQL's default) gives each statement its own snapshot; a SQLite
    // transaction reads one snapshot anyway, and this one takes no write lock.
    return db.dialect === 'postgresql'
      ? em.transactional(work, { isolationLevel: IsolationLevel.REPEATABLE_READ, readOnly: true })
      : readingTransaction(em, work);
  }
}

/** Keeps this process's snapshot current; see the top of this file. */
export class LiquidityReadModel {
  private snapshot: Published | null = null;
  /**
   * Bumped by every change committed in this process: a snapshot loaded before the last bump is
   * not served (a client reads its own write). Changes heard of from elsewhere do not bump it: the
   * previous snapshot is served until the new one is loaded.
   */
  private wanted = 0;
  private loadedFor = -1;
  private loading: Promise<void> | null = null;
  /** A change arrived during a load: load again once it is done. */
  private again = false;
  private timer: NodeJS.Timeout | undefined;
  private readonly stops: Array<() => void> = [];

  /** The version of the snapshot being served (0 until the first load), for metrics. */
  get servedVersion(): number {
    return this.snapshot?.version ?? 0;
  }

  constructor(
    private readonly db: Database,
    versions: ReadModelVersions,
    private readonly logger: FastifyBaseLogger,
    private readonly pollMs: number,
  ) {
    this.stops.push(versions.onChange(() => this.changed(true)));
  }

  /**
   * The current snapshot, as it is when it is current; waits for a rebuild when this process
   * committed a change since the last one.
   */
  current(): MaybePromise<Published> {
    if (this.snapshot && this.loadedFor >= this.wanted) return this.snapshot;
    return this.until(this.wanted);
  }

  /**
   * Listens for changes made by other gateways (`publish` sends ours to them) and starts the
   * version poll. The bus is optional: without it the poll alone keeps processes in step.
   */
  start(bus?: {
    subscribe(listener: (event: DomainEvent) => void): () => void;
    publish(events: DomainEvent[]): Promise<void>;
  }): void {
    if (bus) {
      this.stops.push(bus.subscribe((event) => event.type === LIQUIDITY_CHANGED && this.changed(false)));
      this.announce = () =>
        void bus.publish([
          {
            id: randomUUID(),
            type: LIQUIDITY_CHANGED,
            occurredAt: new Date(),
            accountId: null,
            payload: {},
          },
        ]);
    }
    this.timer = setInterval(() => void this.poll(), this.pollMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    for (const stop of this.stops.splice(0)) stop();
  }

  private announce: () => void = () => {};

  /** A committed change; one made here is also told to the other gateways. */
  private changed(local: boolean): void {
    if (local) {
      this.wanted++;
      this.announce();
    }
    // Rebuilt at once so that readers rarely wait (a failure is retried by the next change or read);
    // a model nobody has read yet is loaded by its first read instead.
    if (!this.snapshot) return;
    this.reload().catch((e: unknown) => this.logger.error({ err: e }, 'liquidity read model rebuild failed'));
  }

  private async poll(): Promise<void> {
    // A load in progress reads the newest version anyway.
    if (this.loading) return;
    try {
      const version = await readVersion(this.db.em(), 'liquidity');
      if (this.snapshot && version !== this.snapshot.version) this.changed(false);
    } catch (e) {
      this.logger.warn({ err: e }, 'liquidity read model version check failed');
    }
  }

  private async until(target: number): Promise<Published> {
    while (!this.snapshot || this.loadedFor < target) await (this.loading ?? this.reload());
    return this.snapshot;
  }

  /** One load at a time; a change heard of during a load starts another after it. */
  private reload(): Promise<void> {
    if (this.loading) {
      this.again = true;
      return this.loading;
    }
    const target = this.wanted;
    this.loading = Published.load(this.db)
      .then((snapshot) => {
        this.snapshot = snapshot;
        this.loadedFor = Math.max(this.loadedFor, target);
      })
      .finally(() => {
        this.loading = null;
        if (this.again) {
          this.again = false;
          this.reload().catch((e: unknown) =>
            this.logger.error({ err: e }, 'liquidity read model rebuild failed'),
          );
        }
      });
    return this.loading;
  }
}

declare module '../gateway/schema/context.js' {
  interface AppServices {
    /**
     * The liquidity read model, made by the composition root (src/app.ts) and started by the
     * liquidity module: resolvers and the export route read it through their context, because
     * type-graphql builds the resolver instances and they cannot take it as a constructor argument.
     */
    readModel: LiquidityReadModel;
  }
}
