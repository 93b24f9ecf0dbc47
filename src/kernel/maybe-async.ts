/**
 * A value that is usually at hand (a cache hit, an in-process counter) and only sometimes needs
 * I/O. Hot paths return the value itself when they can: under the async hooks the ORM enables,
 * every promise and await costs about a microsecond, and a request makes many of them.
 */
export type MaybePromise<T> = T | Promise<T>;

export function isPromise<T>(value: MaybePromise<T>): value is Promise<T> {
  return typeof (value as Promise<T> | null)?.then === 'function';
}

/**
 * Applies `next` now when the value is at hand, after it settles otherwise. (Not named `then`: a
 * module exporting `then` is itself thenable, and `await import()` of it would call it.)
 */
export function andThen<T, U>(value: MaybePromise<T>, next: (value: T) => MaybePromise<U>): MaybePromise<U> {
  return isPromise(value) ? value.then(next) : next(value);
}
