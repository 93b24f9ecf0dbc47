import 'reflect-metadata';
import { buildSchema, getOperationAST, parse } from 'graphql';
import { describe, expect, it } from 'vitest';
import { loadOperations } from '../../../src/gateway/doors/rest.js';
import { bodyJson, compileShaper, shapeBody, snakeCaseKey } from '../../../src/gateway/doors/rest-shape.js';
import { bodyOf, deepFreeze } from '../../../src/gateway/pipeline/answers.js';
import { buildGatewaySchema } from '../../../src/gateway/schema/build.js';
import { liquidityRestRoutes } from '../../../src/liquidity/rest.js';
import { MODULES } from '../../../src/modules.js';

describe('REST body shaping', () => {
  const shape = { numbers: ['aum_usd'], lowerCase: ['category'], snakeCaseKeys: true };

  it('sends decimal strings as numbers, named values lower-case, camelCase keys snake_case at every level', () => {
    const body = [
      {
        aum_usd: '1223214081.29',
        category: 'PRIVATE_CREDIT',
        yield_attribution: [{ source: 'T-bills', sharePct: 100 }],
        inputs: { asOf: '2026-11-23', nested: { redemptionFrequencyDays: 7 } },
        tier_distribution: { L1: 3, ILLIQUID: 1 },
      },
    ];
    expect(shapeBody(body, shape)).toEqual([
      {
        aum_usd: 1223214081.29,
        category: 'private_credit',
        yield_attribution: [{ source: 'T-bills', share_pct: 100 }],
        inputs: { as_of: '2026-11-23', nested: { redemption_frequency_days: 7 } },
        tier_distribution: { L1: 3, ILLIQUID: 1 },
      },
    ]);
  });

  it('leaves a body without a shape, and values that are not decimals, as they are', () => {
    const body = { aumUsd: '12.50' };
    expect(shapeBody(body, undefined)).toBe(body);
    expect(shapeBody({ aum_usd: 'n/a', category: null }, shape)).toEqual({ aum_usd: 'n/a', category: null });
  });

  it('snake-cases camelCase keys only', () => {
    expect(['sharePct', 'filedOn', 'aum_usd', 'L1', 'ILLIQUID', 'id'].map(snakeCaseKey)).toEqual([
      'share_pct',
      'filed_on',
      'aum_usd',
      'L1',
      'ILLIQUID',
      'id',
    ]);
  });

  it('shapes a kept (frozen) result once for all the requests it serves, a fresh one every time', () => {
    const kept = Object.freeze([Object.freeze({ aum_usd: '1.50', category: 'TREASURY' })]);
    const first = shapeBody(kept, shape);
    expect(first).toEqual([{ aum_usd: 1.5, category: 'treasury' }]);
    expect(shapeBody(kept, shape)).toBe(first);
    const fresh = [{ aum_usd: '1.50', category: 'TREASURY' }];
    expect(shapeBody(fresh, shape)).not.toBe(shapeBody(fresh, shape));
  });

  it('shapes every key the same way however many distinct keys its bodies hold (data inside JSON values)', () => {
    const own = { numbers: ['aum_usd'], lowerCase: ['category'], snakeCaseKeys: true };
    const many = Object.fromEntries(Array.from({ length: 3_000 }, (_, i) => [`key${i}Name`, i]));
    const shaped = shapeBody({ inputs: many, aum_usd: '2.50', category: 'TREASURY' }, own) as {
      inputs: Record<string, number>;
    };
    expect(Object.keys(shaped.inputs)).toHaveLength(3_000);
    expect(shaped.inputs.key0_name).toBe(0);
    expect(shaped.inputs.key2999_name).toBe(2999);
    // Past the keys it remembers, known ones keep their plan.
    expect(shapeBody({ aum_usd: '2.50', category: 'TREASURY', shareOfTotal: '1.0' }, own)).toEqual({
      aum_usd: 2.5,
      category: 'treasury',
      share_of_total: '1.0',
    });
  });
});

