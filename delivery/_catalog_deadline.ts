/**
 * The bound on how long one delivery request waits for its catalog (its
 * `authorizeDelivery`, the entitlement policy behind it) and its requester
 * hook. Each wait of the request races one timer and the request's own
 * signal, both set up at its first wait: a request answered from memory
 * sets up neither. The request disposes of the deadline when it is
 * answered, so no timer or listener outlives it.
 *
 * A catalog asked through its public `authorizeDelivery` gets the bound's
 * signal, which aborts when the bound passes, so it can stop the work
 * nobody waits for any more, and so does the disk catalog's entitlement
 * policy when it reads the signal it is given. The signal is created when
 * first asked for: a wait for the requester hook, or for a catalog that
 * answers from memory, creates none, unless its policy reads the signal
 * (the bound is then set up, and disposed of with the request).
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

/**
 * Why the signal of a request's bound aborts once the request is answered.
 *
 * @returns A new `AbortError` saying so.
 */
export function answeredReason(): DOMException {
  return new DOMException("The request was answered", "AbortError");
}

/** Why a bound passed, once it has. */
type Passed = { reason: unknown } | undefined;

/** One request's bound on its waits for the catalog and the hook. */
export class CatalogDeadline implements Disposable {
  readonly #passed: Promise<never>;
  #why: Passed;
  #controller: AbortController | undefined;
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
      const pass = (reason: unknown) => {
        this.#why ??= { reason };
        this.#controller?.abort(reason);
        reject(reason);
      };
      if (signal.aborted) return pass(signal.reason);
      this.#timer = setTimeout(() => {
        pass(
          new DOMException(
            `The catalog did not answer within catalogTimeoutMs (${timeoutMs} ms)`,
            "TimeoutError",
          ),
        );
      }, timeoutMs);
      this.#stopListening = whenAborted(signal, () => pass(signal.reason));
    });
    // A bound may pass after every wait raced on it has settled.
    this.#passed.catch(() => {});
  }

  /**
   * The signal that aborts when the bound passes, with a `TimeoutError`
   * that names `catalogTimeoutMs` or the request's own abort reason.
   */
  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      this.#controller = new AbortController();
      if (this.#why !== undefined) this.#controller.abort(this.#why.reason);
    }
    return this.#controller.signal;
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

  /**
   * Clears the timer and the listener. A request is answered only once
   * each of its waits has settled or the bound has passed, so no work of
   * it is left that the signal should stop: a signal already given out is
   * left as it is (aborting it would run a policy's abort listeners, which
   * may throw, on every answer), and one first asked for later is made
   * aborted with {@linkcode answeredReason}, with no timer behind it.
   */
  [Symbol.dispose](): void {
    clearTimeout(this.#timer);
    this.#stopListening();
    this.#why ??= { reason: answeredReason() };
  }
}
