import { resolve } from 'node:path';
import { accountsModule } from './accounts/module.js';
import { viewerByReference } from './accounts/resolvers.js';
import { auditModule } from './audit/module.js';
import { eventsModule, webhookResolvers } from './events/module.js';
import { LiveEventsResolver, liquidityFeedResolvers } from './events/subscriptions.js';
import { authModule } from './auth/module.js';
import type { GraphQLSchema } from 'graphql';
import type { SubgraphName } from './config.js';
import type { DomainModule } from './gateway/schema/module.js';
import { buildGatewaySchema } from './gateway/schema/build.js';
import { federate, type Subgraph, type SubgraphDefinition } from './gateway/schema/federation.js';
import { liquidityModule } from './liquidity/module.js';
import { portOpsModule } from './port-ops/module.js';

/** Every domain plugged into the gateway, in demo-seed order. */
export const MODULES: DomainModule[] = [
  accountsModule,
  auditModule,
  authModule,
  portOpsModule,
  liquidityModule,
  eventsModule,
];

/** The one executable schema of every domain. */
export function gatewaySchema(): GraphQLSchema {
  return buildGatewaySchema(MODULES);
}

/**
 * The same resolvers split into Apollo Federation 2 subgraphs (SUBGRAPH=<name>): the two domains,
 * and `accounts` for what belongs to an account whichever domain it uses (the viewer, its plan,
 * the audit log, webhook endpoints). Together they cover every field of the gateway schema.
 */
export const SUBGRAPHS: Record<SubgraphName, SubgraphDefinition> = {
  accounts: {
    resolvers: [
      ...accountsModule.resolvers,
      ...auditModule.resolvers,
      ...authModule.resolvers,
      ...webhookResolvers,
    ],
    shareable: ['PageInfo'],
    entities: { Viewer: { key: 'accountId', resolveReference: viewerByReference } },
  },
  'port-ops': { resolvers: portOpsModule.resolvers, shareable: ['PageInfo'] },
  liquidity: {
    resolvers: [...liquidityModule.resolvers, LiveEventsResolver, ...liquidityFeedResolvers],
    shareable: ['PageInfo'],
  },
};

/** Where `npm run schema` writes a subgraph's SDL (checked in, like schema/schema.graphql). */
export function subgraphSdlFile(name: SubgraphName): string {
  return resolve('schema', 'subgraphs', `${name}.graphql`);
}

const subgraphs = new Map<SubgraphName, Subgraph>();

/** One subgraph's schema and SDL, built once per process. */
export function subgraph(name: SubgraphName): Subgraph {
  let built = subgraphs.get(name);
  if (!built) {
    const definition = SUBGRAPHS[name];
    built = federate(buildGatewaySchema([{ name, resolvers: definition.resolvers }]), definition);
    subgraphs.set(name, built);
  }
  return built;
}
