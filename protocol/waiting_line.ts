// This module is browser compatible.

/**
 * A first-in, first-out line of waiting callers that any one of them may
 * leave at any time.
 *
 * @module
 */

import { whenAborted } from "./deadline.ts";

/** One caller's place in a {@linkcode WaitingLine}. */
interface Place<T> {
  readonly value: T;
  before: Place<T> | undefined;
  after: Place<T> | undefined;
  inLine: boolean;
}

/**
 * A first-in, first-out line whose callers may leave from anywhere in it.
 * Joining, leaving and taking the first are each a constant amount of
 * work however long the line is: an array's `indexOf` and `splice` (and
 * `shift`, past a few thousand entries) move or scan the whole line, so
 * aborting or serving a hundred thousand waiting callers took minutes.
 *
 * @example
 * ```ts
 * import { WaitingLine } from "./waiting_line.ts";
 * import assert from "node:assert/strict";
 *
 * const line = new WaitingLine<string>();
 * line.join("a");
 * const leaveB = line.join("b");
 * line.join("c");
 * assert.equal(leaveB(), true);
 * assert.equal(leaveB(), false);
 * assert.equal(line.size, 2);
 * assert.equal(line.takeFirst(), "a");
 * assert.deepEqual(line.takeAll(), ["c"]);
 * assert.equal(line.takeFirst(), undefined);
 * ```
 */
export class WaitingLine<T> {
  #first: Place<T> | undefined;
  #last: Place<T> | undefined;
  #size = 0;

  /** How many wait in line. */
  get size(): number {
    return this.#size;
  }

  /**
   * Puts `value` at the end of the line.
   *
   * @param value The waiting caller.
   * @returns Takes it out of the line: `true` when it was still in it,
   * `false` when it had already left or been taken.
   */
  join(value: T): () => boolean {
    const place: Place<T> = {
      value,
      before: this.#last,
      after: undefined,
      inLine: true,
    };
    if (this.#last === undefined) this.#first = place;
    else this.#last.after = place;
    this.#last = place;
    this.#size++;
    return () => this.#leave(place);
  }

  /**
   * Takes the caller that has waited longest out of the line.
   *
   * @returns It, or `undefined` when nobody waits.
   */
  takeFirst(): T | undefined {
    const first = this.#first;
    if (first === undefined) return undefined;
    this.#leave(first);
    return first.value;
  }

  /**
   * Empties the line.
   *
   * @returns Every caller that waited, longest first.
   */
  takeAll(): T[] {
    const values: T[] = [];
    let place = this.#first;
    while (place !== undefined) {
      const { after } = place;
      place.inLine = false;
      place.before = place.after = undefined;
      values.push(place.value);
      place = after;
    }
    this.#first = this.#last = undefined;
    this.#size = 0;
    return values;
  }

  #leave(place: Place<T>): boolean {
    if (!place.inLine) return false;
    place.inLine = false;
    const { before, after } = place;
    if (before === undefined) this.#first = after;
    else before.after = after;
    if (after === undefined) this.#last = before;
    else after.before = before;
    // Unlinked, so a caller that keeps its leave function holds no
    // neighbour alive.
    place.before = place.after = undefined;
    this.#size--;
    return true;
  }
}

/**
 * Anything a caller can join and leave: a {@linkcode WaitingLine}, or one
 * key's line of a `FairLine`.
 */
export interface Joinable<T> {
  /**
   * Puts `value` in line.
   *
   * @param value The waiting caller.
   * @returns Takes it out of the line: `true` when it was still in it.
   */
  join(value: T): () => boolean;
}

/**
 * Joins `line` and waits until whoever serves it hands this place a value,
 * or leaves the line once `signal` aborts and answers `left`. However many
 * wait on one signal, it holds one listener (see `whenAborted`): each of
 * their own made an abort's removals scan them all.
 *
 * @param line The line of waiting callers, each a function that takes
 * what it is handed.
 * @param signal Ends the wait when it aborts.
 * @param left What the wait answers when the signal ends it.
 * @returns What the place was handed, or `left`.
 * @example
 * ```ts
 * import { waitInLine, WaitingLine } from "./waiting_line.ts";
 * import assert from "node:assert/strict";
 *
 * const line = new WaitingLine<(value: string) => void>();
 * const served = waitInLine(line, undefined, "left");
 * const leaving = new AbortController();
 * const gone = waitInLine(line, leaving.signal, "left");
 * leaving.abort();
 * line.takeFirst()?.("served");
 * assert.equal(await served, "served");
 * assert.equal(await gone, "left");
 * assert.equal(line.size, 0);
 * ```
 */
export function waitInLine<T>(
  line: Joinable<(value: T) => void>,
  signal: AbortSignal | undefined,
  left: T,
): Promise<T> {
  return new Promise((resolve) => {
    let stopWaiting = (): void => {};
    const hand = (value: T) => {
      stopWaiting();
      resolve(value);
    };
    const leave = line.join(hand);
    if (signal !== undefined) {
      stopWaiting = whenAborted(signal, () => {
        leave();
        hand(left);
      });
    }
  });
}
