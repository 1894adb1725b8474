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

import { Slots } from "../protocol/slots.ts";

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

/**
 * Gives a freed slot to the request that waited longest: the first-in,
 * first-out gate the sandboxes use, answering as a catalog's requests need.
 */
export class RequestSlots {
  readonly #slots: Slots;
  readonly #size: number;

  /**
   * @param size How many requests may be in flight at once.
   * @param maxQueued How many may wait for a slot; one more is turned away.
   */
  constructor(size: number, maxQueued: number) {
    this.#slots = new Slots(size, maxQueued);
    this.#size = size;
  }

  /** How many requests may be in flight at once. */
  get size(): number {
    return this.#size;
  }

  /** How many requests may wait for a slot. */
  get maxQueued(): number {
    return this.#slots.maxQueued;
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
    const outcome = await this.#slots.acquire(signal);
    if (outcome === "busy") return null;
    // The gate is never closed, so a wait that ended was aborted.
    if (outcome === "ended") throw signal!.reason;
    let given = false;
    return () => {
      if (given) return;
      given = true;
      this.#slots.release();
    };
  }
}
