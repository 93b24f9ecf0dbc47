import type { DomainEvent } from '../gateway/context.js';
import type { EventBus } from './bus.js';

/** Events a slow subscriber may fall behind by before its subscription is ended. */
const MAX_BUFFERED = 1000;

/** A subscription's stream of matching events: pulled as an async iterator, or pushed. */
export interface LiveEvents extends AsyncIterableIterator<DomainEvent> {
  /**
   * Switches to push: from now on each matching event goes straight to `deliver`, synchronously
   * inside the bus listener — no queue, no promise per event (fan-out to thousands of sockets).
   * Events queued so far are handed over first. Returning still removes the listener.
   */
  pushTo(deliver: (event: DomainEvent) => void): void;
}

export function isLiveEvents(value: unknown): value is LiveEvents {
  return typeof (value as Partial<LiveEvents> | null)?.pushTo === 'function';
}

/**
 * One subscription's stream: the bus listener runs `accept` synchronously and queues matching
 * events for graphql-ws to pull, or pushes them (pushTo). Returning (client `complete`, socket
 * close) removes the listener.
 */
export function liveEvents(bus: EventBus, accept: (event: DomainEvent) => boolean): LiveEvents {
  const queue: DomainEvent[] = [];
  let waiting: ((result: IteratorResult<DomainEvent>) => void) | undefined;
  let failed: ((error: Error) => void) | undefined;
  let done = false;
  let overflow: Error | undefined;
  let sink: ((event: DomainEvent) => void) | undefined;

  const finish = () => {
    done = true;
    unsubscribe();
    queue.length = 0;
  };
  const unsubscribe = bus.subscribe((event) => {
    if (done || !accept(event)) return;
    if (sink) {
      sink(event);
      return;
    }
    if (waiting) {
      const resolve = waiting;
      waiting = failed = undefined;
      resolve({ value: event, done: false });
      return;
    }
    if (queue.length >= MAX_BUFFERED) {
      overflow = new Error(`Subscriber fell more than ${MAX_BUFFERED} events behind; subscription ended`);
      finish();
      return;
    }
    queue.push(event);
  });

  const iterator: LiveEvents = {
    pushTo(deliver) {
      sink = deliver;
      for (const event of queue.splice(0)) deliver(event);
    },
    next() {
      if (overflow) return Promise.reject(overflow);
      const event = queue.shift();
      if (event) return Promise.resolve({ value: event, done: false });
      if (done) return Promise.resolve({ value: undefined, done: true });
      return new Promise((resolve, reject) => {
        waiting = resolve;
        failed = reject;
      });
    },
    return() {
      finish();
      waiting?.({ value: undefined, done: true });
      waiting = failed = undefined;
      return Promise.resolve({ value: undefined, done: true });
    },
    throw(error?: unknown) {
      finish();
      failed?.(error instanceof Error ? error : new Error(String(error)));
      waiting = failed = undefined;
      return Promise.reject(error);
    },
    [Symbol.asyncIterator]() {
      return iterator;
    },
  };
  return iterator;
}
