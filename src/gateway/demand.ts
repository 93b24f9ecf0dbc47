import {
  GraphQLError,
  Kind,
  getNamedType,
  isAbstractType,
  isListType,
  isNonNullType,
  isObjectType,
  isInterfaceType,
  type ASTVisitor,
  type FieldNode,
  type GraphQLField,
  type FragmentDefinitionNode,
  type GraphQLCompositeType,
  type GraphQLOutputType,
  type SelectionSetNode,
  type ValidationContext,
  type ValidationRule,
} from 'graphql';

/**
 * Demand control, checked with the other validation rules before anything runs: a maximum
 * selection depth, and a maximum estimated cost. Each field costs its `@cost(weight:)` (1 by
 * default); a paginated field multiplies the cost of what it selects by its page size (`first`
 * or `limit`, 20 when absent, 100 when given by a variable, since that is the largest allowed);
 * a plain list multiplies by 1 — such lists are small, embedded collections by design.
 */
export interface DemandLimits {
  maxDepth: number;
  maxCost: number;
}

const PAGE_ARGS = ['first', 'limit'];
const DEFAULT_PAGE = 20;
const MAX_PAGE = 100;

function costWeight(field: GraphQLField<unknown, unknown>): number {
  const directive = field.astNode?.directives?.find((d) => d.name.value === 'cost');
  const arg = directive?.arguments?.find((a) => a.name.value === 'weight');
  return arg && arg.value.kind === Kind.INT ? Number(arg.value.value) : 1;
}

function pageSize(node: FieldNode): number {
  for (const arg of node.arguments ?? []) {
    if (!PAGE_ARGS.includes(arg.name.value)) continue;
    if (arg.value.kind === Kind.INT) return Math.max(0, Number(arg.value.value));
    if (arg.value.kind === Kind.VARIABLE) return MAX_PAGE;
  }
  return DEFAULT_PAGE;
}

function isPaginated(node: FieldNode, type: GraphQLOutputType): boolean {
  const unwrapped = isNonNullType(type) ? type.ofType : type;
  return isListType(unwrapped)
    ? node.arguments?.some((a) => PAGE_ARGS.includes(a.name.value)) === true
    : getNamedType(type).name.endsWith('Connection');
}

export function demandControl(limits: DemandLimits): ValidationRule {
  return (context: ValidationContext): ASTVisitor => {
    const schema = context.getSchema();
    const fragments = new Map<string, FragmentDefinitionNode>();
    for (const def of context.getDocument().definitions)
      if (def.kind === Kind.FRAGMENT_DEFINITION) fragments.set(def.name.value, def);

    const measure = (
      parent: GraphQLCompositeType,
      set: SelectionSetNode,
      depth: number,
      seen: Set<string>,
    ): { cost: number; depth: number } => {
      let cost = 0;
      let deepest = depth;
      for (const selection of set.selections) {
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
            own += inner.cost * (isPaginated(selection, field.type) ? pageSize(selection) : 1);
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

    return {
      OperationDefinition(node) {
        const root = schema.getRootType(node.operation);
        if (!root) return;
        const { cost, depth } = measure(root, node.selectionSet, 1, new Set());
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
              `Operation${name} has an estimated cost of ${cost}; the maximum is ${limits.maxCost}. Ask for smaller pages or fewer nested lists.`,
              {
                nodes: [node],
                extensions: { cost, maxCost: limits.maxCost },
              },
            ),
          );
        }
      },
    };
  };
}
