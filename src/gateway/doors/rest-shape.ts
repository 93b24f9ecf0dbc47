import {
  GraphQLString,
  Kind,
  isEnumType,
  isLeafType,
  isListType,
  isNonNullType,
  isObjectType,
  type DocumentNode,
  type FieldNode,
  type FragmentDefinitionNode,
  type GraphQLObjectType,
  type GraphQLOutputType,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type SelectionSetNode,
} from 'graphql';
import { bodyOf, deepFreeze } from '../pipeline/answers.js';

/**
 * The last step of a REST shim: what aliases cannot say. The liquidity document shows money as
 * JSON numbers (`aum_usd`), enum values as it spells them (`category: treasury`) and snake_case
 * names at every level; GraphQL keeps decimal strings and SCREAMING_CASE. A route declares its
 * shape (`RestRoute.shape`); this pure function applies it to the body taken from the result.
 */
export interface RestShape {
  /** JSON names (at any depth) whose decimal-string values are sent as JSON numbers. */
  numbers?: readonly string[];
  /** JSON names (at any depth) whose string values are sent lower-case. */
  lowerCase?: readonly string[];
  /** camelCase keys at every depth (inside JSON values too) are sent snake_case. */
  snakeCaseKeys?: boolean;
}

/** What a key of the body becomes: its JSON name, and what its string values become. */
interface KeyPlan {
  name: string;
  strings: 'number' | 'lowerCase' | 'keep';
}

interface Compiled {
  numbers: ReadonlySet<string>;
  lowerCase: ReadonlySet<string>;
  snakeCaseKeys: boolean;
  /**
   * Each key's plan, made on first sight: the keys of a route's bodies are its fields' names, a
   * small set, so a body is shaped with one map lookup per key instead of the name's regular
   * expressions. Keys inside JSON values come from data: past MAX_KEYS the plan is made each time.
   */
  keys: Map<string, KeyPlan>;
}

const MAX_KEYS = 2_000;

// Route shapes are module constants: compiled once each, on first use.
const compiled = new WeakMap<RestShape, Compiled>();

function compile(shape: RestShape): Compiled {
  let c = compiled.get(shape);
  if (!c) {
    c = {
      numbers: new Set(shape.numbers),
      lowerCase: new Set(shape.lowerCase),
      snakeCaseKeys: shape.snakeCaseKeys ?? false,
      keys: new Map(),
    };
    compiled.set(shape, c);
  }
  return c;
}

/** `sharePct` → `share_pct`; keys that are not camelCase (`L1`, `ILLIQUID`, `aum_usd`) stay. */
export function snakeCaseKey(key: string): string {
  return /^[a-z][a-zA-Z0-9]*$/.test(key) && /[A-Z]/.test(key)
    ? key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)
    : key;
}

const DECIMAL = /^-?\d+(\.\d+)?$/;

/**
 * Shaped kept results (src/gateway/pipeline/answers.ts), by route shape: a kept result is frozen and
 * served to many requests, so its shaped form is too. Entries go with the result they were made of.
 */
const shapedKept = new WeakMap<Compiled, WeakMap<object, unknown>>();

/**
 * The body with the route's shape applied; without a shape, the body itself. A body shaped from a
 * kept result is shared by the requests it serves, and frozen like it.
 */
export function shapeBody(body: unknown, shape: RestShape | undefined): unknown {
  if (!shape) return body;
  const compiledShape = compile(shape);
  if (body === null || typeof body !== 'object' || !Object.isFrozen(body))
    return shapeValue(body, compiledShape);
  let memo = shapedKept.get(compiledShape);
  if (!memo) shapedKept.set(compiledShape, (memo = new WeakMap()));
  let shaped = memo.get(body);
  if (shaped === undefined) memo.set(body, (shaped = deepFreeze(shapeValue(body, compiledShape))));
  return shaped;
}

