import {
  GraphQLList,
  GraphQLNonNull,
  GraphQLObjectType,
  GraphQLScalarType,
  GraphQLSchema,
  GraphQLString,
  GraphQLUnionType,
  Kind,
  isObjectType,
  parse,
  print,
  valueFromASTUntyped,
  type ConstDirectiveNode,
  type DefinitionNode,
  type GraphQLFieldConfig,
} from 'graphql';
import { AppError } from '../../kernel/errors.js';
import type { GatewayContext } from './context.js';
import { printGatewaySchema } from './build.js';

/**
 * Apollo Federation 2 on top of a schema built from some of the domains' resolvers: the SDL a
 * router composes (`_service { sdl }`, also checked in under schema/subgraphs/) and the two root
 * fields the federation subgraph spec asks for (`_service`, and `_entities` when the subgraph has
 * entities). The executable schema stays the one type-graphql built: the same resolvers, access
 * directives and pipeline as the whole gateway, with two fields more on Query.
 */

/** The federation version linked: 2.5 brought @authenticated/@requiresScopes, 2.9 @cost/@listSize. */
export const FEDERATION_SPEC = 'https://specs.apollo.dev/federation/v2.9';

/**
 * Our directives that are federation's own: imported through @link, so a router composes and may
 * enforce them (Apollo Router checks @authenticated/@requiresScopes against its JWT; demand control
 * reads @cost/@listSize).
 */
const LINKED_DIRECTIVES = ['authenticated', 'requiresScopes', 'cost', 'listSize'];

/**
 * `@plan` is ours: only a subgraph knows an account's plan, so only the subgraph's pipeline enforces
 * it. It is linked from a spec of our own and kept by composition (@composeDirective), so the
 * supergraph shows plan gates as schema/schema.graphql does; a router passes it through unread.
 */
export const PLAN_SPEC = 'https://tidegate.dev/plan/v1.0';

/** An entity this subgraph resolves by key, for a router that has the key from another subgraph. */
export interface SubgraphEntity {
  /** The @key field set, e.g. `accountId`. */
  key: string;
  /**
   * The entity for a representation (`{ __typename, ...key }`), or null when the caller may not see
   * it. Access is the entity type's own directives: `_entities` is a root field like any other, so
   * a type reached through it must carry its rule on the type (e.g. `@authenticated`).
   */
  resolveReference(representation: Record<string, unknown>, ctx: GatewayContext): unknown;
}

export interface SubgraphDefinition {
  // type-graphql takes resolver classes; their shapes have nothing in common.
  // eslint-disable-next-line @typescript-eslint/no-unsafe-function-type
  resolvers: Function[];
  /** Value types another subgraph resolves as well (PageInfo): Federation 2 wants them @shareable. */
  shareable?: string[];
  entities?: Record<string, SubgraphEntity>;
}

export interface Subgraph {
  /** The executable schema: the built one plus `_service` and `_entities`. */
  schema: GraphQLSchema;
  /** Federation 2 SDL, as `_service { sdl }` answers and schema/subgraphs/<name>.graphql holds. */
  sdl: string;
}

/** The subgraph over `base`, a schema type-graphql built from `definition.resolvers`. */
export function federate(base: GraphQLSchema, definition: SubgraphDefinition): Subgraph {
  const sdl = subgraphSdl(base, definition);
  return { schema: withFederationFields(base, definition.entities ?? {}, sdl), sdl };
}

function directive(name: string, args: Record<string, string | string[]> = {}): ConstDirectiveNode {
  return {
    kind: Kind.DIRECTIVE,
    name: { kind: Kind.NAME, value: name },
    arguments: Object.entries(args).map(([arg, value]) => ({
      kind: Kind.ARGUMENT,
      name: { kind: Kind.NAME, value: arg },
      value: Array.isArray(value)
        ? { kind: Kind.LIST, values: value.map((v) => ({ kind: Kind.STRING, value: v })) }
        : { kind: Kind.STRING, value },
    })),
  };
}

