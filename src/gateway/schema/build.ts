import 'reflect-metadata';
import { printSchemaWithDirectives } from '@graphql-tools/utils';
import { specifiedDirectives, type GraphQLSchema } from 'graphql';
import { JSONObjectResolver } from 'graphql-scalars';
import { buildSchemaSync, type NonEmptyArray } from 'type-graphql';
import type { DomainModule } from './module.js';
import { DateTimeISO } from './date-time.js';
import { accessDirectives } from './directives.js';
import {
  assertRebinding,
  bindFieldResolversSynchronously,
  bindRootResolversSynchronously,
  readGettersDirectly,
  resolverContainer,
} from '../pipeline/sync-resolvers.js';

export const JSONObject = JSONObjectResolver;

const built = new WeakMap<readonly DomainModule[], GraphQLSchema>();

/**
 * The one executable schema of these domain modules (the composition root's list, src/modules.ts).
 * Built once per process and list: type-graphql's metadata is global.
 */
export function buildGatewaySchema(modules: readonly DomainModule[]): GraphQLSchema {
  let schema = built.get(modules);
  if (!schema) {
    // eslint-disable-next-line @typescript-eslint/no-unsafe-function-type
    const resolvers = modules.flatMap((m) => m.resolvers) as NonEmptyArray<Function>;
    schema = buildSchemaSync({
      resolvers,
      // type-graphql replaces the schema's directives with the list given: keep GraphQL's own
      // (@include, @skip, @deprecated, @specifiedBy), which every client framework uses.
      directives: [...specifiedDirectives, ...accessDirectives],
      scalarsMap: [{ type: Date, scalar: DateTimeISO }],
      // Input validation lives in the domain services, where every door shares it.
      validate: false,
      // Every @Subscription brings its own `subscribe` (src/events/subscriptions.ts, fed by the event
      // bus); type-graphql still insists on a pubSub, which must never be used.
      pubSub: {
        publish: () => {
          throw new Error('publish domain events through services.events');
        },
        subscribe: () => {
          throw new Error('every @Subscription must declare its own subscribe function');
        },
      },
      emitSchemaFile: false,
      container: resolverContainer,
    });
    const rebinding = {
      root: bindRootResolversSynchronously(schema, resolvers),
      field: bindFieldResolversSynchronously(schema, resolvers),
    };
    readGettersDirectly(schema);
    assertRebinding(schema, resolvers, rebinding);
    built.set(modules, schema);
  }
  return schema;
}

/** The SDL as checked in at schema/schema.graphql: with directive usages printed. */
export function printGatewaySchema(schema: GraphQLSchema): string {
  return printSchemaWithDirectives(schema) + '\n';
}
