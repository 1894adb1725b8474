// One way for the tests of Deno and Node to wait for what a realm does in its
// own time: poll, and fail with what did not happen.

import assert from "node:assert/strict";

/**
 * Resolves once `condition()` holds, looking every 10 ms; fails after `ms`
 * with `what` did not happen.
 */
export async function until(condition, what, ms) {
  const deadline = Date.now() + ms;
  while (!condition()) {
    assert.ok(Date.now() < deadline, `${what} did not happen within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
