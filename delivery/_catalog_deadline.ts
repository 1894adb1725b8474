/**
 * The bound on how long one delivery request waits for its catalog (its
 * `authorizeDelivery`, the entitlement policy behind it) and its requester
 * hook. Each wait of the request races one timer and the request's own
 * signal, both set up at its first wait: a request answered from memory
 * sets up neither. The request disposes of the deadline when it is
 * answered, so no timer or listener outlives it.
 *
 * @module
 */

import { whenAborted } from "../protocol/deadline.ts";

/**
 * The default of `catalogTimeoutMs`, in milliseconds: 10 s. A catalog over
 * a database answers in milliseconds, and in a few seconds when its pool
 * of connections is busy; a wait longer than this is one the client is
 * better told to retry. It stays under the connection guard's idle
 * timeout (30 s) and the usual reverse proxy's read timeout (60 s), so the
 * client gets a `503` with `Retry-After` and not a closed connection.
 */
export const DEFAULT_CATALOG_TIMEOUT_MS = 10_000;

/** One request's bound on its waits for the catalog and the hook. */
export class CatalogDeadline implements Disposable {
  readonly #passed: Promise<never>;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #stopListening: () => void = () => {};

  /**
   * Starts the bound.
   *
   * @param timeoutMs How long the request's waits may take, in all.
   * @param signal The request's signal, which aborts when its client goes.
   */
  constructor(timeoutMs: number, signal: AbortSignal) {
    this.#passed = new Promise<never>((_, reject) => {
      if (signal.aborted) return reject(signal.reason);
      this.#timer = setTimeout(() => {
        reject(
          new DOMException(
            `The catalog did not answer within ${timeoutMs} ms`,
            "TimeoutError",
          ),
        );
      }, timeoutMs);
      this.#stopListening = whenAborted(signal, () => reject(signal.reason));
    });
    // A bound may pass after every wait raced on it has settled.
    this.#passed.catch(() => {});
  }

  /**
   * Waits for `work` within the bound.
   *
   * @param work The catalog's or the hook's answer.
   * @returns What `work` settles with.
   * @throws What `work` rejects with, a `TimeoutError` once the bound
   * passes, or the signal's reason once it aborts.
   */
  within<T>(work: PromiseLike<T>): Promise<T> {
    return Promise.race([work, this.#passed]);
  }

  /** Clears the timer and the listener; the work itself goes on. */
  [Symbol.dispose](): void {
    clearTimeout(this.#timer);
    this.#stopListening();
  }
}
