/*
 * The contracts of domain events, shared by every layer: the gateway listens (graphql-ws ends a
 * subscription whose credential is revoked), domains stage and publish, the events layer carries
 * them (src/events/: the bus, the outbox, webhooks). Implementations live in src/events/.
 */

export interface DomainEvent<T = unknown> {
  /** Stable id: the same event always carries the same id, through every retry. */
  id: string;
  type: string;
  occurredAt: Date;
  /** Tenant the event belongs to; null for market-wide events. */
  accountId: string | null;
  payload: T;
}

export interface EventPublisher {
  /**
   * True when `publish` reaches a live bus: events staged for this publisher are published by it
   * after commit. Events staged for a publisher that is not live (the CLI's) are marked for relay,
   * and a server's outbox worker publishes them instead.
   */
  readonly live: boolean;
  /** Publishes events that are already committed. */
  publish(events: DomainEvent[]): Promise<void>;
}

/** For processes without a live bus (the CLI, scripts): staged events are relayed by a server. */
export const noLiveEvents: EventPublisher = { live: false, publish: async () => {} };

export type EventListener = (event: DomainEvent) => void;

/**
 * The one event bus. `publish` takes events that are already committed and hands them to every
 * listener of every gateway process; listeners run synchronously and must not throw.
 */
export interface EventBus extends EventPublisher {
  /** Returns the function that removes the listener. */
  subscribe(listener: EventListener): () => void;
  /** Hands events to this process's listeners only (facts every process finds out for itself). */
  deliverLocally(events: DomainEvent[]): void;
  /** Listeners in this process: every live subscription is one (tests and the bench wait on it). */
  readonly listenerCount: number;
  close(): Promise<void>;
}

/** Announced when an API key or access token stops working, so live subscriptions opened with it end. */
export const CREDENTIAL_REVOKED = 'credential.revoked';

/**
 * Announced when what an account's credentials grant changes (its plan): every process forgets the
 * account's cached credentials and re-checks the live connections opened with them.
 */
export const ACCOUNT_CHANGED = 'account.changed';
