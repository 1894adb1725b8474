// This module is browser compatible.

/**
 * A line of waiting callers kept as one line per key (a requester) and
 * served in turns, so a key with many callers waiting cannot keep another
 * key's caller waiting behind all of them.
 *
 * @module
 */

import { type Joinable, WaitingLine } from "./waiting_line.ts";

/**
 * Waiting callers, one first-in, first-out line per key, served round-robin:
 * each take serves the caller that has waited longest in the line of the
 * next key in turn, and that key's turn comes again after every other key
 * with callers waiting. One key's callers keep their order, so with a
 * single key it is the plain first-in, first-out line. A key whose line
 * empties (served, or its callers left) drops out of the turns and joins
 * at the end when a caller of it joins again. Joining, leaving and taking
 * are each a constant amount of work however many wait.
 *
 * @example
 * ```ts
 * import { FairLine } from "./fair_line.ts";
 * import assert from "node:assert/strict";
 *
 * const line = new FairLine<string, string>();
 * line.join("a", "a1");
 * line.join("a", "a2");
 * line.join("a", "a3");
 * const leaveB = line.join("b", "b1");
 * line.join("b", "b2");
 * assert.equal(line.takeNext(), "a1");
 * assert.equal(line.takeNext(), "b1");
 * assert.equal(leaveB(), false);
 * assert.equal(line.takeNext(), "a2");
 * assert.equal(line.takeNext(), "b2");
 * assert.deepEqual(line.takeAll(), ["a3"]);
 * assert.equal(line.size, 0);
 * ```
 */
export class FairLine<K, T> {
  /**
   * The lines with a caller waiting, in the order their keys' turns come:
   * a Map keeps the order keys were set in, so deleting a key and setting
   * it again puts it last.
   */
  readonly #turns = new Map<K, WaitingLine<T>>();
  #size = 0;

  /** How many wait, over every key. */
  get size(): number {
    return this.#size;
  }

  /** How many keys have a caller waiting, and so take turns. */
  get keyCount(): number {
    return this.#turns.size;
  }

  /**
   * Puts `value` at the end of the line of `key`.
   *
   * @param key Whose caller it is.
   * @param value The waiting caller.
   * @returns Takes it out of the line: `true` when it was still in it,
   * `false` when it had already left or been taken.
   */
  join(key: K, value: T): () => boolean {
    let line = this.#turns.get(key);
    if (line === undefined) {
      line = new WaitingLine<T>();
      this.#turns.set(key, line);
    }
    const leave = line.join(value);
    this.#size++;
    const joined = line;
    return () => {
      if (!leave()) return false;
      this.#size--;
      // The key's last caller left: it waits for nothing, so it takes no turn.
      if (joined.size === 0 && this.#turns.get(key) === joined) {
        this.#turns.delete(key);
      }
      return true;
    };
  }

  /**
   * The line of `key` alone, for a caller to join: what `waitInLine()` takes.
   *
   * @param key Whose line it is.
   * @returns Joins the line of `key`, as {@linkcode FairLine.join} does.
   */
  lineOf(key: K): Joinable<T> {
    return { join: (value) => this.join(key, value) };
  }

  /**
   * Takes the caller that has waited longest in the line of the key whose
   * turn it is, and gives that key's next turn after every other key's.
   *
   * @returns It, or `undefined` when nobody waits.
   */
  takeNext(): T | undefined {
    for (const [key, line] of this.#turns) {
      this.#turns.delete(key);
      const value = line.takeFirst() as T;
      this.#size--;
      if (line.size > 0) this.#turns.set(key, line);
      return value;
    }
    return undefined;
  }

  /**
   * Empties every line.
   *
   * @returns Every caller that waited, key by key in turn order, each
   * key's longest first.
   */
  takeAll(): T[] {
    const values: T[] = [];
    for (const line of this.#turns.values()) {
      // One by one: spreading a hundred thousand callers into push() would
      // pass the engine's limit on a call's arguments.
      for (const value of line.takeAll()) values.push(value);
    }
    this.#turns.clear();
    this.#size = 0;
    return values;
  }
}
