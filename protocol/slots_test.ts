import assert from "node:assert/strict";
import { Slots } from "./slots.ts";

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
