import type { FastifyInstance } from 'fastify';
import type { EntityManager } from '@mikro-orm/knex';
import type { AnswerSource } from '../pipeline/answers.js';
import type { AppServices } from './context.js';
import type { Operations } from '../pipeline/operation.js';
import type { DescribedRoute } from '../doors/openapi.js';
import type { RestRoute } from '../doors/rest-routes.js';

/**
 * A domain's contribution to the one gateway: its resolvers (into the one schema), its REST
 * shim routes (data), any hand-written streaming routes, and its demo data.
 */
export interface DomainModule {
  name: string;
  /** One line on what the domain serves (its OpenAPI tag's description). */
  summary?: string;
  // type-graphql takes resolver classes; their shapes have nothing in common.
  // eslint-disable-next-line @typescript-eslint/no-unsafe-function-type
  resolvers: Function[];
  restRoutes?: RestRoute[];
  /** The data whose query results may be kept between requests, and the fields that read only it. */
  answers?: AnswerSource;
  /** The OpenAPI operations of routes the shim table cannot describe (hand-written, OAuth). */
  openApi?: DescribedRoute[];
  /** Hand-written routes that need no running state (streaming: export, document upload/download). */
  http?: (app: FastifyInstance, services: AppServices, operations: Operations) => void | Promise<void>;
  /**
   * Starts what the domain runs (background workers, listeners, its own routes that need that
   * state), before listening. The composition root keeps what it returns and stops it on shutdown;
   * modules keep no state of their own between start and stop.
   */
  start?: (services: AppServices) => RunningModule | Promise<RunningModule>;
  /** Adds this domain's demo data to an empty database. Returns lines to print (never secrets twice). */
  seedDemo?: (em: EntityManager, services: Pick<AppServices, 'clock' | 'config'>) => Promise<void>;
}

/** What a started module runs: its stateful routes and how to stop it. */
export interface RunningModule {
  /** Routes served by what start() made (e.g. the OAuth endpoints over the auth runtime). */
  http?: (app: FastifyInstance, operations: Operations) => void | Promise<void>;
  /** Called on graceful shutdown after HTTP has stopped, before the database closes. */
  stop?: () => void | Promise<void>;
}
