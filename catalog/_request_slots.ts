// This module is browser compatible.

/**
 * How many requests one catalog has in flight at once. A listing may name
 * thousands of modules (an honest pack of 3,000, or a hostile listing of
 * tens of thousands under its byte cap): fetched all at once, they opened
 * as many connections, so that under the common limit of 1,024 open files
 * Node's fetch failed with EMFILE and Deno 2.9.6 panicked, ending the
 * process. A request waits for a slot before its deadline starts.
 *
 * @module
 */

import { whenAborted } from "../protocol/deadline.ts";

/** The most requests of one catalog in flight at once. */
export const MAX_REQUESTS_IN_FLIGHT = 32;

/** Gives a freed slot to the request that waited longest. */
export class RequestSlots {
  #free: number;
  #waiting = new Set<() => void>();

  /** @param size How many requests may be in flight at once. */
  constructor(size: number) {
    this.#free = size;
  }

  /**
   * Waits for a slot.
   *
   * @param signal Ends the wait: the slot is then not taken.
   * @returns Gives the slot back; calling it again does nothing.
   * @throws What `signal` aborted with, when it aborts first.
   */
  async take(signal: AbortSignal | undefined): Promise<() => void> {
    signal?.throwIfAborted();
    if (this.#free > 0) {
      this.#free--;
    } else {
      await this.#wait(signal);
    }
    let given = false;
    return () => {
      if (given) return;
      given = true;
      this.#give();
    };
  }

  #wait(signal: AbortSignal | undefined): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      let stopWaiting = (): void => {};
      const granted = () => {
        stopWaiting();
        resolve();
      };
      const aborted = () => {
        this.#waiting.delete(granted);
        reject(signal!.reason);
      };
      this.#waiting.add(granted);
      if (signal !== undefined) stopWaiting = whenAborted(signal, aborted);
    });
  }

  #give(): void {
    const next = this.#waiting.values().next();
    if (next.done) {
      this.#free++;
      return;
    }
    this.#waiting.delete(next.value);
    next.value();
  }
}
