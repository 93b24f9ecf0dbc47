import fc from 'fast-check';
import {
  isEnumType,
  isInputObjectType,
  isListType,
  isNonNullType,
  isScalarType,
  getNamedType,
  type GraphQLInputType,
} from 'graphql';
import { hostileJson, hostileNumber, hostileString, nested, oneHostile, plausibleOr } from './harness.js';

/**
 * Values for a GraphQL input type, mostly of the right shape with hostile leaves and now and then
 * the wrong shape altogether; `plausible` gives known-good values by field name so that a run
 * reaches the checks behind the first one.
 */
export function inputArbitrary(
  type: GraphQLInputType,
  plausible: Record<string, readonly unknown[]>,
  name = '',
  depth = 0,
): fc.Arbitrary<unknown> {
  if (isNonNullType(type)) return inputArbitrary(type.ofType, plausible, name, depth);
  const wrong = hostileJson;
  if (isListType(type)) {
    return fc.oneof(
      {
        arbitrary: fc.array(inputArbitrary(type.ofType, plausible, name, depth + 1), { maxLength: 3 }),
        weight: 3,
      },
      { arbitrary: fc.constantFrom(nested(3, 'x'), nested(1000)), weight: 1 },
      { arbitrary: wrong, weight: 1 },
    );
  }
  if (isInputObjectType(type)) {
    if (depth > 3) return wrong;
    const fields = Object.values(type.getFields());
    const hostile = Object.fromEntries(
      fields.map((f) => [f.name, inputArbitrary(f.type, plausible, f.name, depth + 1)]),
    );
    return fc.oneof(
      {
        arbitrary: oneHostile(goodValue(type, plausible, name, depth) as Record<string, unknown>, hostile),
        weight: 6,
      },
      { arbitrary: fc.record(hostile, { requiredKeys: [] }), weight: 2 },
      { arbitrary: wrong, weight: 1 },
    );
  }
  if (isEnumType(type)) {
    return fc.oneof(fc.constantFrom(...type.getValues().map((v) => v.name)), hostileString, wrong);
  }
  if (isScalarType(type)) {
    const good = plausible[name] ?? [];
    switch (type.name) {
      case 'Int':
      case 'Float':
        return fc.oneof({ arbitrary: hostileNumber, weight: 3 }, { arbitrary: wrong, weight: 1 });
      case 'Boolean':
        return fc.oneof(fc.boolean(), wrong);
      default:
        return fc.oneof(
          { arbitrary: plausibleOr(good, hostileString), weight: 3 },
          { arbitrary: wrong, weight: 1 },
        );
    }
  }
  return wrong;
}

/** Every field name of an input type and the input types inside it. */
export function inputFieldNames(type: GraphQLInputType | undefined, into = new Set<string>()): Set<string> {
  const named = type && getNamedType(type);
  if (!named || !isInputObjectType(named)) return into;
  for (const field of Object.values(named.getFields())) {
    if (into.has(field.name)) continue;
    into.add(field.name);
    inputFieldNames(field.type, into);
  }
  return into;
}

const SOON = new Date(Date.now() + 7 * 86_400_000).toISOString();

/** A value that passes the checks of a field of this type, as far as its name tells: the base a hostile field is set into. */
export function goodValue(
  type: GraphQLInputType,
  plausible: Record<string, readonly unknown[]>,
  name = '',
  depth = 0,
): unknown {
  if (isNonNullType(type)) return goodValue(type.ofType, plausible, name, depth);
  const known = plausible[name];
  if (known && known.length > 0) return known[0];
  if (isListType(type)) return [goodValue(type.ofType, plausible, name, depth + 1)];
  if (isInputObjectType(type)) {
    if (depth > 3) return {};
    return Object.fromEntries(
      Object.values(type.getFields())
        .filter((f) => isNonNullType(f.type))
        .map((f) => [f.name, goodValue(f.type, plausible, f.name, depth + 1)]),
    );
  }
  if (isEnumType(type)) return type.getValues()[0]!.name;
  switch (type.name) {
    case 'Int':
    case 'Float':
      return 1;
    case 'Boolean':
      return true;
    case 'DateTimeISO':
      return SOON;
    case 'JSONObject':
      return {};
    default:
      return `Fuzz ${name}`;
  }
}
