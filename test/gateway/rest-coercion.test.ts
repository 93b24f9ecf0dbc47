import { buildSchema, parse } from 'graphql';
import { compileQuery, isCompiledQuery } from 'graphql-jit';
import { describe, expect, it } from 'vitest';
import { coercionError } from '../../src/gateway/rest.js';
import type { RestRoute } from '../../src/gateway/rest-routes.js';

// The messages come from the real query engine, so a change in its wording fails this test.
const schema = buildSchema(`
  input LineInput { description: String! quantity: Int! }
  enum Priority { NORMAL URGENT }
  input OrderInput { vendorId: ID! dueDate: Int lines: [LineInput!]! priority: Priority }
  type Query { order(input: OrderInput!, pageSize: Int): String }
`);
const compiled = (() => {
  const result = compileQuery(
    schema,
    parse('query Order($input: OrderInput!, $pageSize: Int) { order(input: $input, pageSize: $pageSize) }'),
    'Order',
  );
  if (!isCompiledQuery(result)) throw new Error('test query does not compile');
  return result;
})();

const route: RestRoute = {
  method: 'POST',
  path: '/v1/orders',
  operation: 'Order',
  result: 'order',
  variables: {
    input: { from: 'body', type: 'json', required: true },
    pageSize: { from: 'query', name: 'page_size', type: 'json' },
  },
};

async function errorFor(variables: Record<string, unknown>) {
  const result = await compiled.query(undefined, {}, variables);
  const message = result.errors?.[0]?.message ?? '';
  const error = coercionError(message, route);
  if (!error) throw new Error(`not recognised as a coercion error: ${message}`);
  return { message: error.message, field: error.details.field };
}

describe('REST coercion errors', () => {
  it('names a missing body field the way the caller sends it', async () => {
    expect(await errorFor({ input: { lines: [] } })).toEqual({
      message: 'vendorId: is required (ID!)',
      field: 'vendorId',
    });
  });

  it('names a body field of the wrong type', async () => {
    const error = await errorFor({ input: { vendorId: 'v', lines: [], dueDate: 'soon' } });
    expect(error).toEqual({
      field: 'dueDate',
      message: 'dueDate: must be of type Int (Int cannot represent non-integer value: "soon")',
    });
  });

  it('shows the value that did not fit when the engine gives no reason', async () => {
    expect(await errorFor({ input: { vendorId: 'v', lines: [], priority: 'ASAP' } })).toEqual({
      field: 'priority',
      message: 'priority: must be of type Priority (got "ASAP")',
    });
  });

  it('names a query parameter by its HTTP name, not the GraphQL variable', async () => {
    const error = await errorFor({ input: { vendorId: 'v', lines: [] }, pageSize: 'ten' });
    expect(error.field).toBe('page_size');
    expect(error.message).toMatch(/^page_size: must be of type Int/);
  });

  it('leaves other errors alone', () => {
    expect(coercionError('Something else went wrong', route)).toBeUndefined();
  });
});
