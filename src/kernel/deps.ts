import type { EntityManager } from '@mikro-orm/knex';
import type { Clock } from './clock.js';
import type { EventPublisher } from './events.js';

/**
 * What a domain service that changes data gets from the outside world, whoever calls it (a
 * resolver, a REST shim, the console, the CLI): the unit of work, time, and where committed
 * events go. The server passes its live publisher; the CLI passes `noLiveEvents` (its events
 * are relayed by a server's outbox worker).
 */
export interface ServiceDeps {
  em: EntityManager;
  clock: Clock;
  events: EventPublisher;
}
