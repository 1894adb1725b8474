/**
 * A first-in, first-out gate that lets at most `n` runs in at once.
 *
 * @module
 */

/** A counting gate with a queue. */
export class Slots {
  #free: number;
  #waiters: { grant: (granted: boolean) => void }[] = [];

  /**
   * Creates the gate.
   *
   * @param size How many may be in at once.
   */
  constructor(size: number) {
    this.#free = size;
  }

  /** How many callers wait. */
  get waiting(): number {
    return this.#waiters.length;
  }

  /**
   * Waits for a slot.
   *
   * @param signal Gives up waiting when aborted.
   * @returns `true` with a slot held, `false` when the signal aborted or
   * the gate was closed while waiting.
   */
  acquire(signal?: AbortSignal): Promise<boolean> {
    if (signal?.aborted) return Promise.resolve(false);
    if (this.#free > 0) {
      this.#free--;
      return Promise.resolve(true);
    }
    return new Promise((resolve) => {
      const waiter = {
        grant: (granted: boolean) => {
          signal?.removeEventListener("abort", onAbort);
          resolve(granted);
        },
      };
      const onAbort = () => {
        const index = this.#waiters.indexOf(waiter);
        if (index >= 0) this.#waiters.splice(index, 1);
        waiter.grant(false);
      };
      signal?.addEventListener("abort", onAbort, { once: true });
      this.#waiters.push(waiter);
    });
  }

  /** Gives a slot back, to the longest waiter if there is one. */
  release(): void {
    const next = this.#waiters.shift();
    if (next === undefined) this.#free++;
    else next.grant(true);
  }

  /** Turns every waiter away. */
  close(): void {
    for (const waiter of this.#waiters.splice(0)) waiter.grant(false);
  }
}
