import assert from "node:assert/strict";
import { WaitingLine } from "./waiting_line.ts";

Deno.test("WaitingLine keeps the others' order when the first, the last or a middle caller leaves", () => {
  const line = new WaitingLine<number>();
  const leave = [1, 2, 3, 4, 5].map((value) => line.join(value));
  assert.equal(leave[0]!(), true);
  assert.equal(leave[4]!(), true);
  assert.equal(leave[2]!(), true);
  assert.equal(line.size, 2);
  line.join(6);
  assert.deepEqual(line.takeAll(), [2, 4, 6]);
  assert.equal(line.size, 0);
});

Deno.test("WaitingLine takes nobody twice: a caller taken or emptied out cannot leave", () => {
  const line = new WaitingLine<string>();
  const leaveA = line.join("a");
  const leaveB = line.join("b");
  const leaveC = line.join("c");
  assert.equal(line.takeFirst(), "a");
  assert.equal(leaveA(), false);
  assert.deepEqual(line.takeAll(), ["b", "c"]);
  assert.equal(leaveB(), false);
  assert.equal(leaveC(), false);
  assert.equal(line.size, 0);
  assert.equal(line.takeFirst(), undefined);
  // The emptied line takes new callers.
  line.join("d");
  assert.equal(line.takeFirst(), "d");
});
