import { accountsModule } from './accounts/module.js';
import { auditModule } from './audit/module.js';
import { eventsModule } from './events/module.js';
import { authModule } from './auth/module.js';
import type { DomainModule } from './gateway/module.js';
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
