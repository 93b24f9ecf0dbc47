import { Arg, Ctx, Field, ID, Mutation, ObjectType, Resolver } from 'type-graphql';
import { getAccount } from '../accounts/service.js';
import { AuditRecord } from '../audit/entities.js';
import { stageEvents } from '../events/stage.js';
import { requirePrincipal, type GatewayContext } from '../gateway/schema/context.js';
import { RequiresScopes } from '../gateway/schema/directives.js';
import type { ServiceDeps } from '../kernel/deps.js';
import { badInput } from '../kernel/errors.js';
import { ACCOUNT_CHANGED } from '../kernel/events.js';
import { PLAN_ORDER, Plan, parsePlan } from '../kernel/plans.js';

/**
 * Changing an account's plan lives here rather than in src/accounts/ because it stages an event
 * (src/events/ already depends on src/accounts/, so the reverse import would close a cycle).
 */

/** Who asked for a change, as the audit record names them. */
export interface PlanChangeActor {
  requestId: string;
  /** `cli` for the operator command, else the kind of the admin's credential. */
  credentialKind: string;
  credentialId?: string | null;
}

export interface PlanChange {
  accountId: string;
  previousPlan: Plan;
  plan: Plan;
  changedAt: Date;
}

/**
 * Moves an account to another plan. The audit record (operation `set-plan OLD→NEW`, under the
 * changed account) and the internal `account.changed` event commit with the change. Once the
 * event is published — at once from a server, by the outbox worker's relay from the CLI — every
 * process forgets the account's cached credentials and re-checks its open WebSocket connections,
 * so every door answers with the new plan.
 */
export async function setAccountPlan(
  deps: ServiceDeps,
  actor: PlanChangeActor,
  accountId: string,
  planName: string,
): Promise<PlanChange> {
  const plan = parsePlan(planName);
  if (!plan) throw badInput('plan', `must be one of ${PLAN_ORDER.join(', ')} (got '${planName}')`);
  const { change, events } = await deps.em.transactional(async (tx) => {
    const account = await getAccount(tx, accountId);
    if (account.sandboxOf) throw badInput('accountId', 'is a sandbox account: it acts with its owner’s plan');
    const changedAt = deps.clock.now();
    const change: PlanChange = { accountId: account.id, previousPlan: account.plan, plan, changedAt };
    account.plan = plan;
    const record = tx.create(AuditRecord, {
      at: changedAt,
      requestId: actor.requestId,
      accountId: account.id,
      credentialKind: actor.credentialKind,
      credentialId: actor.credentialId ?? null,
      operation: `set-plan ${change.previousPlan}→${plan}`,
      status: 200,
      durationMs: 0,
    });
    tx.persist(record);
    const events = await stageEvents(tx, deps, [
      { type: ACCOUNT_CHANGED, accountId: account.id, payload: { plan, previousPlan: change.previousPlan } },
    ]);
    return { change, events };
  });
  await deps.events.publish(events);
  return change;
}

@ObjectType({ description: 'A plan change, as recorded in the audit log.' })
class AccountPlanChange {
  @Field(() => ID)
  accountId!: string;

  @Field(() => Plan)
  previousPlan!: Plan;

  @Field(() => Plan)
  plan!: Plan;

  @Field(() => Date)
  changedAt!: Date;
}

@Resolver()
export class PlanChangeResolver {
  @Mutation(() => AccountPlanChange, {
    description:
      'Moves an account to another plan (admin), audited. Every door answers with the new plan at once, open WebSocket connections included: their operations the new plan no longer allows end with PLAN_REQUIRED.',
  })
  @RequiresScopes('admin')
  async setAccountPlan(
    @Arg('accountId', () => ID) accountId: string,
    @Arg('plan', () => Plan) plan: Plan,
    @Ctx() ctx: GatewayContext,
  ): Promise<AccountPlanChange> {
    const principal = requirePrincipal(ctx);
    return setAccountPlan(
      { em: ctx.em, clock: ctx.services.clock, events: ctx.services.events },
      {
        requestId: ctx.requestId,
        credentialKind: principal.credential.kind,
        credentialId: principal.credential.id,
      },
      accountId,
      plan,
    );
  }
}
