import { eventBusOf } from '../events/bus.js';
import type { DomainModule } from '../gateway/module.js';
import { exportOpenApi, registerExport } from './export.js';
import { LiquidityReadModel, readModelOf, releaseReadModel, setReadModel } from './read-model.js';
import { LiquidityResolver } from './resolvers.js';
import { liquidityRestRoutes } from './rest.js';
import { seedLiquidityDemo } from './seed.js';

export const liquidityModule: DomainModule = {
  name: 'liquidity',
  resolvers: [LiquidityResolver],
  restRoutes: liquidityRestRoutes,
  openApi: exportOpenApi,
  start(services) {
    setReadModel(
      services,
      new LiquidityReadModel(services.db, services.logger, services.config.readModelPollMs),
    );
  },
  http(app, services, operations) {
    // The event bus is installed by the events module, which starts after this one.
    const model = readModelOf(services);
    model.start(eventBusOf(services));
    services.metrics.observeReadModelVersion(() => model.servedVersion);
    registerExport(app, services, operations);
  },
  stop(services) {
    releaseReadModel(services);
  },
  seedDemo: seedLiquidityDemo,
};
