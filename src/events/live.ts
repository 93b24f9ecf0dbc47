import type { DomainEvent } from '../gateway/context.js';
import type { EventBus } from './bus.js';

/** Events a slow subscriber may fall behind by before its subscription is ended. */
const MAX_BUFFERED = 1000;

/**
 * One subscription's stream: the bus listener runs `accept` synchronously and queues matching
 * events; graphql-ws pulls them. Returning (client `complete`, socket close) removes the listener.
 */
export function liveEvents(
  bus: EventBus,
  accept: (event: DomainEvent) => boolean,
): AsyncIterableIterator<DomainEvent> {
  const queue: DomainEvent[] = [];
  let waiting: ((result: IteratorResult<DomainEvent>) => void) | undefined;
  let failed: ((error: Error) => void) | undefined;
  let done = false;
  let overflow: Error | undefined;

  const finish = () => {
    done = true;
    unsubscribe();
    queue.length = 0;
  };
  const unsubscribe = bus.subscribe((event) => {
    if (done || !accept(event)) return;
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

  const iterator: AsyncIterableIterator<DomainEvent> = {
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
