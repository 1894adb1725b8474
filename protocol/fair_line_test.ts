import assert from "node:assert/strict";
import { FairLine } from "./fair_line.ts";
import { WaitingLine } from "./waiting_line.ts";

/** Takes every caller left, one take at a time. */
function drain<T>(line: FairLine<string, T>): T[] {
  const taken: T[] = [];
  for (let value = line.takeNext(); value !== undefined;) {
    taken.push(value);
    value = line.takeNext();
  }
  return taken;
}

Deno.test("FairLine serves a key that joined behind another's flood at the next take, then takes turns", () => {
  const line = new FairLine<string, string>();
  for (let i = 0; i < 1000; i++) line.join("a", `a${i}`);
  line.join("b", "b0");
  line.join("b", "b1");
  line.join("c", "c0");
  assert.equal(line.takeNext(), "a0");
  assert.equal(line.takeNext(), "b0");
  assert.equal(line.takeNext(), "c0");
  assert.equal(line.takeNext(), "a1");
  assert.equal(line.takeNext(), "b1");
  const rest = drain(line);
  assert.deepEqual(rest, Array.from({ length: 998 }, (_, i) => `a${i + 2}`));
  assert.equal(line.size, 0);
  assert.equal(line.keyCount, 0);
});

Deno.test("FairLine with one key takes, leaves and empties exactly as a WaitingLine does", () => {
  const fair = new FairLine<string, number>();
  const plain = new WaitingLine<number>();
  const leaves: [() => boolean, () => boolean][] = [];
  // A fixed mix of joins, leaves and takes, the same on both lines.
  for (let step = 0; step < 300; step++) {
    if (step % 7 === 3) {
      const [leaveFair, leavePlain] = leaves[(step * 5) % leaves.length]!;
      assert.equal(leaveFair(), leavePlain());
    } else if (step % 3 === 2) {
      assert.equal(fair.takeNext(), plain.takeFirst());
    } else {
      leaves.push([fair.join("only", step), plain.join(step)]);
    }
    assert.equal(fair.size, plain.size);
  }
  assert.deepEqual(fair.takeAll(), plain.takeAll());
});

Deno.test("FairLine drops a key whose callers all left from the turns, and puts it last when it joins again", () => {
  const line = new FairLine<string, string>();
  const leaveA = [line.join("a", "a0"), line.join("a", "a1")];
  line.join("b", "b0");
  line.join("b", "b1");
  line.join("c", "c0");
  assert.equal(line.keyCount, 3);
  for (const leave of leaveA) assert.equal(leave(), true);
  assert.equal(line.keyCount, 2);
  assert.equal(line.size, 3);
  line.join("a", "a2");
  assert.deepEqual(drain(line), ["b0", "c0", "a2", "b1"]);
  assert.equal(line.keyCount, 0);
});

Deno.test("FairLine takes nobody twice: a caller taken, emptied out or of a key's earlier line cannot leave another", () => {
  const line = new FairLine<string, string>();
  const leaveA0 = line.join("a", "a0");
  assert.equal(line.takeNext(), "a0");
  assert.equal(leaveA0(), false);
  // The key's line emptied and a new one began: the old place leaves nothing.
  line.join("a", "a1");
  assert.equal(leaveA0(), false);
  assert.equal(line.size, 1);
  const leaveB0 = line.join("b", "b0");
  assert.deepEqual(line.takeAll(), ["a1", "b0"]);
  assert.equal(leaveB0(), false);
  assert.equal(line.size, 0);
  assert.equal(line.keyCount, 0);
  assert.equal(line.takeNext(), undefined);
  line.join("b", "b1");
  assert.equal(line.takeNext(), "b1");
});

Deno.test("FairLine's lineOf() joins the line of its key", () => {
  const line = new FairLine<string, string>();
  const a = line.lineOf("a");
  a.join("a0");
  a.join("a1");
  line.lineOf("b").join("b0");
  assert.deepEqual(drain(line), ["a0", "b0", "a1"]);
});
