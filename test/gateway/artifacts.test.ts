import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import {
  GENERATED_FILE,
  generateRestRoutes,
  generateTypedDocuments,
  REST_ROUTES_FILE,
} from '../../codegen.js';
import { AccessPolicy } from '../../src/gateway/pipeline/access.js';
import { printGatewaySchema } from '../../src/gateway/schema/build.js';
import { SUBGRAPH_NAMES } from '../../src/config.js';
import { gatewaySchema, subgraph, subgraphSdlFile } from '../../src/modules.js';

describe('checked-in artifacts', () => {
  it('schema/schema.graphql matches the code-first schema (run `npm run schema`)', () => {
    expect(readFileSync('schema/schema.graphql', 'utf8')).toBe(printGatewaySchema(gatewaySchema()));
  });

  it.each(SUBGRAPH_NAMES)(
    'schema/subgraphs/%s.graphql matches the subgraph (run `npm run schema`)',
    (name) => {
      expect(readFileSync(subgraphSdlFile(name), 'utf8')).toBe(subgraph(name).sdl);
    },
  );

  it('src/generated/graphql.ts matches schema/operations (run `npm run codegen`)', async () => {
    expect(readFileSync(GENERATED_FILE, 'utf8')).toBe(await generateTypedDocuments());
  });

  it('src/generated/rest-routes.ts matches the REST route tables (run `npm run codegen`)', async () => {
    expect(readFileSync(REST_ROUTES_FILE, 'utf8')).toBe(await generateRestRoutes());
  });

  it('the SDL declares the access directives and shows them where they apply', () => {
    const sdl = printGatewaySchema(gatewaySchema());
    expect(sdl).toContain('directive @requiresScopes(scopes: [[String!]!]!)');
    expect(sdl).toContain('directive @plan(min: PlanLevel!)');
    expect(sdl).toContain('directive @authenticated');
    expect(sdl).toMatch(/vessel\(imo: String!\): Vessel @requiresScopes\(scopes: \[\["read:vessels"\]\]\)/);
    expect(sdl).toMatch(/viewer: Viewer! @authenticated/);
  });

  it('every root field but viewer names the scopes it needs', () => {
    const schema = gatewaySchema();
    const policy = new AccessPolicy(schema);
    const unscoped = [schema.getQueryType(), schema.getMutationType(), schema.getSubscriptionType()]
      .flatMap((type) =>
        type ? Object.keys(type.getFields()).map((field) => [type.name, field] as const) : [],
      )
      .filter(([type, field]) => !policy.ruleOf(type, field)?.scopes)
      .map(([type, field]) => `${type}.${field}`);
    expect(unscoped).toEqual(['Query.viewer']);
  });
});
