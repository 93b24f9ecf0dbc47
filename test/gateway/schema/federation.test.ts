import { composeServices as apolloCompose } from '@apollo/composition';
import { composeServices } from '@theguild/federation-composition';
import { buildSchema, isObjectType, parse, type GraphQLSchema } from 'graphql';
import { describe, expect, it } from 'vitest';
import { SUBGRAPH_NAMES } from '../../../src/config.js';
import { FEDERATION_SPEC, PLAN_SPEC } from '../../../src/gateway/schema/federation.js';
import { gatewaySchema, subgraph } from '../../../src/modules.js';

const services = () =>
  SUBGRAPH_NAMES.map((name) => ({
    name,
    url: `http://127.0.0.1/${name}/graphql`,
    typeDefs: parse(subgraph(name).sdl),
  }));

/** `Type.field` of every object type but introspection's and federation's own. */
function coordinates(schema: GraphQLSchema): string[] {
  return Object.values(schema.getTypeMap())
    .filter((type) => isObjectType(type) && !type.name.startsWith('_'))
    .flatMap((type) =>
      isObjectType(type) ? Object.keys(type.getFields()).map((f) => `${type.name}.${f}`) : [],
    )
    .sort();
}

describe('the federation subgraphs', () => {
  it('compose with The Guild’s composition without an error', () => {
    const result = composeServices(services());
    expect(result.errors ?? []).toEqual([]);
  });

  it('compose with Apollo’s composition without an error or a hint', () => {
    const result = apolloCompose(services());
    expect(result.errors ?? []).toEqual([]);
    expect((result.hints ?? []).map((h) => h.toString())).toEqual([]);
  });

  it('together serve exactly the fields of the whole gateway, with its access and plan directives', () => {
    const result = composeServices(services());
    if (result.errors) throw result.errors[0];
    const supergraph = buildSchema(result.publicSdl);
    expect(coordinates(supergraph)).toEqual(coordinates(gatewaySchema()));
    // @plan is composed (@composeDirective), so the supergraph shows plan gates as the SDL does.
    expect(result.supergraphSdl).toMatch(/\): ProtocolConnection! @plan\(min: ANALYST\)/);
  });

  it('link Federation 2.9 for the access and demand-control directives, and our own spec for @plan', () => {
    for (const name of SUBGRAPH_NAMES) {
      const { sdl } = subgraph(name);
      expect(sdl).toContain(`@link(url: "${FEDERATION_SPEC}", import: [`);
      expect(sdl).toContain(`@link(url: "${PLAN_SPEC}", import: ["@plan"]) @composeDirective(name: "@plan")`);
      // Federation defines these: the subgraph uses them, never redeclares them.
      expect(sdl).not.toMatch(/directive @(authenticated|requiresScopes|cost|listSize)\b/);
      expect(sdl).toContain('directive @plan(min: PlanLevel!)');
      expect(sdl).toMatch(/type PageInfo @shareable/);
    }
    expect(subgraph('accounts').sdl).toMatch(/type Viewer @key\(fields: "accountId"\) @authenticated/);
    expect(subgraph('liquidity').sdl).toMatch(/@cost\(weight: 500\)/);
  });

  it('answer _service and _entities only where the spec asks: _entities in a subgraph with entities', () => {
    const fieldsOf = (name: (typeof SUBGRAPH_NAMES)[number]) =>
      Object.keys(subgraph(name).schema.getQueryType()!.getFields());
    expect(fieldsOf('accounts')).toEqual(expect.arrayContaining(['_service', '_entities']));
    expect(fieldsOf('port-ops')).toContain('_service');
    expect(fieldsOf('port-ops')).not.toContain('_entities');
  });
});
