import fc from 'fast-check';
import {
  Kind,
  getNamedType,
  isInputObjectType,
  type GraphQLInputType,
  type OperationDefinitionNode,
} from 'graphql';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadOperations } from '../../src/gateway/doors/rest.js';
import type { ParamSpec, RestRoute } from '../../src/gateway/doors/rest-routes.js';
import { gatewaySchema } from '../../src/modules.js';
import { MODULES } from '../../src/modules.js';
import { describeEachDialect } from '../helpers/env.js';
import {
  DEEP_BODY,
  RawJson,
  encodeHostile,
  expectNamesAField,
  fuzz,
  hostileJson,
  hostileString,
  namesIn,
  oneHostile,
  plausibleOr,
  plausibleValues,
  changedTables,
  rowCounts,
  startFuzzTarget,
  type FuzzTarget,
} from './harness.js';
import { inputArbitrary, inputFieldNames } from './inputs.js';

/**
 * Every REST route — the shim tables of every module plus the hand-written streaming routes — is
 * driven with generated hostile path, query and body values. Whatever comes in, the answer is
 * never a 5xx; a refusal writes nothing; a 400 names the field it refuses.
 */

/** Generated requests per route per dialect (src/kernel/README.md quotes RUNS_PER_ROUTE × routes). */
export const RUNS_PER_ROUTE = 8;

/** The hand-written routes (they stream), described like shims so they are fuzzed the same way. */
const HAND_WRITTEN: RestRoute[] = [
  {
    method: 'GET',
    path: '/v1/export',
    operation: '',
    result: '',
    variables: {
      format: { from: 'query', type: 'string' },
      profile_id: { from: 'query', type: 'string' },
    },
  },
  {
    method: 'POST',
    path: '/v1/documents',
    operation: '',
    result: '',
  },
  {
    method: 'PUT',
    path: '/v1/documents/uploads',
    operation: '',
    result: '',
    variables: { token: { from: 'query', type: 'string' } },
  },
  { method: 'GET', path: '/v1/documents/:id/content', operation: '', result: '' },
];

const ROUTES: RestRoute[] = [...MODULES.flatMap((m) => m.restRoutes ?? []), ...HAND_WRITTEN];
const schema = gatewaySchema();
const operations = loadOperations();

/** The GraphQL input type a whole-body variable is bound to, for the body's field names. */
function bodyType(route: RestRoute, variable: string): GraphQLInputType | undefined {
  const operation = operations
    .get(route.operation)
    ?.definitions.find((d): d is OperationDefinitionNode => d.kind === Kind.OPERATION_DEFINITION);
  const definition = operation?.variableDefinitions?.find((v) => v.variable.name.value === variable);
  if (!definition) return undefined;
  let node = definition.type;
  while (node.kind !== Kind.NAMED_TYPE) node = node.type;
  return schema.getType(node.name.value) as GraphQLInputType | undefined;
}

interface GeneratedRequest {
  method: string;
  path: string;
  names: Set<string>;
  body?: unknown;
}

function requestArbitrary(route: RestRoute, target: FuzzTarget): fc.Arbitrary<GeneratedRequest> {
  const plausible = plausibleValues(target);
  const pathNames = [...route.path.matchAll(/:(\w+)/g)].map((m) => m[1]!);
  const specs = Object.entries(route.variables ?? {});
  const queries = specs.filter(([, s]) => s.from === 'query').map(([v, s]) => s.name ?? v);
  const namedSpecs = specs.filter(([, s]) => s.from === 'body' && s.name).map(([, s]) => s);
  const named = namedSpecs.map((s) => s.name!);
  const whole = specs.find(([, s]) => s.from === 'body' && !s.name);
  // A refusal may name a required field the request left out, or the variable the body binds to.
  const known = whole ? [whole[0], ...inputFieldNames(bodyType(route, whole[0]))] : [];
  const queryValue = (name: string) =>
    fc.oneof(
      plausibleOr(
        (plausible[name] ?? []).filter((v) => typeof v === 'string'),
        hostileString,
      ),
      fc.array(hostileString, { minLength: 2, maxLength: 2 }),
    );
  const body: fc.Arbitrary<unknown> = !route.operation
    ? hostileJson
    : whole
      ? fc.oneof(
          { arbitrary: wholeBody(route, whole[0], plausible), weight: 4 },
          { arbitrary: hostileJson, weight: 1 },
        )
      : named.length > 0
        ? fc.oneof(
            { arbitrary: oneHostile(goodBody(namedSpecs, plausible), fieldsOf(named, plausible)), weight: 4 },
            { arbitrary: fc.record(fieldsOf(named, plausible), { requiredKeys: [] }), weight: 2 },
            { arbitrary: hostileJson, weight: 1 },
          )
        : fc.constantFrom(undefined, {}, [], DEEP_BODY);
  return fc
    .record({
      path: fc.tuple(...pathNames.map((n) => plausibleOr(plausible[n] ?? plausible.id!, hostileString))),
      query: fc.record(Object.fromEntries(queries.map((q) => [q, queryValue(q)])), { requiredKeys: [] }),
      body,
    })
    .map(({ path, query, body }) => {
      let i = 0;
      const url = route.path.replace(/:(\w+)/g, () => encodeHostile(String(path[i++])));
      const search = Object.entries(query as Record<string, string | string[]>)
        .flatMap(([k, v]) => (Array.isArray(v) ? v : [v]).map((one) => `${k}=${encodeHostile(one)}`))
        .join('&');
      const names = new Set([...pathNames, ...queries, ...named, ...known, ...namesIn(body), 'body', 'path']);
      // fetch sends no body with GET; anything else may carry one.
      const sent = route.method === 'GET' ? undefined : body;
      return { method: route.method, path: search ? `${url}?${search}` : url, names, body: sent };
    });
}

