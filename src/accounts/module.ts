import type { DomainModule } from '../gateway/schema/module.js';
import { ViewerResolver } from './resolvers.js';

export const accountsModule: DomainModule = {
  name: 'accounts',
  resolvers: [ViewerResolver],
};
