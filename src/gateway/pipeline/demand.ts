import {
  GraphQLError,
  Kind,
  getNamedType,
  isAbstractType,
  isListType,
  isNonNullType,
  isObjectType,
  isInterfaceType,
  valueFromASTUntyped,
  type ASTVisitor,
  type DirectiveNode,
  type DocumentNode,
  type FieldNode,
  type GraphQLField,
  type GraphQLSchema,
  type FragmentDefinitionNode,
  type GraphQLCompositeType,
  type GraphQLOutputType,
  type OperationDefinitionNode,
  type SelectionNode,
  type SelectionSetNode,
  type ValidationContext,
  type ValidationRule,
  type ValueNode,
} from 'graphql';

/**
 * Demand control, checked with the other validation rules before anything runs: a maximum
 * selection depth, and a maximum estimated cost (IBM GraphQL cost-directive style).
 *
 * A field costs its `@cost(weight:)` (1 by default; the computing fields carry weights measured
 * on the demo dataset, see src/gateway/README.md "Demand control") plus what it selects times its list size:
 * - `@listSize(slicingArguments:)`: the first of those arguments the operation gives; one given by
 *   a variable counts as its value when the variables are known, else as the largest page (100);
 *   none given counts as `assumedSize`, or the default page (20);
 * - `@listSize(assumedSize:)` alone: that size;
 * - without `@listSize`, a connection or a list with a `first`/`limit` argument counts as that page
 *   (20 when absent); a plain list counts as 1 — such lists are small, embedded collections.
 * Selections that `@skip`/`@include` leave out cost nothing when their condition is known.
 */
export interface DemandLimits {
  maxDepth: number;
  maxCost: number;
}

type Variables = Readonly<Record<string, unknown>>;

const PAGE_ARGS = ['first', 'limit'];
const DEFAULT_PAGE = 20;
const MAX_PAGE = 100;

function directiveOf(field: GraphQLField<unknown, unknown>, name: string): DirectiveNode | undefined {
  return field.astNode?.directives?.find((d) => d.name.value === name);
}

function directiveArg(directive: DirectiveNode | undefined, name: string): unknown {
  const arg = directive?.arguments?.find((a) => a.name.value === name);
  return arg ? valueFromASTUntyped(arg.value) : undefined;
}

function costWeight(field: GraphQLField<unknown, unknown>): number {
  const weight = directiveArg(directiveOf(field, 'cost'), 'weight');
  return typeof weight === 'number' ? weight : 1;
}

const UNKNOWN = Symbol('unknown');

/**
 * An argument's value as far as it is known: a literal, a known variable's value, `undefined`
 * when absent, and `unknown` for a variable whose value is not known (validation time).
 */
function argumentValue(node: ValueNode | undefined, variables: Variables | undefined): unknown {
  if (!node) return undefined;
  if (node.kind === Kind.VARIABLE) return variables ? variables[node.name.value] : UNKNOWN;
  return valueFromASTUntyped(node);
}

function sliceSize(
  node: FieldNode,
  names: readonly string[],
  variables: Variables | undefined,
): number | undefined {
  for (const name of names) {
    const value = argumentValue(node.arguments?.find((a) => a.name.value === name)?.value, variables);
    if (value === UNKNOWN) return MAX_PAGE;
    if (typeof value === 'number') return Math.max(0, value);
  }
  return undefined;
}

function isConnectionLike(node: FieldNode, type: GraphQLOutputType): boolean {
  const unwrapped = isNonNullType(type) ? type.ofType : type;
  return isListType(unwrapped)
    ? node.arguments?.some((a) => PAGE_ARGS.includes(a.name.value)) === true
    : getNamedType(type).name.endsWith('Connection');
}

/** How many times a field's selection is resolved: its page size or assumed list size. */
function multiplier(
  node: FieldNode,
  field: GraphQLField<unknown, unknown>,
  variables: Variables | undefined,
): number {
  const listSize = directiveOf(field, 'listSize');
  if (listSize) {
    const slicing = directiveArg(listSize, 'slicingArguments');
    const assumed = directiveArg(listSize, 'assumedSize');
    const names = Array.isArray(slicing) ? (slicing as string[]) : [];
    return (
      sliceSize(node, names, variables) ??
      (typeof assumed === 'number' ? assumed : names.length ? DEFAULT_PAGE : 1)
    );
  }
  if (!isConnectionLike(node, field.type)) return 1;
  return sliceSize(node, PAGE_ARGS, variables) ?? DEFAULT_PAGE;
}

