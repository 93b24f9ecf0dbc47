import { registerEnumType } from 'type-graphql';

/** Subscription plans, lowest first. A plan includes everything the plans below it include. */
export enum Plan {
  OBSERVER = 'OBSERVER',
  ANALYST = 'ANALYST',
  PROFESSIONAL = 'PROFESSIONAL',
  INSTITUTIONAL = 'INSTITUTIONAL',
}

registerEnumType(Plan, { name: 'Plan', description: 'Subscription plan, lowest first.' });

export const PLAN_ORDER: readonly Plan[] = [
  Plan.OBSERVER,
  Plan.ANALYST,
  Plan.PROFESSIONAL,
  Plan.INSTITUTIONAL,
];

export function planRank(plan: Plan): number {
  return PLAN_ORDER.indexOf(plan);
}

export function planAtLeast(plan: Plan, min: Plan): boolean {
  return planRank(plan) >= planRank(min);
}

export function parsePlan(value: string): Plan | undefined {
  const upper = value.trim().toUpperCase();
  return (PLAN_ORDER as readonly string[]).includes(upper) ? (upper as Plan) : undefined;
}

/** Human name used in messages: `Analyst`. */
export function planLabel(plan: Plan): string {
  return plan.charAt(0) + plan.slice(1).toLowerCase();
}
