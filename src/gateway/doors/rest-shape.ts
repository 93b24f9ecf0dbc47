import { deepFreeze } from '../pipeline/answers.js';

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
