// This module is browser compatible.

/**
 * `Promise.withResolvers()` for the runtimes the loader supports that lack
 * it (Node 20, Safari before 17.4).
 *
 * @module
 */

/** A promise with its resolve and reject functions. */
export interface Deferred<T> {
  promise: Promise<T>;
  resolve(value: T): void;
  reject(reason: unknown): void;
}

/** A new pending promise and the functions that settle it. */
export function deferred<T>(): Deferred<T> {
  let resolve!: (value: T) => void;
  let reject!: (reason: unknown) => void;
  const promise = new Promise<T>((onResolve, onReject) => {
    resolve = onResolve;
    reject = onReject;
  });
  return { promise, resolve, reject };
}