function keyPlan(key: string, shape: Compiled): KeyPlan {
  let plan = shape.keys.get(key);
  if (!plan) {
    const name = shape.snakeCaseKeys ? snakeCaseKey(key) : key;
    plan = {
      name,
      strings: shape.numbers.has(name) ? 'number' : shape.lowerCase.has(name) ? 'lowerCase' : 'keep',
    };
    if (shape.keys.size < MAX_KEYS) shape.keys.set(key, plan);
  }
  return plan;
}

function shapeValue(value: unknown, shape: Compiled): unknown {
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) {
    const items = new Array<unknown>(value.length);
    for (let i = 0; i < value.length; i++) items[i] = shapeValue(value[i], shape);
    return items;
  }
  const out: Record<string, unknown> = {};
  for (const key in value) {
    if (!Object.hasOwn(value, key)) continue;
    const item = (value as Record<string, unknown>)[key];
    const plan = keyPlan(key, shape);
    out[plan.name] =
      typeof item === 'string'
        ? plan.strings === 'number' && DECIMAL.test(item)
          ? Number(item)
          : plan.strings === 'lowerCase'
            ? item.toLowerCase()
            : item
        : shapeValue(item, shape);
  }
  return out;
}

/**
 * Shapes a fresh result's body in place, as shapeBody would shape a copy of it; compiled once per
 * route from its operation (below).
 */
export type RouteShaper = (value: unknown) => unknown;

/**
 * The JSON of a route's body (text, or the bytes kept with a frozen body: `bodyOf`). A fresh
 * result's body is shaped in place by the route's compiled shaper when it has one: for a 100-row
 * list that is three values rewritten per row instead of a shaped copy of every row. A kept
 * (frozen) body takes shapeBody, whose shaped form is shared, and so are its bytes.
 */
export function bodyJson(
  value: unknown,
  shape: RestShape | undefined,
  shaper: RouteShaper | undefined,
): string | Buffer {
  if (shaper && value !== null && typeof value === 'object' && !Object.isFrozen(value))
    return bodyOf(shaper(value));
  return bodyOf(shapeBody(value, shape));
}

/** What the shaper does to one member of an object the executor made: its new value. */
type Member = (value: unknown) => unknown;

const BUILT_IN_SCALARS: ReadonlySet<string> = new Set(['String', 'Int', 'Float', 'Boolean', 'ID']);

/**
 * Compiles a route's in-place shaper from its operation. The executor makes a new object for every
 * selected object (and a new array for every list) of each result, with the keys the operation
 * selects, so which keys can need work is known from the operation: those whose JSON name is in
 * `numbers` or `lowerCase`, and custom scalars whose values may be JSON objects (shaped as a copy:
 * such a value may be the resolver's own object). Only the executor's objects and arrays are
 * written, and shaping twice gives what shaping once gives (a body shared by joined executions).
 *
 * Undefined, and the route shapes a copy as before, when the selection is more than this follows:
 * a key to rename (an operation whose names are already the JSON names needs none), `@skip` or
 * `@include`, an abstract type, fields merged under one name, or a list on the way to the body.
 */
