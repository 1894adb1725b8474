import assert from "node:assert/strict";
import { answerWaitPolicy } from "./_realm_transport.ts";

Deno.test("answerWaitPolicy() forgives one wait that runs out, then skips twice as many lone calls after each further miss until one is answered in time", () => {
  const policy = answerWaitPolicy();
  const wanted = (n: number) =>
    Array.from({ length: n }, () => policy.wanted());

  assert.deepEqual(wanted(3), [true, true, true]);
  // A single miss between answers in time skips nothing.
  policy.record(false);
  assert.deepEqual(wanted(1), [true]);
  policy.record(true);
  policy.record(false);
  assert.deepEqual(wanted(1), [true]);
  // Misses in a row: skip 1, 2, then 4 calls.
  policy.record(false);
  assert.deepEqual(wanted(2), [false, true]);
  policy.record(false);
  assert.deepEqual(wanted(3), [false, false, true]);
  policy.record(false);
  assert.deepEqual(wanted(5), [false, false, false, false, true]);
  // An answer in time forgives everything.
  policy.record(true);
  policy.record(false);
  assert.deepEqual(wanted(1), [true]);
  policy.record(false);
  assert.deepEqual(wanted(2), [false, true]);
});

Deno.test("answerWaitPolicy() skips at most 1,024 lone calls after a miss", () => {
  const policy = answerWaitPolicy();
  for (let miss = 0; miss < 20; miss++) {
    while (!policy.wanted());
    policy.record(false);
  }
  let skipped = 0;
  while (!policy.wanted()) skipped++;
  assert.equal(skipped, 1024);
});