/** Values that pass for each named body field: its plausible value, else one of its type. */
function goodBody(
  specs: ParamSpec[],
  plausible: Record<string, readonly unknown[]>,
): Record<string, unknown> {
  const byType: Record<ParamSpec['type'], unknown> = {
    string: 'Fuzz',
    int: 1,
    float: 1,
    boolean: true,
    json: {},
    stringList: ['Fuzz'],
  };
  return Object.fromEntries(specs.map((s) => [s.name!, plausible[s.name!]?.[0] ?? byType[s.type]]));
}

function fieldsOf(names: string[], plausible: Record<string, readonly unknown[]>) {
  return Object.fromEntries(names.map((n) => [n, plausibleOr(plausible[n] ?? [])]));
}

function wholeBody(
  route: RestRoute,
  variable: string,
  plausible: Record<string, readonly unknown[]>,
): fc.Arbitrary<unknown> {
  const type = bodyType(route, variable);
  if (!type || !isInputObjectType(getNamedType(type))) throw new Error(`${route.path}: no input type`);
  return inputArbitrary(getNamedType(type) as GraphQLInputType, plausible);
}

async function send(target: FuzzTarget, request: GeneratedRequest) {
  const headers: Record<string, string> = { 'x-api-key': target.key };
  let payload: string | undefined;
  if (request.body !== undefined) {
    headers['content-type'] = 'application/json';
    payload = request.body instanceof RawJson ? request.body.text : JSON.stringify(request.body);
  }
  const res = await fetch(`${target.server.url}${request.path}`, {
    method: request.method,
    headers,
    body: payload,
  });
  const text = await res.text();
  return { status: res.status, text };
}

describeEachDialect(
  'REST fuzz: no input makes a 5xx, a refusal names the field and writes nothing',
  (dialect) => {
    let target: FuzzTarget;
    beforeAll(async () => {
      target = await startFuzzTarget(dialect);
    });
    afterAll(async () => target?.server.close());

    it('covers every route of the shim tables and the hand-written routes', () => {
      expect(ROUTES.length).toBeGreaterThan(60);
    });

    describe.each(ROUTES.map((r) => [`${r.method} ${r.path}`, r] as const))('%s', (_name, route) => {
      it(`answers ${RUNS_PER_ROUTE} hostile requests without a 5xx`, async () => {
        await fuzz(
          requestArbitrary(route, target),
          async (request) => {
            const before = await rowCounts(target.server);
            const res = await send(target, request);
            const context = `${request.method} ${request.path.slice(0, 200)} → ${res.status} ${res.text.slice(0, 300)}`;
            expect(res.status, context).toBeLessThan(500);
            expect(res.text, context).not.toContain('Internal server error');
            if (res.status < 400) return;
            expect(
              changedTables(before, await rowCounts(target.server)),
              `${context}: a refusal wrote rows`,
            ).toEqual([]);
            if (res.status === 400) {
              const error = JSON.parse(res.text).error as { message: string; details?: { field?: unknown } };
              expectNamesAField(error.message, error.details?.field, request.names, context);
            }
          },
          RUNS_PER_ROUTE,
        );
      });
    });
  },
);
