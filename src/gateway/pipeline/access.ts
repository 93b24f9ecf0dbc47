import {
  Kind,
  getNamedType,
  isAbstractType,
  isInterfaceType,
  isObjectType,
  type DirectiveNode,
  type DocumentNode,
  type FragmentDefinitionNode,
  type GraphQLCompositeType,
  type GraphQLField,
  type GraphQLNamedType,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type SelectionSetNode,
  valueFromASTUntyped,
} from 'graphql';
import { AppError, missingScopes, unauthenticated } from '../../kernel/errors.js';
import { Plan, planAtLeast, planLabel, planRank } from '../../kernel/plans.js';
import type { Principal } from '../../kernel/principal.js';
import { hasScope } from '../../kernel/scopes.js';

/** What one schema element (field or type) demands of the caller. */
interface Rule {
  authenticated: boolean;
  /** OR of AND-groups. */
  scopes?: string[][];
  plan?: Plan;
}

/** What a whole operation demands: the union of the rules of every field it could touch. */
export interface Requirements {
  authenticated: boolean;
  /** Each entry is one field's OR-of-AND requirement; all entries must hold. */
  scopes: string[][][];
  plan?: Plan;
  /** Root fields touched (e.g. `Query.protocols`), used for budgets and audit. */
  rootFields: string[];
  operationType: 'query' | 'mutation' | 'subscription';
  operationName?: string;
}

function readRule(directives: readonly DirectiveNode[] | undefined): Rule | undefined {
  if (!directives || directives.length === 0) return undefined;
  const rule: Rule = { authenticated: false };
  let found = false;
  for (const d of directives) {
    const arg = (name: string) => {
      const node = d.arguments?.find((a) => a.name.value === name);
      return node ? valueFromASTUntyped(node.value) : undefined;
    };
    switch (d.name.value) {
      case 'authenticated':
        rule.authenticated = true;
        found = true;
        break;
      case 'requiresScopes':
        rule.authenticated = true;
        rule.scopes = arg('scopes') as string[][];
        found = true;
        break;
      case 'plan':
        rule.authenticated = true;
        rule.plan = arg('min') as Plan;
        found = true;
        break;
    }
  }
  return found ? rule : undefined;
}

/**
 * The access rules of a schema, read once from the directive usages in its AST nodes,
 * and a per-document cache of computed requirements.
 */
export class AccessPolicy {
  private readonly fieldRules = new Map<string, Rule>();
  private readonly typeRules = new Map<string, Rule>();
  private readonly cache = new WeakMap<OperationDefinitionNode, Requirements>();

  constructor(readonly schema: GraphQLSchema) {
    for (const type of Object.values(schema.getTypeMap())) {
      if (type.name.startsWith('__')) continue;
      const typeRule = readRule(type.astNode?.directives);
      if (typeRule) this.typeRules.set(type.name, typeRule);
      if (isObjectType(type) || isInterfaceType(type)) {
        for (const field of Object.values(type.getFields())) {
          const rule = readRule(field.astNode?.directives);
          if (rule) this.fieldRules.set(`${type.name}.${field.name}`, rule);
        }
      }
    }
  }

  /**
   * Requirements of a single schema field such as `Mutation.uploadDocument`, for hand-written
   * (streaming) routes that do the work of that field outside GraphQL execution.
   */
  fieldRequirements(coordinate: string): Requirements {
    const [typeName, fieldName] = coordinate.split('.') as [string, string];
    const type = this.schema.getType(typeName);
    if (!type || !(isObjectType(type) || isInterfaceType(type)) || !type.getFields()[fieldName]) {
      throw new Error(`No schema field ${coordinate}`);
    }
    const rule = this.fieldRules.get(coordinate);
    const operationType =
      typeName === 'Mutation' ? 'mutation' : typeName === 'Subscription' ? 'subscription' : 'query';
    return {
      authenticated: true,
      scopes: rule?.scopes ? [rule.scopes] : [],
      plan: rule?.plan,
      rootFields: [coordinate],
      operationType,
      operationName: fieldName,
    };
  }

  /** The rule on one field, for tests and tooling (e.g. "every root field has a scope"). */
  ruleOf(typeName: string, fieldName: string): Rule | undefined {
    return this.fieldRules.get(`${typeName}.${fieldName}`);
  }

