import { describe, expectTypeOf, it } from 'vitest';
import type { V1Result } from '../../src/client/index.js';

/*
 * The client's /v1 helpers are typed from the generated documents (src/generated/rest-routes.ts).
 * These assertions are checked by `npm run typecheck`: a route whose body the types misdescribe
 * fails it.
 */
describe("the client's /v1 result types", () => {
  it('describe the liquidity bodies as the routes shape them: numbers, lower-case category, keys as sent', () => {
    type Market = V1Result<'market'>;
    expectTypeOf<Market['total_aum_usd']>().toEqualTypeOf<number>();
    expectTypeOf<NonNullable<Market['category']>>().toEqualTypeOf<
      'treasury' | 'private_credit' | 'real_estate' | 'commodity' | 'infrastructure'
    >();
    expectTypeOf<Exclude<keyof Market['tier_distribution'], '__typename'>>().toEqualTypeOf<
      'L1' | 'L2' | 'L3' | 'ILLIQUID'
    >();
    type Protocol = V1Result<'protocols'>[number];
    expectTypeOf<Protocol['aum_usd']>().toEqualTypeOf<number>();
  });

  it('keep the port-operations bodies as GraphQL answers them (decimal strings, camelCase)', () => {
    type Order = V1Result<'serviceOrder'>;
    expectTypeOf<Order['portCallId']>().toEqualTypeOf<string>();
  });
});
