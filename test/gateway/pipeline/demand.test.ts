import { getOperationAST, parse } from 'graphql';
import { describe, expect, it } from 'vitest';
import { estimateCost } from '../../../src/gateway/pipeline/demand.js';
import { gatewaySchema } from '../../../src/modules.js';

const schema = gatewaySchema();
const cost = (query: string, variables: Record<string, unknown> = {}, operationName?: string) => {
  const document = parse(query);
  return estimateCost(schema, document, getOperationAST(document, operationName)!, variables);
};

describe('estimateCost', () => {
  it('charges a computing field its @cost weight, once per alias', () => {
    // 4000 for the prediction, 1 for basis.
    expect(cost('{ portCallPrediction(portCallId: "x") { basis } }')).toBe(4001);
    expect(
      cost(
        '{ a: portCallPrediction(portCallId: "x") { basis } b: portCallPrediction(portCallId: "y") { basis } }',
      ),
    ).toBe(8002);
    // An ingest's work grows with its text: priced like a prediction, so a few fit in one operation.
    expect(cost('mutation { ingestLiquidityMetrics(text: "x") { rows } }')).toBe(4001);
  });

  it('multiplies a page by its size: a literal, a known variable, the default page, or the largest page when unknown', () => {
    const page = 'query Page($n: Int) { vessels(first: $n) { nodes { imo } } }';
    // vessels 1 + n × (nodes 1 + imo 1)
    expect(cost('{ vessels(first: 5) { nodes { imo } } }')).toBe(1 + 5 * 2);
    expect(cost(page, { n: 7 })).toBe(1 + 7 * 2);
    expect(cost(page, {})).toBe(1 + 20 * 2);
  });

  it('uses @listSize(assumedSize:) for a list no argument slices', () => {
    // bunkerDemandForecast: 2000 + 9 series × (months 1 + p50 1).
    expect(cost('{ bunkerDemandForecast(portLocode: "SGSIN") { months { p50 } } }')).toBe(2000 + 9 * 2);
  });

  it('leaves out what @skip/@include leave out when the condition is known', () => {
    const query =
      'query Q($on: Boolean!) { portCallPrediction(portCallId: "x") @include(if: $on) { basis } }';
    expect(cost(query, { on: false })).toBe(0);
    expect(cost(query, { on: true })).toBe(4001);
    expect(cost('{ portCallPrediction(portCallId: "x") @skip(if: true) { basis } }')).toBe(0);
  });

  it('prices the operation it is handed, not the others of its document', () => {
    const document = 'query A { market { asOf } } query B { portCallPrediction(portCallId: "x") { basis } }';
    expect(cost(document, {}, 'A')).toBe(101);
    expect(cost(document, {}, 'B')).toBe(4001);
  });
});