  /**
   * Computes what an operation needs. Walks every selection of the operation the pipeline chose,
   * following fragment spreads and inline fragments; for a field on an interface it also
   * applies the rules of that field on every implementing type, since any of them may run.
   * `@include`/`@skip` are ignored on purpose: the check is on what the document could do.
   */
  requirements(document: DocumentNode, operation: OperationDefinitionNode): Requirements {
    const cached = this.cache.get(operation);
    if (cached) return cached;

    const fragments = new Map<string, FragmentDefinitionNode>();
    for (const def of document.definitions) {
      if (def.kind === Kind.FRAGMENT_DEFINITION) fragments.set(def.name.value, def);
    }
    const root = this.schema.getRootType(operation.operation);
    if (!root) {
      throw new AppError('BAD_USER_INPUT', `This schema does not support ${operation.operation} operations`);
    }

    const result: Requirements = {
      authenticated: false,
      scopes: [],
      rootFields: [],
      operationType: operation.operation,
      operationName: operation.name?.value,
    };
    const seenScopeRules = new Set<string>();
    const apply = (rule: Rule | undefined) => {
      if (!rule) return;
      if (rule.authenticated) result.authenticated = true;
      if (rule.plan && (!result.plan || planRank(rule.plan) > planRank(result.plan))) result.plan = rule.plan;
      if (rule.scopes) {
        const k = JSON.stringify(rule.scopes);
        if (!seenScopeRules.has(k)) {
          seenScopeRules.add(k);
          result.scopes.push(rule.scopes);
        }
      }
    };
    const visitedTypeRules = new Set<string>();
    const applyType = (type: GraphQLNamedType) => {
      if (visitedTypeRules.has(type.name)) return;
      visitedTypeRules.add(type.name);
      apply(this.typeRules.get(type.name));
    };

    const walk = (
      parent: GraphQLCompositeType,
      selectionSet: SelectionSetNode,
      isRoot: boolean,
      fragmentPath: Set<string>,
    ) => {
      // Fields selected on an interface or union (even __typename) read whichever type the
      // answer turns out to be, so every possible type's rule applies; fragments on a concrete
      // type apply only that type's rule.
      if (isAbstractType(parent) && selectionSet.selections.some((s) => s.kind === Kind.FIELD)) {
        for (const impl of this.schema.getPossibleTypes(parent)) applyType(impl);
      }
      for (const selection of selectionSet.selections) {
        if (selection.kind === Kind.FIELD) {
          const name = selection.name.value;
          // `_service { sdl }` is a federation subgraph's introspection (the SDL a router composes,
          // checked in under schema/subgraphs/): open as `__schema` is.
          if (name.startsWith('__') || (isRoot && name === '_service')) continue;
          if (isRoot) {
            // Every root field needs a caller, whether or not it names a scope.
            result.authenticated = true;
            result.rootFields.push(`${parent.name}.${name}`);
          }
          const field = fieldOf(parent, name);
          if (!field) continue; // validation reports unknown fields
          apply(this.fieldRules.get(`${parent.name}.${name}`));
          if (isAbstractType(parent)) {
            for (const impl of this.schema.getPossibleTypes(parent)) {
              apply(this.fieldRules.get(`${impl.name}.${name}`));
            }
          }
          const named = getNamedType(field.type);
          applyType(named);
          if (selection.selectionSet && (isObjectType(named) || isAbstractType(named))) {
            walk(named, selection.selectionSet, false, fragmentPath);
          }
        } else if (selection.kind === Kind.INLINE_FRAGMENT) {
          const cond = selection.typeCondition
            ? this.schema.getType(selection.typeCondition.name.value)
            : parent;
          if (cond && (isObjectType(cond) || isAbstractType(cond))) {
            applyType(cond);
            walk(cond, selection.selectionSet, isRoot, fragmentPath);
          }
        } else {
          const name = selection.name.value;
          const fragment = fragments.get(name);
          if (!fragment || fragmentPath.has(name)) continue;
          const cond = this.schema.getType(fragment.typeCondition.name.value);
          if (cond && (isObjectType(cond) || isAbstractType(cond))) {
            applyType(cond);
            walk(cond, fragment.selectionSet, isRoot, new Set([...fragmentPath, name]));
          }
        }
      }
    };
    walk(root, operation.selectionSet, true, new Set());

    this.cache.set(operation, result);
    return result;
  }
}

function fieldOf(parent: GraphQLCompositeType, name: string): GraphQLField<unknown, unknown> | undefined {
  if (isObjectType(parent) || isInterfaceType(parent)) return parent.getFields()[name];
  return undefined;
}

/**
 * Checks a principal against requirements. Returns every failure, plan first (402 is what
 * the liquidity document promises for a plan gate), then one FORBIDDEN naming every missing scope.
 */
export function checkAccess(req: Requirements, principal: Principal | null | undefined): AppError[] {
  if (!req.authenticated) return [];
  if (!principal) return [unauthenticated()];
  const errors: AppError[] = [];
  if (req.plan && !planAtLeast(principal.plan, req.plan) && !principal.scopes.has('admin')) {
    errors.push(
      new AppError(
        'PLAN_REQUIRED',
        `This operation requires the ${planLabel(req.plan)} plan or higher; your account is on the ${planLabel(principal.plan)} plan`,
        { requiredPlan: req.plan, currentPlan: principal.plan },
      ),
    );
  }
  const missing: string[] = [];
  // Requirements with alternatives (OR of AND-groups) that failed, each as its missing groups.
  const alternatives: string[][][] = [];
  for (const groups of req.scopes) {
    const satisfied = groups.some((group) => group.every((s) => hasScope(principal.scopes, s)));
    if (satisfied) continue;
    const gaps = groups
      .map((group) => group.filter((s) => !hasScope(principal.scopes, s)))
      .sort((a, b) => a.length - b.length);
    // requiredScopes names the cheapest way to satisfy each field; anyOf keeps the other ways.
    for (const s of gaps[0] ?? []) if (!missing.includes(s)) missing.push(s);
    if (gaps.length > 1) alternatives.push(gaps);
  }
  if (missing.length > 0) {
    const others = alternatives.map(
      (gaps) =>
        ` (or instead: ${gaps
          .slice(1)
          .map((g) => g.join(' + '))
          .join(' or ')})`,
    );
    errors.push(
      missingScopes(missing, others.join(''), alternatives.length > 0 ? { anyOf: alternatives } : {}),
    );
  }
  return errors;
}
