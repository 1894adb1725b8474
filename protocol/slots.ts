// This module is browser compatible.

/**
 * A first-in, first-out gate that lets at most `n` runs in at once, and at
 * most `maxQueued` wait for one of them.
 *
 * @module
 */

import { WaitingLine, waitInLine } from "./waiting_line.ts";

/**
 * What waiting for a slot came to: one is `held` (give it back with
 * `release()`), the queue was full so the caller was turned away at once
 * (`busy`), or the signal aborted or the gate closed first (`ended`).
 */
export type SlotOutcome = "held" | "busy" | "ended";

/**
 * A counting gate with a bounded queue: the sandboxes' concurrency and the
 * catalogs' requests in flight.
 *
 * @example
 * ```ts
 * import { Slots } from "./slots.ts";
 * import assert from "node:assert/strict";
 *
 * const slots = new Slots(1, 1);
 * assert.equal(await slots.acquire(), "held");
 * const waiting = slots.acquire();
 * assert.equal(await slots.acquire(), "busy");
 * slots.release();
 * assert.equal(await waiting, "held");
 * ```
 */
export class Slots {
  #free: number;
  readonly #maxQueued: number;
  readonly #waiters = new WaitingLine<(outcome: SlotOutcome) => void>();

  /**
   * Creates the gate.
   *
   * @param size How many may be in at once.
   * @param maxQueued How many may wait for a slot; one more is turned away.
   */
  constructor(size: number, maxQueued: number) {
    this.#free = size;
    this.#maxQueued = maxQueued;
  }

  /** How many callers may wait for a slot. */
  get maxQueued(): number {
    return this.#maxQueued;
  }

  /** How many callers wait. */
  get waiting(): number {
    return this.#waiters.size;
  }

  /**
   * Waits for a slot.
   *
   * @param signal Gives up waiting when aborted.
   * @returns Whether a slot is held, the queue was full, or the wait ended.
   */
  acquire(signal?: AbortSignal): Promise<SlotOutcome> {
    if (signal?.aborted) return Promise.resolve("ended");
    if (this.#free > 0) {
      this.#free--;
      return Promise.resolve("held");
    }
    // Refused before it waits: a caller submitting faster than the runs
    // finish would otherwise grow this queue, and the host's memory,
    // without end.
    if (this.#waiters.size >= this.#maxQueued) {
      return Promise.resolve("busy");
    }
    return waitInLine(this.#waiters, signal, "ended");
  }

  /** Gives a slot back, to the longest waiter if there is one. */
  release(): void {
    const next = this.#waiters.takeFirst();
    if (next === undefined) this.#free++;
    else next("held");
  }

  /** Turns every waiter away. */
  close(): void {
    for (const end of this.#waiters.takeAll()) end("ended");
  }
}
