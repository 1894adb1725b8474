import assert from "node:assert/strict";
import { callSink, ignoreRejection } from "./hook_calls.ts";
import { unhandledDuring } from "./_test_unhandled_test.ts";

Deno.test("callSink() drops what a sink throws and what its promise rejects with", async () => {
  const down = new Error("sink down");
  const calls: unknown[][] = [];
  const reported = await unhandledDuring(() => {
    callSink((...args: unknown[]) => calls.push(args), "a", 1);
    callSink(() => {
      throw down;
    });
    callSink(() => Promise.reject(down));
    callSink(async () => {
      await Promise.resolve();
      throw down;
    });
    callSink(undefined);
  });
  assert.deepEqual(calls, [["a", 1]]);
  assert.deepEqual(reported, []);
});

Deno.test("ignoreRejection() handles a promise and runs no code of any other value", async () => {
  let thenRead = 0;
  const thenable = {
    get then() {
      thenRead++;
      return () => {};
    },
  };
  const proxy = new Proxy({}, {
    get() {
      throw new Error("read");
    },
    getPrototypeOf() {
      throw new Error("read");
    },
  });
  const reported = await unhandledDuring(() => {
    ignoreRejection(Promise.reject(new Error("late")));
    ignoreRejection(thenable);
    ignoreRejection(proxy);
    ignoreRejection(null);
    ignoreRejection("text");
  });
  assert.deepEqual(reported, []);
  assert.equal(thenRead, 0);
});