/** False when `@skip(if: true)` or `@include(if: false)` is known to leave the selection out. */
function isIncluded(selection: SelectionNode, variables: Variables | undefined): boolean {
  for (const directive of selection.directives ?? []) {
    const name = directive.name.value;
    if (name !== 'skip' && name !== 'include') continue;
    const condition = argumentValue(
      directive.arguments?.find((a) => a.name.value === 'if')?.value,
      variables,
    );
    if (typeof condition === 'boolean' && condition === (name === 'skip')) return false;
  }
  return true;
}

export interface OperationDemand {
  cost: number;
  depth: number;
}

/**
 * The estimated cost and the depth of one operation. Without `variables` (validation time) every
 * variable is taken at its worst: a page of 100, a condition that includes.
 */
export function measureOperation(
  schema: GraphQLSchema,
  document: DocumentNode,
  operation: OperationDefinitionNode,
  variables?: Variables,
): OperationDemand {
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const def of document.definitions)
    if (def.kind === Kind.FRAGMENT_DEFINITION) fragments.set(def.name.value, def);

  const measure = (
    parent: GraphQLCompositeType,
    set: SelectionSetNode,
    depth: number,
    seen: ReadonlySet<string>,
  ): OperationDemand => {
    let cost = 0;
    let deepest = depth;
    for (const selection of set.selections) {
      if (!isIncluded(selection, variables)) continue;
      if (selection.kind === Kind.FIELD) {
        if (selection.name.value.startsWith('__')) continue;
        const field =
          isObjectType(parent) || isInterfaceType(parent)
            ? parent.getFields()[selection.name.value]
            : undefined;
        if (!field) continue;
        let own = costWeight(field);
        const named = getNamedType(field.type);
        if (selection.selectionSet && (isObjectType(named) || isAbstractType(named))) {
          const inner = measure(named, selection.selectionSet, depth + 1, seen);
          own += inner.cost * multiplier(selection, field, variables);
          deepest = Math.max(deepest, inner.depth);
        } else {
          deepest = Math.max(deepest, depth);
        }
        cost += own;
      } else {
        const fragment =
          selection.kind === Kind.INLINE_FRAGMENT ? selection : fragments.get(selection.name.value);
        if (!fragment) continue;
        const name = selection.kind === Kind.FRAGMENT_SPREAD ? selection.name.value : undefined;
        if (name && seen.has(name)) continue;
        const cond = fragment.typeCondition ? schema.getType(fragment.typeCondition.name.value) : parent;
        if (!cond || !(isObjectType(cond) || isAbstractType(cond))) continue;
        const inner = measure(cond, fragment.selectionSet, depth, name ? new Set([...seen, name]) : seen);
        cost += inner.cost;
        deepest = Math.max(deepest, inner.depth);
      }
    }
    return { cost, depth: deepest };
  };

  const root = schema.getRootType(operation.operation);
  return root ? measure(root, operation.selectionSet, 1, new Set()) : { cost: 0, depth: 0 };
}

/** The estimated cost of the operation a request runs (as the pipeline chose it), with its variables known. */
export function estimateCost(
  schema: GraphQLSchema,
  document: DocumentNode,
  operation: OperationDefinitionNode,
  variables: Variables | null | undefined,
): number {
  return measureOperation(schema, document, operation, variables ?? {}).cost;
}

export function demandControl(limits: DemandLimits): ValidationRule {
  return (context: ValidationContext): ASTVisitor => ({
    OperationDefinition(node) {
      const { cost, depth } = measureOperation(context.getSchema(), context.getDocument(), node);
      const name = node.name ? ` ${node.name.value}` : '';
      if (depth > limits.maxDepth) {
        context.reportError(
          new GraphQLError(`Operation${name} is ${depth} levels deep; the maximum is ${limits.maxDepth}`, {
            nodes: [node],
            extensions: { depth, maxDepth: limits.maxDepth },
          }),
        );
      }
      if (cost > limits.maxCost) {
        context.reportError(
          new GraphQLError(
            `Operation${name} has an estimated cost of ${cost}; the maximum is ${limits.maxCost}. Ask for fewer computed reports or predictions, smaller pages or fewer nested lists.`,
            {
              nodes: [node],
              extensions: { cost, maxCost: limits.maxCost },
            },
          ),
        );
      }
    },
  });
}
