import {
  DirectiveLocation,
  GraphQLDirective,
  GraphQLList,
  GraphQLNonNull,
  GraphQLString,
  GraphQLInt,
  GraphQLEnumType,
} from 'graphql';
import { Directive } from 'type-graphql';
import { PLAN_ORDER, type Plan } from '../../kernel/plans.js';
import { isScope } from '../../kernel/scopes.js';

/**
 * The access vocabulary, declared in the SDL and enforced by one pass over each operation
 * before execution (see access.ts). Decorators below are the only way code attaches them,
 * so a typo in a scope name fails at start-up, not at request time.
 */

const PROTECTED_LOCATIONS = [
  DirectiveLocation.FIELD_DEFINITION,
  DirectiveLocation.OBJECT,
  DirectiveLocation.INTERFACE,
  DirectiveLocation.SCALAR,
  DirectiveLocation.ENUM,
];

export const PlanDirectiveEnum = new GraphQLEnumType({
  name: 'PlanLevel',
  description: 'Plan levels usable in @plan.',
  values: Object.fromEntries(PLAN_ORDER.map((p) => [p, { value: p }])),
});

export const accessDirectives: GraphQLDirective[] = [
  new GraphQLDirective({
    name: 'authenticated',
    description: 'The caller must present a valid credential (API key, OAuth token or session).',
    locations: PROTECTED_LOCATIONS,
  }),
  new GraphQLDirective({
    name: 'requiresScopes',
    description:
      'The caller needs every scope of at least one group (OR of AND-groups). `admin` satisfies every scope.',
    locations: PROTECTED_LOCATIONS,
    args: {
      scopes: {
        type: new GraphQLNonNull(
          new GraphQLList(new GraphQLNonNull(new GraphQLList(new GraphQLNonNull(GraphQLString)))),
        ),
      },
    },
  }),
  new GraphQLDirective({
    name: 'plan',
    description: "The caller's account must be on this plan or a higher one.",
    locations: PROTECTED_LOCATIONS,
    args: { min: { type: new GraphQLNonNull(PlanDirectiveEnum) } },
  }),
  new GraphQLDirective({
    name: 'cost',
    description: 'Demand-control weight of this field (IBM cost directive vocabulary).',
    locations: [DirectiveLocation.FIELD_DEFINITION, DirectiveLocation.OBJECT],
    args: { weight: { type: new GraphQLNonNull(GraphQLInt) } },
  }),
  new GraphQLDirective({
    name: 'listSize',
    description:
      'Demand-control size of a list field (IBM cost directive vocabulary): the argument that slices it, or the size assumed without one.',
    locations: [DirectiveLocation.FIELD_DEFINITION],
    args: {
      assumedSize: { type: GraphQLInt },
      slicingArguments: { type: new GraphQLList(new GraphQLNonNull(GraphQLString)) },
    },
  }),
];

/** `@RequiresScopes('read:vessels')`, or OR-groups: `@RequiresScopes(['read:a', 'read:b'], 'admin')`. */
export function RequiresScopes(
  ...groups: Array<string | string[]>
): MethodDecorator & ClassDecorator & PropertyDecorator {
  if (groups.length === 0) throw new Error('@RequiresScopes needs at least one group');
  const normalized = groups.map((g) => (Array.isArray(g) ? g : [g]));
  for (const scope of normalized.flat()) {
    if (!isScope(scope)) throw new Error(`@RequiresScopes: '${scope}' is not a canonical scope`);
  }
  return Directive(`@requiresScopes(scopes: ${JSON.stringify(normalized)})`);
}

export function RequiresPlan(min: Plan): MethodDecorator & ClassDecorator & PropertyDecorator {
  return Directive(`@plan(min: ${min})`);
}

export function Authenticated(): MethodDecorator & ClassDecorator & PropertyDecorator {
  return Directive('@authenticated');
}

/** The measured price of resolving a field once, in cost units (see src/gateway/README.md, "Demand control"). */
export function Cost(weight: number): MethodDecorator & ClassDecorator & PropertyDecorator {
  if (!Number.isInteger(weight) || weight < 0)
    throw new Error(`@Cost: ${weight} is not a non-negative integer`);
  return Directive(`@cost(weight: ${weight})`);
}

/** How many items a list field holds for demand control: sliced by an argument, or an assumed size. */
export function ListSize(size: {
  assumedSize?: number;
  slicingArguments?: string[];
}): MethodDecorator & PropertyDecorator {
  const args = [
    size.assumedSize === undefined ? '' : `assumedSize: ${size.assumedSize}`,
    size.slicingArguments ? `slicingArguments: ${JSON.stringify(size.slicingArguments)}` : '',
  ].filter(Boolean);
  if (args.length === 0) throw new Error('@ListSize needs assumedSize or slicingArguments');
  return Directive(`@listSize(${args.join(', ')})`);
}