function subgraphSdl(base: GraphQLSchema, definition: SubgraphDefinition): string {
  const shareable = new Set(definition.shareable ?? []);
  const entities = definition.entities ?? {};
  for (const name of [...shareable, ...Object.keys(entities)]) {
    if (!isObjectType(base.getType(name))) throw new Error(`subgraph: ${name} is not an object type here`);
  }
  const used = new Set([...LINKED_DIRECTIVES, 'composeDirective']);
  if (shareable.size > 0) used.add('shareable');
  if (Object.keys(entities).length > 0) used.add('key');
  const link: DefinitionNode = {
    kind: Kind.SCHEMA_EXTENSION,
    directives: [
      directive('link', { url: FEDERATION_SPEC, import: [...used].sort().map((d) => `@${d}`) }),
      directive('link', { url: PLAN_SPEC, import: ['@plan'] }),
      directive('composeDirective', { name: '@plan' }),
    ],
  };
  const definitions = parse(printGatewaySchema(base)).definitions.flatMap((node): DefinitionNode[] => {
    // Root types keep their default names, so the schema definition says nothing a router needs.
    if (node.kind === Kind.SCHEMA_DEFINITION) return [];
    if (node.kind === Kind.DIRECTIVE_DEFINITION && LINKED_DIRECTIVES.includes(node.name.value)) return [];
    if (node.kind !== Kind.OBJECT_TYPE_DEFINITION) return [node];
    const name = node.name.value;
    const added = [
      ...(entities[name] ? [directive('key', { fields: entities[name].key })] : []),
      ...(shareable.has(name) ? [directive('shareable')] : []),
    ];
    return [added.length ? { ...node, directives: [...added, ...(node.directives ?? [])] } : node];
  });
  return print({ kind: Kind.DOCUMENT, definitions: [link, ...definitions] }) + '\n';
}

/** `_Any`: a representation, as the router sends it (an object with `__typename` and the key). */
const AnyScalar = new GraphQLScalarType({
  name: '_Any',
  serialize: (value) => value,
  parseValue: (value) => value,
  parseLiteral: (ast) => valueFromASTUntyped(ast),
});

const ServiceType = new GraphQLObjectType({
  name: '_Service',
  fields: { sdl: { type: new GraphQLNonNull(GraphQLString) } },
});

function withFederationFields(
  base: GraphQLSchema,
  entities: Record<string, SubgraphEntity>,
  sdl: string,
): GraphQLSchema {
  const config = base.toConfig();
  const query = base.getQueryType();
  if (!query) throw new Error('subgraph: the schema has no Query type');
  const fields: Record<string, GraphQLFieldConfig<unknown, GatewayContext>> = {
    ...query.toConfig().fields,
    _service: { type: new GraphQLNonNull(ServiceType), resolve: () => ({ sdl }) },
  };
  const added: Array<GraphQLObjectType | GraphQLUnionType | GraphQLScalarType> = [ServiceType];
  const entityTypes = Object.keys(entities).map((name) => base.getType(name) as GraphQLObjectType);
  if (entityTypes.length > 0) {
    // Which entity each resolved value is: the representation said, the value need not.
    const typenames = new WeakMap<object, string>();
    const EntityUnion = new GraphQLUnionType({
      name: '_Entity',
      types: entityTypes,
      resolveType: (value: object) => typenames.get(value),
    });
    added.push(EntityUnion, AnyScalar);
    fields._entities = {
      type: new GraphQLNonNull(new GraphQLList(EntityUnion)),
      args: {
        representations: { type: new GraphQLNonNull(new GraphQLList(new GraphQLNonNull(AnyScalar))) },
      },
      resolve: (_root, args, ctx) =>
        (args.representations as Array<Record<string, unknown>>).map(async (representation) => {
          const typename = representation.__typename;
          const entity = typeof typename === 'string' ? entities[typename] : undefined;
          if (!entity) {
            throw new AppError(
              'BAD_USER_INPUT',
              `_entities: ${String(typename)} is not an entity of this subgraph`,
            );
          }
          const value = await entity.resolveReference(representation, ctx);
          if (typeof value !== 'object' || value === null) return null;
          typenames.set(value, typename as string);
          return value;
        }),
    };
  }
  const federatedQuery = new GraphQLObjectType({ ...query.toConfig(), fields });
  return new GraphQLSchema({
    ...config,
    query: federatedQuery,
    types: [...config.types.map((type) => (type === query ? federatedQuery : type)), ...added],
  });
}
