import type { FastifyBaseLogger } from 'fastify';
import type { Config, PlanLimit } from '../../config.js';
import { MINUTE, type Clock } from '../../kernel/clock.js';
import { openCounterStore, type CounterStore } from '../../kernel/counters.js';
import { AppError } from '../../kernel/errors.js';
import { andThen, type MaybePromise } from '../../kernel/maybe-async.js';
import { planLabel } from '../../kernel/plans.js';
import type { Principal } from '../../kernel/principal.js';
import type { Requirements } from './access.js';
import type { Metrics } from '../observability/metrics.js';
import type { Admission, AdmissionResult } from '../schema/context.js';

/**
 * Rate limits and quotas. Fixed windows: the minute window is the UTC clock minute, the quota
 * window the UTC calendar month. A counter is incremented first and the call admitted only if
 * the new value is within the limit, so concurrent callers — in one process or in several
 * sharing one Redis — can never be admitted more often than the limit between them.
 *
 * Budgets: an operation that touches a plan-gated field (the liquidity API) counts against the
 * account's plan budget, so all keys of an account share it; anything else counts against a
 * per-credential port-operations budget.
 */

interface Window {
  id: string;
  /** Epoch ms when the window ends. */
  endsAt: number;
}

/** The last minute window made: every call of one minute shares it. */
let lastMinute: Window = { id: '', endsAt: 0 };

function minuteWindow(now: Date): Window {
  const start = Math.floor(now.getTime() / MINUTE) * MINUTE;
  if (lastMinute.endsAt !== start + MINUTE) lastMinute = { id: `m${start / MINUTE}`, endsAt: start + MINUTE };
  return lastMinute;
}

function monthWindow(now: Date): Window {
  const endsAt = Date.UTC(now.getUTCFullYear(), now.getUTCMonth() + 1, 1);
  return { id: `M${now.toISOString().slice(0, 7)}`, endsAt };
}

const seconds = (ms: number) => Math.max(1, Math.ceil(ms / 1000));

interface Budget {
  /** Whose counters: the account (plan budget) or one credential (port-operations budget). */
  subject: string;
  limits: PlanLimit;
  planBudget: boolean;
  /** The counter key of the last minute window this budget was spent in, and that window. */
  minuteKey?: { window: Window; key: string };
}

/** The counter key of `budget` in `minute`, written once per budget and minute. */
function minuteKeyOf(budget: Budget, minute: Window): string {
  const known = budget.minuteKey;
  if (known?.window === minute) return known.key;
  const key = `${budget.subject}:${minute.id}`;
  budget.minuteKey = { window: minute, key };
  return key;
}

/**
 * A principal's budgets, made once per principal object: a cached credential presents the same
 * principal on every call, so its subject strings are not written again per request.
 */
interface Budgets {
  plan?: Budget;
  credential?: Budget;
}

export class RateLimiter implements Admission {
  private readonly budgets = new WeakMap<Principal, Budgets>();

  constructor(
    private readonly config: Pick<Config, 'planLimits' | 'portOpsPerMinute' | 'sandboxPerMinute'>,
    private readonly clock: Clock,
    private readonly store: CounterStore,
    private readonly metrics?: Pick<Metrics, 'refusal'>,
  ) {}

  /**
   * Plan-gated operations (the liquidity API) spend the account's plan budget. Admins pass plan
   * gates, so their calls are not charged to the account's plan (an Observer account's operator
   * would otherwise be refused at 0 per minute): like everything else they spend a per-credential
   * budget. A sandbox key's plan-gated calls spend its real account's plan budget (a sandbox is no
   * way around a quota), and everything else its own small per-key budget.
   */
  private budgetOf(principal: Principal, requirements: Requirements): Budget {
    const planBudget = requirements.plan !== undefined && !principal.scopes.has('admin');
    if (!planBudget) return this.credentialBudget(principal);
    const budgets = this.budgetsOf(principal);
    return (budgets.plan ??= {
      subject: `acct:${principal.sandboxOf ?? principal.accountId}`,
      limits: this.config.planLimits[principal.plan],
      planBudget,
    });
  }

  private credentialBudget(principal: Principal): Budget {
    const budgets = this.budgetsOf(principal);
    if (budgets.credential) return budgets.credential;
    const perMinute = principal.sandboxOf ? this.config.sandboxPerMinute : this.config.portOpsPerMinute;
    return (budgets.credential = {
      subject: `cred:${principal.credential.kind}:${principal.credential.id}`,
      limits: { perMinute, perMonth: null },
      planBudget: false,
    });
  }

  private budgetsOf(principal: Principal): Budgets {
    let budgets = this.budgets.get(principal);
    if (!budgets) this.budgets.set(principal, (budgets = {}));
    return budgets;
  }

