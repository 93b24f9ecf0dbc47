import { performance } from 'node:perf_hooks';
import { AppError } from './errors.js';

/**
 * A per-operation time budget that long computations check between steps. It runs on the
 * monotonic clock, not the injected business clock: tests freeze business time, and the budget
 * measures the work actually done.
 *
 * `checkpoint()` also yields to the event loop (one `setImmediate`), so a computation made of
 * several steps lets other requests — /healthz, small reads — be answered between them instead of
 * after the whole computation.
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

export function yieldToEventLoop(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
