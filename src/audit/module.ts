import type { DomainModule } from '../gateway/schema/module.js';
import { AuditResolver } from './resolvers.js';

export const auditModule: DomainModule = {
  name: 'audit',
  resolvers: [AuditResolver],
};
