import assert from "node:assert/strict";
import { settleUnlessAborted } from "./deadline.ts";

Deno.test("settleUnlessAborted() ends every wait on one signal when it aborts, and only the waits still under way", async () => {
  const controller = new AbortController();
  const never = new Promise<string>(() => {});
  const waiting = Array.from(
    { length: 20 },
    () => settleUnlessAborted(never, controller.signal, () => "left"),
  );
  const done = await settleUnlessAborted(
    Promise.resolve("done"),
    controller.signal,
    () => "left",
  );
  controller.abort();
  assert.equal(done, "done");
  assert.deepEqual(await Promise.all(waiting), Array(20).fill("left"));
  assert.equal(
    await settleUnlessAborted(never, controller.signal, () => "at once"),
    "at once",
  );
});

/** Counts the abort listeners `signal` holds, now and at most. */
function countListeners(signal: AbortSignal): { now: number; most: number } {
  const count = { now: 0, most: 0 };
  const { addEventListener, removeEventListener } = signal;
  signal.addEventListener = (
    type: string,
    listener: EventListenerOrEventListenerObject,
    options?: boolean | AddEventListenerOptions,
  ) => {
    count.most = Math.max(count.most, ++count.now);
    addEventListener.call(signal, type, listener, options);
  };
  signal.removeEventListener = (
    type: string,
    listener: EventListenerOrEventListenerObject,
    options?: boolean | EventListenerOptions,
  ) => {
    count.now--;
    removeEventListener.call(signal, type, listener, options);
  };
  return count;
}

Deno.test("settleUnlessAborted() holds one listener for every wait on a signal, and none once they are over", async () => {
  const controller = new AbortController();
  const count = countListeners(controller.signal);
  const answers = await Promise.all(
    Array.from(
      { length: 20 },
      (_, i) =>
        settleUnlessAborted(Promise.resolve(i), controller.signal, () => -1),
    ),
  );
  assert.deepEqual(answers, Array.from({ length: 20 }, (_, i) => i));
  assert.deepEqual(count, { now: 0, most: 1 });
});