export function compileShaper(
  shape: RestShape,
  schema: GraphQLSchema,
  document: DocumentNode,
  operation: OperationDefinitionNode,
  resultPath: readonly string[],
): RouteShaper | undefined {
  const fragments = new Map<string, FragmentDefinitionNode>();
  for (const d of document.definitions)
    if (d.kind === Kind.FRAGMENT_DEFINITION) fragments.set(d.name.value, d);
  const rules = compile(shape);
  const unsupported = new Error('unsupported selection');

  /** The fields a selection set gives an object of `type`, by response name, in order. */
  const fieldsOf = (type: GraphQLObjectType, set: SelectionSetNode): Map<string, FieldNode> => {
    const fields = new Map<string, FieldNode>();
    const collect = (selections: SelectionSetNode): void => {
      for (const s of selections.selections) {
        if (s.directives?.length) throw unsupported;
        if (s.kind === Kind.FIELD) {
          const name = s.alias?.value ?? s.name.value;
          const seen = fields.get(name);
          // The same leaf twice (say, in two fragments) is one key; anything else would need merging.
          if (seen && (seen.name.value !== s.name.value || seen.selectionSet || s.selectionSet))
            throw unsupported;
          if (!seen) fields.set(name, s);
          continue;
        }
        const fragment = s.kind === Kind.INLINE_FRAGMENT ? s : fragments.get(s.name.value);
        if (!fragment || (fragment.typeCondition && fragment.typeCondition.name.value !== type.name))
          throw unsupported;
        collect(fragment.selectionSet);
      }
    };
    collect(set);
    return fields;
  };

  /** What shaping does to a value of `type` selected by `node` under a key with rule `strings`. */
  const valueOf = (
    type: GraphQLOutputType,
    node: FieldNode,
    strings: KeyPlan['strings'],
  ): Member | undefined => {
    const nullable = isNonNullType(type) ? type.ofType : type;
    if (isListType(nullable)) {
      // shapeBody gives list items no key rule: only objects inside are shaped.
      const item = valueOf(nullable.ofType, node, 'keep');
      if (!item) return undefined;
      return (list) => {
        if (Array.isArray(list)) for (let i = 0; i < list.length; i++) list[i] = item(list[i]);
        return list;
      };
    }
    if (isObjectType(nullable) && node.selectionSet) return objectOf(nullable, node.selectionSet);
    if (!isLeafType(nullable)) throw unsupported;
    // A custom scalar may carry a JSON object, shaped as shapeBody shapes one (a new copy).
    const objects = !isEnumType(nullable) && !BUILT_IN_SCALARS.has(nullable.name);
    if (strings === 'keep' && !objects) return undefined;
    return (value) =>
      typeof value === 'string'
        ? strings === 'number'
          ? DECIMAL.test(value)
            ? Number(value)
            : value
          : strings === 'lowerCase'
            ? value.toLowerCase()
            : value
        : objects && value !== null && typeof value === 'object'
          ? shapeValue(value, rules)
          : value;
  };

  /** The shaper of an object of `type` with the selection `set`: its members that need work. */
  const objectOf = (type: GraphQLObjectType, set: SelectionSetNode): Member | undefined => {
    const members: Array<{ key: string; shape: Member }> = [];
    for (const [key, node] of fieldsOf(type, set)) {
      const plan = keyPlan(key, rules);
      if (plan.name !== key) throw unsupported;
      const fieldType =
        node.name.value === '__typename' ? GraphQLString : type.getFields()[node.name.value]?.type;
      if (!fieldType) throw unsupported;
      const member = valueOf(fieldType, node, plan.strings);
      if (member) members.push({ key, shape: member });
    }
    if (members.length === 0) return undefined;
    return (value) => {
      if (value === null || typeof value !== 'object') return value;
      const object = value as Record<string, unknown>;
      for (const { key, shape } of members) object[key] = shape(object[key]);
      return object;
    };
  };

  try {
    // Down the result path, every step an object field; the last one is the body.
    let type: GraphQLOutputType | null | undefined = schema.getRootType(operation.operation);
    let set: SelectionSetNode | undefined = operation.selectionSet;
    let node: FieldNode | undefined;
    for (const key of resultPath) {
      const parent: GraphQLOutputType | null | undefined = type && isNonNullType(type) ? type.ofType : type;
      if (!parent || !isObjectType(parent) || !set) return undefined;
      node = fieldsOf(parent, set).get(key);
      if (!node) return undefined;
      type = parent.getFields()[node.name.value]?.type;
      set = node.selectionSet;
    }
    if (!node || !type) return undefined;
    // The body has no key of its own: shapeBody gives its value no rule.
    return valueOf(type, node, 'keep') ?? ((value) => value);
  } catch (e) {
    if (e === unsupported) return undefined;
    throw e;
  }
}
