// This module is browser compatible.

/**
 * How many requests one catalog has in flight at once, and how many may
 * wait for one of them. A listing may name thousands of modules (an honest
 * pack of 3,000, or a hostile listing of tens of thousands under its byte
 * cap): fetched all at once, they opened as many connections, so that under
 * the common limit of 1,024 open files Node's fetch failed with EMFILE and
 * Deno 2.9.6 panicked, ending the process. A request waits for a slot
 * before its deadline starts; past `maxQueued` waiting ones, a request is
 * turned away at once, so prefetches started faster than the server
 * answers cannot grow the wait list, and the host's memory, without end.
 *
 * @module
 */

import { whenAborted } from "../protocol/deadline.ts";

/** The default of `maxConcurrentFetches`: requests of one catalog in flight at once. */
export const DEFAULT_MAX_CONCURRENT_FETCHES = 32;

/**
 * The range of `maxConcurrentFetches`: at least one request, and no more
 * than the common limit of open files, which a catalog would otherwise
 * fill with its connections alone.
 */
export const MAX_CONCURRENT_FETCHES_RANGE = Object.freeze({
  min: 1,
  max: 1024,
});

/** Gives a freed slot to the request that waited longest. */
export class RequestSlots {
  #free: number;
  readonly #size: number;
  readonly #maxQueued: number;
  #waiting = new Set<() => void>();

  /**
   * @param size How many requests may be in flight at once.
   * @param maxQueued How many may wait for a slot; one more is turned away.
   */
  constructor(size: number, maxQueued: number) {
    this.#free = size;
    this.#size = size;
    this.#maxQueued = maxQueued;
  }

  /** How many requests may be in flight at once. */
  get size(): number {
    return this.#size;
  }

  /** How many requests may wait for a slot. */
  get maxQueued(): number {
    return this.#maxQueued;
  }

  /**
   * Waits for a slot.
   *
   * @param signal Ends the wait: the slot is then not taken.
   * @returns Gives the slot back (calling it again does nothing), or
   * `null` when `maxQueued` requests already wait and this one is turned
   * away without waiting.
   * @throws What `signal` aborted with, when it aborts first.
   */
  async take(signal: AbortSignal | undefined): Promise<(() => void) | null> {
    signal?.throwIfAborted();
    if (this.#free > 0) {
      this.#free--;
    } else if (this.#waiting.size >= this.#maxQueued) {
      return null;
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
