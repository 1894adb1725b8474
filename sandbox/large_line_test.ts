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
/**
 * How many times the caller's own pass over the source and the answer the
 * stall may take. A loaded machine slows the pass and the run alike: at a
 * load of 13 to 15 the caller stalled for 0.8 to 1.5 s, 1.2 to 1.8 times
 * the pass, where the fixed bound alone failed 3 tests of 4.
 */
const LAG_PASSES = 3;

/**
 * How long the caller takes, on this machine now, to encode and decode the
 * source once and to write and read the answer's JSON once: work linear in
 * the text that any reader does.
 */
function linearPassMs(source: string, answer: string): number {
  const started = performance.now();
  const sent = new TextDecoder().decode(new TextEncoder().encode(source));
  const json = JSON.stringify({ ok: true, value: answer });
  const read = JSON.parse(
    new TextDecoder().decode(new TextEncoder().encode(json)),
  );
  assert.equal(sent.length + read.value.length, source.length + answer.length);
  return performance.now() - started;
}

const SIZE = 24_000_000;
// A source and an answer past the default maxSourceBytes and
// maxResultBytes, which the sandbox is told to take. The worker host holds
// several copies of both on their way (its resident memory is bounded at
// the limit plus 128 MiB), and 256 MiB answered OUT_OF_MEMORY on some runs.
const LIMITS = {
  memoryLimitBytes: 512 * 1024 * 1024,
  maxSourceBytes: 32 * 1024 * 1024,
  maxResultBytes: 32 * 1024 * 1024,
};

const TIERS = {
  worker: () => createWorkerSandbox(LIMITS),
  process: () => createProcessSandbox(LIMITS),
};

for (const [tier, create] of Object.entries(TIERS)) {
  Deno.test(`the ${tier} sandbox takes a source and gives an answer of 24 MB without stalling the caller's event loop`, async () => {
    await using sandbox = create();
    const source = `const text = "${
      "y".repeat(SIZE)
    }";\nexport default text + text.length;`;
    const answer = "y".repeat(SIZE) + SIZE;
    const passBefore = linearPassMs(source, answer);
    const { result, lagMs } = await withLag(() =>
      sandbox.run(source, { timeoutMs: 20_000 })
    );
    // Measured side by side with the run, on either side of it, as the
    // machine's load may change while it runs.
    const passMs = Math.max(passBefore, linearPassMs(source, answer));
    assert.equal(result.ok && result.value, answer);
    assert.ok(
      lagMs < Math.max(LAG_BOUND_MS, LAG_PASSES * passMs),
      `the caller's event loop stalled for ${lagMs} ms, ${passMs} ms a pass`,
    );
  });
}
