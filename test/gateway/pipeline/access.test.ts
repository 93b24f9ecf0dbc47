import { GraphQLError, buildSchema, parse } from 'graphql';
import { describe, expect, it } from 'vitest';
import { AccessPolicy, checkAccess } from '../../../src/gateway/pipeline/access.js';
import { chooseOperation } from '../../../src/gateway/pipeline/operation.js';
import { Plan } from '../../../src/kernel/plans.js';
import type { Principal } from '../../../src/kernel/principal.js';

// A schema written as SDL so every shape the pass must follow is present: interfaces,
// unions, type-level rules and OR-of-AND groups.
const schema = buildSchema(`
  directive @authenticated on FIELD_DEFINITION | OBJECT | INTERFACE
  directive @requiresScopes(scopes: [[String!]!]!) on FIELD_DEFINITION | OBJECT | INTERFACE
  directive @plan(min: String!) on FIELD_DEFINITION | OBJECT | INTERFACE

  type Query {
    public: String
    vessel: Vessel @requiresScopes(scopes: [["read:vessels"]])
    node: Node @authenticated
    search: SearchResult @authenticated
    backtest: String @plan(min: "ANALYST") @requiresScopes(scopes: [["read:liquidity"]])
    export: String @plan(min: "PROFESSIONAL")
    either: String @requiresScopes(scopes: [["read:port_calls", "read:vessels"], ["read:analytics"]])
  }
  type Mutation { createOrder: String @requiresScopes(scopes: [["write:service_orders"]]) }
  interface Node { id: ID! }
  type Vessel implements Node { id: ID! name: String owner: String @requiresScopes(scopes: [["read:vendors"]]) }
  type Invoice implements Node @requiresScopes(scopes: [["read:invoices"]]) { id: ID! total: String }
  union SearchResult = Vessel | Invoice
`);
const policy = new AccessPolicy(schema);

function principal(scopes: string[], plan: Plan = Plan.ANALYST): Principal {
  return { accountId: 'a', plan, scopes: new Set(scopes), credential: { kind: 'api_key', id: 'k' } };
}

/** The requirements of the operation the pipeline chooses (its refusal thrown). */
const req = (query: string, operationName?: string) => {
  const document = parse(query);
  const operation = chooseOperation(document, operationName);
  if (operation instanceof GraphQLError) throw operation;
  return policy.requirements(document, operation);
};
const codes = (query: string, p: Principal | null) => checkAccess(req(query), p).map((e) => e.code);
const missing = (query: string, p: Principal) =>
  checkAccess(req(query), p).find((e) => e.code === 'FORBIDDEN')?.details.requiredScopes;

describe('access pass', () => {
  it('requires a caller for every root field, but not for introspection alone', () => {
    expect(codes('{ public }', null)).toEqual(['UNAUTHENTICATED']);
    expect(codes('{ __typename __schema { queryType { name } } }', null)).toEqual([]);
  });

  it('names the missing scope of a field', () => {
    expect(missing('{ vessel { name } }', principal([]))).toEqual(['read:vessels']);
    expect(codes('{ vessel { name } }', principal(['read:vessels']))).toEqual([]);
  });

  it('lists every missing scope of the operation at once', () => {
    expect(missing('{ vessel { name owner } }', principal([]))).toEqual(['read:vessels', 'read:vendors']);
  });

  it('follows named fragments and inline fragments', () => {
    expect(
      missing('query { vessel { ...V } } fragment V on Vessel { owner }', principal(['read:vessels'])),
    ).toEqual(['read:vendors']);
    expect(missing('{ node { ... on Vessel { owner } } }', principal([]))).toEqual(['read:vendors']);
  });

  it('applies type-level rules to inline fragments on union members', () => {
    expect(missing('{ search { ... on Invoice { total } } }', principal([]))).toEqual(['read:invoices']);
    expect(codes('{ search { ... on Vessel { name } } }', principal([]))).toEqual([]);
  });

  it("applies every implementation's rule to a field selected on an interface", () => {
    // `id` on Node could resolve through Invoice, whose type needs read:invoices.
    expect(missing('{ node { id ... on Invoice { id } } }', principal([]))).toEqual(['read:invoices']);
  });

  it('applies the type rules of every possible type of an interface or union, fragments or not', () => {
    // Without any fragment the answer may still be an Invoice.
    expect(missing('{ node { id } }', principal([]))).toEqual(['read:invoices']);
    expect(missing('{ search { __typename } }', principal([]))).toEqual(['read:invoices']);
    expect(codes('{ node { id } }', principal(['read:invoices']))).toEqual([]);
  });

  it('treats groups as OR of AND', () => {
    expect(codes('{ either }', principal(['read:port_calls', 'read:vessels']))).toEqual([]);
    expect(codes('{ either }', principal(['read:analytics']))).toEqual([]);
    // Names the cheapest group to complete, and keeps the other ways in anyOf and the message.
    expect(missing('{ either }', principal(['read:port_calls']))).toEqual(['read:vessels']);
    const [error] = checkAccess(req('{ either }'), principal(['read:port_calls']));
    expect(error!.details.anyOf).toEqual([[['read:vessels'], ['read:analytics']]]);
    expect(error!.message).toBe('Missing required scope: read:vessels (or instead: read:analytics)');
  });

  it('lets admin satisfy every scope and every plan', () => {
    expect(codes('{ vessel { owner } backtest export }', principal(['admin'], Plan.OBSERVER))).toEqual([]);
  });

  it('checks plans before scopes and reports both', () => {
    const errors = checkAccess(req('{ backtest }'), principal([], Plan.OBSERVER));
    expect(errors.map((e) => e.code)).toEqual(['PLAN_REQUIRED', 'FORBIDDEN']);
    expect(errors[0]!.details).toMatchObject({ requiredPlan: 'ANALYST', currentPlan: 'OBSERVER' });
    expect(errors[0]!.message).toMatch(/requires the Analyst plan or higher/);
  });

  it('takes the highest plan of all fields', () => {
    expect(req('{ backtest export }').plan).toBe('PROFESSIONAL');
    expect(codes('{ backtest export }', principal(['read:liquidity'], Plan.ANALYST))).toEqual([
      'PLAN_REQUIRED',
    ]);
  });

  it('checks the operation that will run when a document holds several', () => {
    const doc = 'query A { public } mutation B { createOrder }';
    expect(req(doc, 'A').operationType).toBe('query');
    expect(checkAccess(req(doc, 'A'), principal([]))).toEqual([]);
    expect(() => req(doc)).toThrow('Must provide operation name if query contains multiple operations.');
    expect(() => req(doc, 'C')).toThrow('Unknown operation named "C".');
    expect(checkAccess(req(doc, 'B'), principal([]))[0]!.details.requiredScopes).toEqual([
      'write:service_orders',
    ]);
  });

  it('gives a hand-written route the rule of the field it stands for', () => {
    expect(policy.fieldRequirements('Query.export')).toMatchObject({
      plan: 'PROFESSIONAL',
      authenticated: true,
    });
    expect(() => policy.fieldRequirements('Query.nope')).toThrow(/No schema field/);
  });
});
