import assert from "node:assert/strict";
import { createProcessSandbox } from "./process_sandbox.ts";
import { createWorkerSandbox } from "./worker_sandbox.ts";
import { withLag } from "./_lag_test.ts";

// A source and an answer each cross a pipe as one line of many 64 KiB
// pieces. Searching the whole line again at every piece took time
// quadratic in its length: at 24 MB the caller's event loop stalled for
// 1.4 to 1.65 s while the answer came in, and the source took seconds to
// reach the worker's host or the child. sandbox/_nonce_frames_test.ts holds
// the parser to linear work; this holds each tier's pipes to it end to end.

/** Far under the 1.4 s the quadratic reader stalled for, far over noise. */
const LAG_BOUND_MS = 1000;
const SIZE = 24_000_000;
const LIMITS = { memoryLimitBytes: 256 * 1024 * 1024 };

const TIERS = {
  worker: () => createWorkerSandbox(LIMITS),
  process: () => createProcessSandbox(LIMITS),
};

for (const [tier, create] of Object.entries(TIERS)) {
  Deno.test(`the ${tier} sandbox takes a source and gives an answer of 24 MB without stalling the caller's event loop`, async () => {
    await using sandbox = create();
    const { result, lagMs } = await withLag(() =>
      sandbox.run(
        `const text = "${
          "y".repeat(SIZE)
        }";\nexport default text + text.length;`,
        { timeoutMs: 20_000 },
      )
    );
    assert.equal(result.ok && result.value, "y".repeat(SIZE) + SIZE);
    assert.ok(
      lagMs < LAG_BOUND_MS,
      `the caller's event loop stalled for ${lagMs} ms`,
    );
  });
}
