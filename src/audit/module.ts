import type { DomainModule } from '../gateway/schema/module.js';
import { AuditResolver, RequestLogResolver } from './resolvers.js';

export const auditModule: DomainModule = {
  name: 'audit',
  resolvers: [AuditResolver, RequestLogResolver],
};