  private minuteHeaders(limits: PlanLimit, used: number, minute: Window): Record<string, string> {
    return {
      'X-RateLimit-Limit': String(limits.perMinute),
      'X-RateLimit-Remaining': String(Math.max(0, limits.perMinute - used)),
      'X-RateLimit-Reset': String(Math.ceil(minute.endsAt / 1000)),
    };
  }

  /** The budget's headers without spending from it: for answers that refuse the call (402, 403). */
  async peek(principal: Principal, requirements: Requirements): Promise<Record<string, string>> {
    const minute = minuteWindow(this.clock.now());
    const budget = this.budgetOf(principal, requirements);
    return this.minuteHeaders(budget.limits, await this.store.get(minuteKeyOf(budget, minute)), minute);
  }

  /**
   * Synchronous with the in-process store (no promise on the hot path), a promise with Redis.
   * A sandbox key's plan-gated call must pass its own per-key budget as well as the plan's.
   */
  admit(principal: Principal, requirements: Requirements): MaybePromise<AdmissionResult> {
    const budget = this.budgetOf(principal, requirements);
    if (!principal.sandboxOf || !budget.planBudget) return this.spend(principal, budget);
    return andThen(this.spend(principal, this.credentialBudget(principal)), () =>
      this.spend(principal, budget),
    );
  }

  private spend(principal: Principal, budget: Budget): MaybePromise<AdmissionResult> {
    const now = this.clock.now();
    const minute = minuteWindow(now);
    const used = this.store.increment(minuteKeyOf(budget, minute), minute.endsAt - now.getTime() + 1000);
    return andThen(used, (count) => this.afterMinute(principal, budget, now, minute, count));
  }

  private afterMinute(
    principal: Principal,
    { subject, limits, planBudget }: Budget,
    now: Date,
    minute: Window,
    used: number,
  ): MaybePromise<AdmissionResult> {
    const headers = this.minuteHeaders(limits, used, minute);
    if (used > limits.perMinute) {
      this.metrics?.refusal('rate_limit', principal.plan);
      const retryAfter = String(seconds(minute.endsAt - now.getTime()));
      const scope = planBudget
        ? `the ${planLabel(principal.plan)} plan allows`
        : principal.sandboxOf
          ? 'sandbox keys allow'
          : 'port operations allow';
      throw new AppError(
        'RATE_LIMIT_EXCEEDED',
        `Rate limit exceeded: ${scope} ${limits.perMinute} requests per minute; retry in ${retryAfter} s`,
        { limit: limits.perMinute, retryAfterSeconds: Number(retryAfter) },
        { ...headers, 'Retry-After': retryAfter },
      );
    }
    const perMonth = limits.perMonth;
    if (perMonth === null) return { headers };
    const month = monthWindow(now);
    const spent = this.store.increment(`${subject}:${month.id}`, month.endsAt - now.getTime() + 60_000);
    return andThen(spent, (count) => this.afterMonth(principal, perMonth, now, month, count, headers));
  }

  private afterMonth(
    principal: Principal,
    perMonth: number,
    now: Date,
    month: Window,
    spent: number,
    headers: Record<string, string>,
  ): AdmissionResult {
    headers['X-Quota-Limit'] = String(perMonth);
    headers['X-Quota-Remaining'] = String(Math.max(0, perMonth - spent));
    headers['X-Quota-Reset'] = String(Math.ceil(month.endsAt / 1000));
    if (spent > perMonth) {
      this.metrics?.refusal('quota', principal.plan);
      const retryAfter = String(seconds(month.endsAt - now.getTime()));
      const renewsAt = new Date(month.endsAt).toISOString();
      throw new AppError(
        'LIMIT_REACHED',
        `Monthly quota reached: the ${planLabel(principal.plan)} plan includes ${perMonth} calls per calendar month (UTC); it renews on ${renewsAt}`,
        { quota: perMonth, renewsAt },
        { ...headers, 'Retry-After': retryAfter },
      );
    }
    return { headers };
  }

  close(): Promise<void> {
    return this.store.close();
  }
}

/** In Redis when REDIS_URL is set (one budget across processes), otherwise in this process. */
export async function createRateLimiter(
  config: Config,
  clock: Clock,
  logger: Pick<FastifyBaseLogger, 'warn'>,
  metrics?: Pick<Metrics, 'refusal'>,
): Promise<RateLimiter> {
  const store = await openCounterStore({
    redisUrl: config.redisUrl,
    prefix: `${config.redisPrefix}:rl:`,
    clock,
    report: (err) =>
      logger.warn(
        { err },
        'rate-limit counters: Redis did not answer; counting in this process until it does',
      ),
  });
  return new RateLimiter(config, clock, store, metrics);
}
