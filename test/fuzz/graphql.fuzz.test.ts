import { getNamedType, isLeafType, type GraphQLArgument, type GraphQLField } from 'graphql';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { gatewaySchema } from '../../src/modules.js';
import { describeEachDialect } from '../helpers/env.js';
import { gql } from '../helpers/server.js';
import {
  expectNamesAField,
  fuzz,
  namesIn,
  oneHostile,
  plausibleValues,
  changedTables,
  rowCounts,
  startFuzzTarget,
  type FuzzTarget,
} from './harness.js';
import { goodValue, inputArbitrary, inputFieldNames } from './inputs.js';

/**
 * Every mutation of the schema (found by introspection, so a new one is fuzzed without a change
 * here) runs with generated hostile arguments. Whatever comes in: no 5xx, no "Internal server
 * error", a refused mutation writes nothing, and a BAD_USER_INPUT names the field.
 */

/** Generated operations per mutation per dialect (src/kernel/README.md quotes RUNS_PER_MUTATION × mutations). */
export const RUNS_PER_MUTATION = 12;

const MUTATIONS = Object.values(gatewaySchema().getMutationType()!.getFields());

interface GeneratedOperation {
  query: string;
  variables: Record<string, unknown>;
  names: Set<string>;
}

function operationArbitrary(
  field: GraphQLField<unknown, unknown>,
  target: FuzzTarget,
): fc.Arbitrary<GeneratedOperation> {
  const plausible = plausibleValues(target);
  const args: readonly GraphQLArgument[] = field.args;
  const selection = isLeafType(getNamedType(field.type)) ? '' : ' { __typename }';
  const declared = args.map((a) => `$${a.name}: ${String(a.type)}`).join(', ');
  const passed = args.map((a) => `${a.name}: $${a.name}`).join(', ');
  const query = args.length
    ? `mutation Fuzz(${declared}) { ${field.name}(${passed})${selection} }`
    : `mutation Fuzz { ${field.name}${selection} }`;
  // A refusal may name any argument or input field, sent or left out.
  const known = args.flatMap((a) => [a.name, ...inputFieldNames(a.type)]);
  const good = Object.fromEntries(args.map((a) => [a.name, goodValue(a.type, plausible, a.name)]));
  const hostile = Object.fromEntries(args.map((a) => [a.name, inputArbitrary(a.type, plausible, a.name)]));
  return fc
    .oneof(
      { arbitrary: oneHostile(good, hostile), weight: 3 },
      { arbitrary: fc.record(hostile, { requiredKeys: [] }), weight: 1 },
    )
    .map((variables) => ({
      query,
      variables,
      // Ingestion names the file it reads (`file: contains no rows`, `slug: line 3: …`).
      names: new Set([...known, ...namesIn(variables), 'body', 'file']),
    }));
}

describeEachDialect(
  'GraphQL fuzz: no mutation input makes a 5xx or an internal error, refusals write nothing',
  (dialect) => {
    let target: FuzzTarget;
    beforeAll(async () => {
      target = await startFuzzTarget(dialect);
    });
    afterAll(async () => target?.server.close());

    it('finds every mutation of the schema', () => {
      expect(MUTATIONS.length).toBeGreaterThan(30);
    });

    describe.each(MUTATIONS.map((f) => [f.name, f] as const))('%s', (_name, field) => {
      it(`answers ${RUNS_PER_MUTATION} hostile operations without an internal error`, async () => {
        await fuzz(
          operationArbitrary(field, target),
          async (operation) => {
            const before = await rowCounts(target.server);
            const res = await gql(target.server.url, operation.query, {
              variables: operation.variables,
              key: target.key,
            });
            const errors = res.body.errors ?? [];
            const context = `${field.name} → ${res.status} ${JSON.stringify(errors).slice(0, 400)}`;
            expect(res.status, context).toBeLessThan(500);
            for (const error of errors) {
              expect(error.message, context).not.toMatch(/internal server error/i);
              expect(error.extensions?.code, context).not.toBe('INTERNAL_SERVER_ERROR');
            }
            if (errors.length === 0) return;
            expect(
              changedTables(before, await rowCounts(target.server)),
              `${context}: a refusal wrote rows`,
            ).toEqual([]);
            for (const error of errors.filter((e) => e.extensions?.code === 'BAD_USER_INPUT'))
              expectNamesAField(error.message, error.extensions?.field, operation.names, context);
          },
          RUNS_PER_MUTATION,
        );
      });
    });
  },
);
