import { performance } from 'node:perf_hooks';
import { AppError } from './errors.js';

/**
 * A per-operation time budget that long computations check between steps. It runs on the
 * monotonic clock, not the injected business clock: tests freeze business time, and the budget
 * measures the work actually done.
 *
 * `checkpoint()` also waits for its turn on the event loop (see `yieldToEventLoop`), so a
 * computation made of several steps lets other requests — /healthz, small reads — be answered
 * between them instead of after the whole computation.
 */
export class Deadline {
  private readonly endsAt: number;

  constructor(readonly budgetMs: number) {
    this.endsAt = performance.now() + budgetMs;
  }

  get expired(): boolean {
    return performance.now() >= this.endsAt;
  }

  /** Throws DEADLINE_EXCEEDED once the budget is spent; `what` names the step that found out. */
  check(what: string): void {
    if (this.expired) {
      throw new AppError(
        'DEADLINE_EXCEEDED',
        `The operation ran out of its ${this.budgetMs} ms budget while computing ${what}; ask for less at once`,
        { budgetMs: this.budgetMs, step: what },
      );
    }
  }

  /** Lets waiting I/O run, then checks the budget. */
  async checkpoint(what: string): Promise<void> {
    await yieldToEventLoop();
    this.check(what);
  }
}

/** For work outside an operation (CLI, jobs): never expires, still yields at checkpoints. */
export const NO_DEADLINE = new Deadline(Number.POSITIVE_INFINITY);

/*
 * Turns are handed out one per event-loop iteration, first come first served. A plain
 * `setImmediate` would not do: the steps of every computation that yielded in the same iteration
 * would all run back to back in the next one (an operation of five predictions, five steps), and
 * waiting I/O would wait for all of them. Chained, each iteration runs at most one step of the
 * heavy work and then serves I/O. The chain is module state on purpose: the event loop it shares
 * out is one per process.
 */
let lastTurn: Promise<void> = Promise.resolve();

/** Resolves in a later event-loop iteration than any earlier caller's turn, after I/O has been served. */
export function yieldToEventLoop(): Promise<void> {
  const turn = lastTurn.then(() => new Promise<void>((resolve) => setImmediate(resolve)));
  lastTurn = turn;
  return turn;
}
