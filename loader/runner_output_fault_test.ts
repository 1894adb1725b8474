import assert from "node:assert/strict";
import { createTestCatalog } from "./_test_catalog_test.ts";
import { createQuickJSPool } from "./quickjs_pool.ts";

// The pool's handling of a runner's messages (reading them, collecting the
// lines a guest logs) runs inside the reading of the runner's output. A
// throw there is a fault of this process, not of the guest: it must end
// the run with SANDBOX_CRASHED naming what was thrown, not stop the
// reading in silence and leave the run waiting for its deadline.

/** A console line whose collection throws, as a bug of the pool would. */
const FAULTY_LINE = "cordon test: collecting this line throws";

/**
 * Runs `fn` while the log collector throws on {@linkcode FAULTY_LINE}: it
 * measures each line with a TextEncoder, from inside the pool's handling
 * of the runner's messages.
 */
async function withFaultyCollector<T>(fn: () => Promise<T>): Promise<T> {
  const { encode } = TextEncoder.prototype;
  TextEncoder.prototype.encode = function (this: TextEncoder, input) {
    if (input === FAULTY_LINE) throw new RangeError("the planted fault");
    return encode.call(this, input);
  };
  try {
    return await fn();
  } finally {
    TextEncoder.prototype.encode = encode;
  }
}

Deno.test("createQuickJSPool() ends a run whose runner's output it threw on with SANDBOX_CRASHED naming what was thrown, and runs the next one, where the run waited for its deadline", async () => {
  await using pool = await createQuickJSPool({
    catalog: createTestCatalog([]),
    size: 1,
  });
  const result = await withFaultyCollector(() =>
    pool.run(
      {
        source: `console.log(${
          JSON.stringify(FAULTY_LINE)
        }); export default 1;`,
      },
      // Calm: the run ends at once when the fault is heard; the deadline
      // is how it ended when it was not.
      { timeoutMs: 20_000 },
    )
  );
  assert.equal(result.ok, false, JSON.stringify(result));
  assert.equal(!result.ok && result.error.code, "SANDBOX_CRASHED");
  assert.match(
    !result.ok ? result.error.message : "",
    /RangeError: the planted fault/,
  );
  const next = await pool.run({ source: "export default 2;" });
  assert.equal(next.ok && next.value, 2, JSON.stringify(next));
});
