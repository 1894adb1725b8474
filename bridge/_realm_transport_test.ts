import assert from "node:assert/strict";
import { boundedAnswerWait } from "./_realm_transport.ts";

Deno.test("boundedAnswerWait() sees a changed cell, and after each wait that runs out skips twice as many lone calls until one is answered in time", () => {
  const cells = new Int32Array(new SharedArrayBuffer(8));
  const wait = boundedAnswerWait(cells, 0);
  const outcomes = (seen: number, n: number) =>
    Array.from({ length: n }, () => wait(seen));

  Atomics.store(cells, 0, 1);
  assert.deepEqual(outcomes(0, 2), [true, true]);
  // Cell 0 holds 1: waiting for it to leave 1 runs out, and the skipped
  // calls answer false even for a cell that changed.
  assert.equal(wait(1), false);
  assert.deepEqual(outcomes(0, 1), [false]);
  assert.equal(wait(1), false);
  assert.deepEqual(outcomes(0, 3), [false, false, true]);
  // The call answered in time forgives: the next miss skips one call.
  assert.equal(wait(1), false);
  assert.deepEqual(outcomes(0, 2), [false, true]);
});
