import type { DomainEvent } from '../gateway/context.js';
import type { EventBus } from './bus.js';

/**
 * A subscription's stream of matching events. It is an async iterable because that is what a
 * GraphQL subscribe resolver returns, but it is consumed by push: the gateway wires it to its
 * socket with `pushTo` (src/gateway/graphql-ws.ts) and never pulls.
 */
export interface LiveEvents extends AsyncIterableIterator<DomainEvent> {
  /**
   * From now on each matching event goes straight to `deliver`, synchronously inside the bus
   * listener — no queue, no promise per event (fan-out to thousands of sockets). Events that
   * arrived before are handed over first.
   */
  pushTo(deliver: (event: DomainEvent) => void): void;
}

export function isLiveEvents(value: unknown): value is LiveEvents {
  return typeof (value as Partial<LiveEvents> | null)?.pushTo === 'function';
}

/**
 * One subscription's stream: the bus listener runs `accept` synchronously and hands matching
 * events to the sink, or holds them until there is one. Returning (client `complete`, socket
 * close) removes the listener.
 */
export function liveEvents(bus: EventBus, accept: (event: DomainEvent) => boolean): LiveEvents {
  const early: DomainEvent[] = [];
  let done = false;
  let sink: ((event: DomainEvent) => void) | undefined;

  const finish = () => {
    done = true;
    unsubscribe();
    early.length = 0;
  };
  // `early` holds what arrives between the subscribe resolver and `pushTo`, a few microtasks of the
  // same subscribe call: bounded by what the process publishes meanwhile, so it needs no cap.
  const unsubscribe = bus.subscribe((event) => {
    if (done || !accept(event)) return;
    if (sink) sink(event);
    else early.push(event);
  });

  const iterator: LiveEvents = {
    pushTo(deliver) {
      sink = deliver;
      for (const event of early.splice(0)) deliver(event);
    },
    next() {
      return Promise.reject(new Error('live event streams are pushed to their socket (pushTo), not pulled'));
    },
    return() {
      finish();
      return Promise.resolve({ value: undefined, done: true });
    },
    throw(error?: unknown) {
      finish();
      return Promise.reject(error);
    },
    [Symbol.asyncIterator]() {
      return iterator;
    },
  };
  return iterator;
}
