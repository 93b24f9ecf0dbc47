import type { DomainModule } from '../gateway/schema/module.js';
import { liquidityAnswers } from './answers.js';
import { exportOpenApi, registerExport } from './export.js';
import { LiquidityResolver } from './resolvers.js';
import { liquidityRestRoutes } from './rest.js';
import { seedLiquidityDemo } from './seed.js';

export const liquidityModule: DomainModule = {
  name: 'liquidity',
  summary:
    'Liquidity scoring of tokenized real-world-asset protocols: profiles, scores, history, backtests, watchlists and bulk export',
  resolvers: [LiquidityResolver],
  restRoutes: liquidityRestRoutes,
  answers: liquidityAnswers,
  openApi: exportOpenApi,
  start(services) {
    const model = services.readModel;
    model.start(services.bus);
    services.metrics.observeReadModelVersion(() => model.servedVersion);
    return { stop: () => model.stop() };
  },
  http: registerExport,
  seedDemo: seedLiquidityDemo,
};
