import type { FastifyRequest } from 'fastify';
import type { Principal } from '../../kernel/principal.js';
import type { OperationMeta } from '../schema/context.js';
import type { Presentation } from './credentials.js';

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal | null;
    presentation: Presentation | null;
    gatewayMeta: OperationMeta | null;
    /** The route options, once read (see routeOf). */
    gatewayRoute: FastifyRequest['routeOptions'] | null;
  }
  interface FastifyContextConfig {
    /** Name recorded in the audit log; routes without it are not API calls and are not audited. */
    audit?: string;
    /** Errors on this route use the GraphQL error shape. */
    graphql?: boolean;
  }
}

/**
 * The request's route options (config, url), read once per request: Fastify's `routeOptions`
 * getter builds a new object on every read, and the edge, the metrics and the playground read it
 * several times for each request.
 */
export function routeOf(request: FastifyRequest): FastifyRequest['routeOptions'] {
  return (request.gatewayRoute ??= request.routeOptions);
}
