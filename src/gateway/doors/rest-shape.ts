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

interface Compiled {
  numbers: ReadonlySet<string>;
  lowerCase: ReadonlySet<string>;
  snakeCaseKeys: boolean;
}

// Route shapes are module constants: compiled once each, on first use.
const compiled = new WeakMap<RestShape, Compiled>();

function compile(shape: RestShape): Compiled {
  let c = compiled.get(shape);
  if (!c) {
    c = {
      numbers: new Set(shape.numbers),
      lowerCase: new Set(shape.lowerCase),
      snakeCaseKeys: shape.snakeCaseKeys ?? false,
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

function shapeValue(value: unknown, shape: Compiled): unknown {
  if (Array.isArray(value)) return value.map((item) => shapeValue(item, shape));
  if (value === null || typeof value !== 'object') return value;
  const out: Record<string, unknown> = {};
  for (const [key, item] of Object.entries(value)) {
    const name = shape.snakeCaseKeys ? snakeCaseKey(key) : key;
    out[name] =
      typeof item === 'string'
        ? shape.numbers.has(name) && DECIMAL.test(item)
          ? Number(item)
          : shape.lowerCase.has(name)
            ? item.toLowerCase()
            : item
        : shapeValue(item, shape);
  }
  return out;
}
