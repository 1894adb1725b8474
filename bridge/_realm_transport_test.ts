import assert from "node:assert/strict";
import { answerWaitPolicy } from "./_realm_transport.ts";

Deno.test("answerWaitPolicy() waits for every lone call until a wait runs out, then skips twice as many calls after each miss until one is answered in time", () => {
  const policy = answerWaitPolicy();
  const wanted = (n: number) =>
    Array.from({ length: n }, () => policy.wanted());

  assert.deepEqual(wanted(3), [true, true, true]);
  policy.record(true);
  assert.deepEqual(wanted(1), [true]);
  policy.record(false);
  assert.deepEqual(wanted(2), [false, true]);
  policy.record(false);
  assert.deepEqual(wanted(3), [false, false, true]);
  policy.record(false);
  assert.deepEqual(wanted(5), [false, false, false, false, true]);
  // An answer in time forgives: the next miss skips one call.
  policy.record(true);
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
