/**
 * Counts the work a queue does through the array methods that scan or
 * move a whole list, for the tests that flood a queue with waiting
 * callers: removing one caller from the middle of an array, or taking the
 * first, costs as many steps as the array is long, so a queue kept in one
 * does work growing with the square of its callers.
 *
 * @module
 */

import assert from "node:assert/strict";

/**
 * Runs `work` and counts the array entries `indexOf` looked at and
 * `splice` and `shift` moved while it ran, in any array.
 */
export async function arrayStepsDuring(
  work: () => Promise<unknown>,
): Promise<number> {
  const proto = Array.prototype;
  const { indexOf, splice, shift } = proto;
  let steps = 0;
  proto.indexOf = function (this: unknown[], ...args) {
    const at = indexOf.apply(this, args as [unknown]);
    steps += at === -1 ? this.length : at + 1;
    return at;
  };
  proto.splice = function (this: unknown[], ...args: unknown[]) {
    const start = Number(args[0] ?? 0);
    steps += start < 0 ? -start : Math.max(this.length - start, 0);
    return splice.apply(this, args as [number, number]);
  } as typeof splice;
  proto.shift = function (this: unknown[]) {
    steps += this.length;
    return shift.call(this);
  };
  try {
    await work();
  } finally {
    Object.assign(proto, { indexOf, splice, shift });
  }
  return steps;
}

/**
 * Asserts that the array work of `flood` for twice the callers is at most
 * about twice that for `callers`: a queue whose each caller costs a
 * constant does; one that scans or moves the queue per caller does four
 * times as much.
 */
export async function assertLinearArraySteps(
  callers: number,
  flood: (callers: number) => Promise<unknown>,
): Promise<void> {
  const once = await arrayStepsDuring(() => flood(callers));
  const twice = await arrayStepsDuring(() => flood(2 * callers));
  assert.ok(
    twice <= 2.5 * once + callers,
    `${callers} callers took ${once} array steps and ${
      2 * callers
    } took ${twice}`,
  );
}
