import type { Principal } from '../kernel/principal.js';
import type { OperationMeta } from './context.js';
import type { Presentation } from './credentials.js';

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal | null;
    presentation: Presentation | null;
    gatewayMeta: OperationMeta | null;
  }
  interface FastifyContextConfig {
    /** Name recorded in the audit log; routes without it are not API calls and are not audited. */
    audit?: string;
    /** Errors on this route use the GraphQL error shape. */
    graphql?: boolean;
  }
}

export {};
