import type { DomainModule } from '../gateway/module.js';
import { exportOpenApi, registerExport } from './export.js';
import { LiquidityResolver } from './resolvers.js';
import { liquidityRestRoutes } from './rest.js';
import { seedLiquidityDemo } from './seed.js';

export const liquidityModule: DomainModule = {
  name: 'liquidity',
  resolvers: [LiquidityResolver],
  restRoutes: liquidityRestRoutes,
  http: registerExport,
  openApi: exportOpenApi,
  seedDemo: seedLiquidityDemo,
};
