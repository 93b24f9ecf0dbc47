import { PortOpsLiveResolver } from './subscriptions.js';
import { portOpsAnswers } from './answers.js';
import type { DomainModule } from '../gateway/schema/module.js';
import { documentsOpenApi, registerDocumentRoutes } from './http.js';
import { InsightsResolver } from './insights-resolvers.js';
import { seedPortOpsDemo } from './seed.js';
import { portOpsResolvers } from './resolvers.js';
import { portOpsRestRoutes } from './rest.js';

export const portOpsModule: DomainModule = {
  name: 'port-ops',
  summary: 'Port operations: port calls, service orders, vendors, vessels, documents, invoices and analytics',
  resolvers: [...portOpsResolvers, InsightsResolver, PortOpsLiveResolver],
  restRoutes: portOpsRestRoutes,
  answers: portOpsAnswers,
  http: registerDocumentRoutes,
  openApi: documentsOpenApi,
  seedDemo: seedPortOpsDemo,
};
