import { accountsModule } from './accounts/module.js';
import { auditModule } from './audit/module.js';
import { eventsModule } from './events/module.js';
import { authModule } from './auth/module.js';
import type { GraphQLSchema } from 'graphql';
import type { DomainModule } from './gateway/schema/module.js';
import { buildGatewaySchema } from './gateway/schema/build.js';
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
