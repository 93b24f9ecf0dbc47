import type { DomainEvent } from '../kernel/events.js';
import { AppError } from '../kernel/errors.js';
import type { EventBus } from './bus.js';

/** The refusal a subscriber gets when it reads slower than events arrive, past its backlog. */
export const FELL_BEHIND = 'Subscriber fell too far behind; subscription ended';

/**
 * One subscription's stream of matching events: the bus listener runs `accept` synchronously and
 * queues what matches; the transport (graphql-ws) pulls at the pace its socket accepts writes.
 * A subscriber more than `maxBacklog` events behind is ended: its next read rejects with
 * SERVICE_UNAVAILABLE instead of the process buffering without bound. Returning (client
 * `complete`, socket close) removes the listener at once.
 */
export function liveEvents(
  bus: EventBus,
  accept: (event: DomainEvent) => boolean,
  maxBacklog: number,
): AsyncIterableIterator<DomainEvent> {
  const queue: DomainEvent[] = [];
  let waiting: ((result: IteratorResult<DomainEvent>) => void) | undefined;
  let failWaiting: ((error: unknown) => void) | undefined;
  let done = false;
  let overflowed = false;

  const finish = () => {
    done = true;
    unsubscribe();
    queue.length = 0;
  };
  const unsubscribe = bus.subscribe((event) => {
    if (done || overflowed || !accept(event)) return;
    if (waiting) {
      const resolve = waiting;
      waiting = failWaiting = undefined;
      resolve({ value: event, done: false });
      return;
    }
    if (queue.length >= maxBacklog) {
      overflowed = true;
      unsubscribe();
      queue.length = 0;
      return;
    }
    queue.push(event);
  });

  const iterator: AsyncIterableIterator<DomainEvent> = {
    next() {
      const event = queue.shift();
      if (event) return Promise.resolve({ value: event, done: false });
      if (overflowed && !done) {
        finish();
        return Promise.reject(new AppError('SERVICE_UNAVAILABLE', FELL_BEHIND));
      }
      if (done) return Promise.resolve({ value: undefined, done: true });
      return new Promise((resolve, reject) => {
        waiting = resolve;
        failWaiting = reject;
      });
    },
    return() {
      finish();
      const resolve = waiting;
      waiting = failWaiting = undefined;
      resolve?.({ value: undefined, done: true });
      return Promise.resolve({ value: undefined, done: true });
    },
    throw(error?: unknown) {
      finish();
      const reject = failWaiting;
      waiting = failWaiting = undefined;
      reject?.(error);
      return Promise.reject(error);
    },
    [Symbol.asyncIterator]() {
      return iterator;
    },
  };
  return iterator;
}