describe('REST body shaping compiled per route', () => {
  const shape = { numbers: ['aum_usd'], lowerCase: ['category'], snakeCaseKeys: true };
  const schema = buildSchema(`
    scalar JSON
    enum Category { TREASURY PRIVATE_CREDIT }
    type Source { source: String! share_pct: Float! }
    type Item {
      slug: String!
      aumUsd: String
      category: Category
      chains: [String!]!
      inputs: JSON
      sources: [Source!]!
      camelCase: String
    }
    type Page { nodes: [Item!]! }
    type Query { items(first: Int): Page! item: Item }
  `);
  const shaperOf = (source: string, path: string) => {
    const document = parse(source);
    const operation = getOperationAST(document)!;
    return compileShaper(shape, schema, document, operation, path.split('.'));
  };
  const LIST = `
    query List($first: Int) { items(first: $first) { nodes { ...Row } } }
    fragment Row on Item {
      slug
      aum_usd: aumUsd
      category
      chains
      inputs
      sources { source share_pct }
      slug
    }`;
  /** What the executor would answer: a new object per selected object, a new array per list. */
  const fresh = () => [
    {
      slug: 'a',
      aum_usd: '1223214081.29',
      category: 'PRIVATE_CREDIT',
      chains: ['ethereum', 'base'],
      inputs: { asOf: '2026-11-23', aum_usd: '5.00', nested: { redemptionFrequencyDays: 7 } },
      sources: [{ source: 'T-bills', share_pct: 100 }],
    },
    { slug: 'b', aum_usd: 'n/a', category: null, chains: [], inputs: null, sources: [] },
  ];

  it('compiles a shaper for every liquidity route', () => {
    const gateway = buildGatewaySchema(MODULES);
    const documents = loadOperations();
    for (const route of liquidityRestRoutes) {
      const document = documents.get(route.operation)!;
      const shaper = compileShaper(
        route.shape!,
        gateway,
        document,
        getOperationAST(document, route.operation)!,
        route.result.split('.'),
      );
      expect({ route: route.path, compiled: shaper !== undefined }).toEqual({
        route: route.path,
        compiled: true,
      });
    }
  });

  it('gives the body shapeBody gives, in place, copying JSON values rather than changing them', () => {
    const shaper = shaperOf(LIST, 'items.nodes')!;
    const value = fresh();
    const inputs = value[0]!.inputs;
    const expected = bodyOf(shapeBody(fresh(), shape));
    expect(bodyJson(value, shape, shaper)).toEqual(expected);
    expect(value[0]!.aum_usd).toBe(1223214081.29); // the executor's own object, shaped in place
    // A resolver's JSON value may be shared (a read model's object): shaped as a copy.
    expect(inputs).toEqual({ asOf: '2026-11-23', aum_usd: '5.00', nested: { redemptionFrequencyDays: 7 } });
    // A body shared by joined executions may be shaped twice: the same text.
    expect(bodyJson(value, shape, shaper)).toEqual(expected);
  });

  it('leaves kept (frozen) bodies and leaves to shapeBody', () => {
    const shaper = shaperOf(LIST, 'items.nodes')!;
    const kept = deepFreeze(fresh());
    expect(String(bodyJson(kept, shape, shaper))).toBe(String(bodyOf(shapeBody(fresh(), shape))));
    expect(bodyJson(null, shape, shaper)).toBe('null');
    const one = shaperOf('{ item { slug category } }', 'item')!;
    expect(bodyJson({ slug: 'x', category: 'TREASURY' }, shape, one)).toBe(
      '{"slug":"x","category":"treasury"}',
    );
  });

  it('compiles nothing for a selection it does not follow: the route shapes a copy as before', () => {
    expect(shaperOf('{ item { slug camelCase } }', 'item')).toBeUndefined(); // a key to rename
    expect(shaperOf('query($x: Boolean!) { item { slug @include(if: $x) } }', 'item')).toBeUndefined();
    expect(shaperOf('{ item { slug } }', 'items.nodes')).toBeUndefined(); // not selected
    expect(shaperOf('{ items { nodes { slug } } }', 'items.nodes.slug')).toBeUndefined(); // through a list
  });
});
