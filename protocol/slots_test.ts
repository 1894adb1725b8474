import assert from "node:assert/strict";
import { Slots } from "./slots.ts";
import { assertLinearArraySteps } from "./_test_queue_work_test.ts";

/** Whether `promise` has settled once the jobs queued before it have run. */
async function settledNow<T>(promise: Promise<T>): Promise<T | "pending"> {
  const pending = Symbol("pending");
  const outcome = await Promise.race([
    promise,
    new Promise<typeof pending>((resolve) =>
      setTimeout(() => resolve(pending), 0)
    ),
  ]);
  return outcome === pending ? "pending" : outcome as T;
}

Deno.test("Slots turns away a caller past maxQueued at once, while the waiting ones still get slots", async () => {
  const slots = new Slots(1, 2);
  assert.equal(await slots.acquire(), "held");
  const second = slots.acquire();
  const third = slots.acquire();
  assert.equal(await slots.acquire(), "busy");
  assert.equal(slots.waiting, 2);
  assert.equal(await settledNow(second), "pending");
  slots.release();
  assert.equal(await second, "held");
  slots.release();
  assert.equal(await third, "held");
  // The queue emptied: a caller may wait again.
  const fourth = slots.acquire();
  assert.equal(await settledNow(fourth), "pending");
  slots.release();
  assert.equal(await fourth, "held");
});

Deno.test("Slots gives an aborted waiter's place in the queue to the next caller", async () => {
  const slots = new Slots(1, 1);
  assert.equal(await slots.acquire(), "held");
  const controller = new AbortController();
  const aborted = slots.acquire(controller.signal);
  assert.equal(await slots.acquire(), "busy");
  controller.abort();
  assert.equal(await aborted, "ended");
  const next = slots.acquire();
  assert.equal(await settledNow(next), "pending");
  slots.release();
  assert.equal(await next, "held");
});

Deno.test("Slots with maxQueued 0 turns away every caller that finds no free slot", async () => {
  const slots = new Slots(2, 0);
  assert.equal(await slots.acquire(), "held");
  assert.equal(await slots.acquire(), "held");
  assert.equal(await slots.acquire(), "busy");
  slots.release();
  assert.equal(await slots.acquire(), "held");
});

/** A gate whose one slot is held, with `callers` waiting on it. */
async function heldWith(
  callers: number,
  signalOf: (i: number) => AbortSignal | undefined,
) {
  const slots = new Slots(1, callers);
  assert.equal(await slots.acquire(), "held");
  const waits = Array.from(
    { length: callers },
    (_, i) => slots.acquire(signalOf(i)),
  );
  return { slots, waits };
}

Deno.test("Slots does as much work per caller for 4000 waiting callers aborted one by one as for 2000", async () => {
  await assertLinearArraySteps(2000, async (callers) => {
    const controllers = Array.from(
      { length: callers },
      () => new AbortController(),
    );
    const { waits } = await heldWith(callers, (i) => controllers[i]!.signal);
    for (const controller of controllers) controller.abort();
    const outcomes = await Promise.all(waits);
    assert.equal(
      outcomes.filter((outcome) => outcome === "ended").length,
      callers,
    );
  });
});

Deno.test("Slots does as much work per caller for 4000 callers on one signal that aborts as for 2000", async () => {
  await assertLinearArraySteps(2000, async (callers) => {
    const controller = new AbortController();
    const { slots, waits } = await heldWith(callers, () => controller.signal);
    controller.abort();
    const outcomes = await Promise.all(waits);
    assert.equal(
      outcomes.filter((outcome) => outcome === "ended").length,
      callers,
    );
    assert.equal(slots.waiting, 0);
  });
});

Deno.test("Slots does as much work per caller handing its slot down a line of 4000 as of 2000, first in first out", async () => {
  await assertLinearArraySteps(2000, async (callers) => {
    const { slots, waits } = await heldWith(callers, () => undefined);
    const served: number[] = [];
    const passedOn = waits.map((wait, i) =>
      wait.then((outcome) => {
        assert.equal(outcome, "held");
        served.push(i);
        slots.release();
      })
    );
    slots.release();
    await Promise.all(passedOn);
    assert.deepEqual(served, [...served.keys()]);
  });
});

Deno.test("Slots leaves a waiter's neighbours in line when it aborts, and turns every waiter away at close", async () => {
  const leaver = new AbortController();
  const { slots, waits } = await heldWith(
    5,
    (i) => i === 2 ? leaver.signal : undefined,
  );
  leaver.abort();
  assert.equal(await waits[2], "ended");
  assert.equal(slots.waiting, 4);
  slots.release();
  assert.equal(await waits[0], "held");
  assert.equal(await settledNow(waits[1]!), "pending");
  slots.release();
  assert.equal(await waits[1], "held");
  slots.release();
  assert.equal(await waits[3], "held");
  slots.close();
  assert.equal(await waits[4], "ended");
  assert.equal(slots.waiting, 0);
});
