import assert from "node:assert/strict";
import { MAX_RESULT_JSON_CHARS, runFailures } from "../protocol/run_result.ts";
import { createProcessSandbox } from "./process_sandbox.ts";
import { createWorkerSandbox } from "./worker_sandbox.ts";
import { resultBound } from "./_result_bound.ts";
import { PROCESS_BOOTSTRAP_URL, v8Flags, workerHostUrl } from "./_sources.ts";
import { lines, startHost } from "./_spawn_host_test.ts";

// A result's JSON text is held to its run's maxResultBytes, at most
// MAX_RESULT_JSON_CHARS, on these tiers as on the QuickJS tier: the guest
// realm counts it while it copies the value, the process child's
// serialiser while it writes it, the worker host measures the text it
// writes, and the caller counts its bytes before it parses it. A text past
// V8's longest string (2 ** 29 - 24) used to leave the process child
// hanging until TIMEOUT and end the worker host (SANDBOX_CRASHED); one
// under it but past the bound was answered.

const MiB = 1024 * 1024;
const REFUSAL = runFailures.resultTooLarge(MAX_RESULT_JSON_CHARS);

const TIERS = {
  worker: createWorkerSandbox,
  process: createProcessSandbox,
};

for (const [tier, create] of Object.entries(TIERS)) {
  Deno.test(`the ${tier} sandbox answers RESULT_NOT_SERIALIZABLE with the guest's logs for a result one string past MAX_RESULT_JSON_CHARS, and runs the next guest`, async () => {
    await using sandbox = create({
      memoryLimitBytes: 512 * MiB,
      maxResultBytes: MAX_RESULT_JSON_CHARS,
    });
    // 2 ** 27 characters and their quotes.
    const result = await sandbox.run(
      `console.log("built");\nexport default "x".repeat(${MAX_RESULT_JSON_CHARS});`,
      { timeoutMs: 30_000 },
    );
    assert.ok(!result.ok, "the result was answered");
    assert.deepEqual(result.error, REFUSAL);
    assert.deepEqual(result.logs, [{ level: "log", message: "built" }]);
    const after = await sandbox.run("export default 'alive';");
    assert.equal(after.ok && after.value, "alive");
  });

  Deno.test(`the ${tier} sandbox answers RESULT_NOT_SERIALIZABLE for a result whose text passes V8's longest string`, async () => {
    // 600 MiB of JSON from one 1 MiB string: the guest holds little, the
    // text cannot be made. The realm refuses it while it copies the value,
    // counting the string each time it appears.
    await using sandbox = create({
      memoryLimitBytes: 4096 * MiB,
      maxResultBytes: MAX_RESULT_JSON_CHARS,
    });
    const result = await sandbox.run(
      'console.log("before"); const s = "x".repeat(2 ** 20); export default Array(600).fill(s);',
      { timeoutMs: 60_000 },
    );
    assert.ok(!result.ok, "the result was answered");
    assert.deepEqual(result.error, REFUSAL);
    assert.deepEqual(result.logs, [{ level: "log", message: "before" }]);
  });
}

// V8 copies a message between threads recursively: a result nested a few
// thousand deep could exhaust the stack as the worker tier posted it or as
// its host rebuilt it, and the run then waited, silent, for its deadline,
// or answered by where the stack ended that time. The marshalling refuses
// such a result while it walks it, past MAX_NESTING_DEPTH, on every run.
for (const [tier, create] of Object.entries(TIERS)) {
  Deno.test(`the ${tier} sandbox answers a result nested thousands deep with RESULT_NOT_SERIALIZABLE, never by running to its deadline`, async () => {
    await using sandbox = create();
    const wraps = ["[v]", "{ k: v }"];
    for (const wrap of wraps) {
      for (let depth = 2000; depth <= 9000; depth += 250) {
        const result = await sandbox.run(
          `let v = []; for (let i = 0; i < ${depth}; i++) v = ${wrap}; export default v;`,
          { timeoutMs: 10_000 },
        );
        const outcome = result.ok ? "value" : result.error.code;
        assert.equal(
          outcome,
          "RESULT_NOT_SERIALIZABLE",
          `${wrap} ${depth} deep`,
        );
      }
    }
  });
}

/** Values whose JSON text is 16 characters long, or a few more. */
const NEAR_BOUND: readonly unknown[] = [
  "x".repeat(14),
  "x".repeat(15),
  // Counted while written, then escaped past the bound.
  "\n".repeat(7),
  "\n".repeat(8),
  [1234567890, 1234],
  [1234567890, 12345],
  { abc: [1, 2, 3, 4] },
  { abcd: [1, 2, 3, 4] },
  [[[[[[[[]]]]]]]],
  [[[[[[[[[]]]]]]]]],
];
const SMALL_BOUND = resultBound(16);

function expectedOutcome(value: unknown): unknown {
  return JSON.stringify(value).length <= SMALL_BOUND.maxChars
    ? { ok: true, value }
    : SMALL_BOUND.refusal;
}

Deno.test("a process-tier child counts a result's text exactly against its bound, and answers the bound's refusal past it", async () => {
  for (const value of NEAR_BOUND) {
    const { child, writer } = await startHost(
      [PROCESS_BOOTSTRAP_URL],
      `${
        JSON.stringify({
          nonce: "n:",
          parent: Deno.pid,
          maxLogBytes: 1000,
          result: SMALL_BOUND,
          parseOnly: false,
          source: `export default ${JSON.stringify(value)};`,
          context: null,
        })
      }\n`,
      { stdout: "piped", stderr: "null" },
    );
    let outcome: unknown;
    for await (const line of lines(child.stdout)) {
      const message = JSON.parse(line.slice("n:".length));
      if (message.t === "result") outcome = message.outcome;
    }
    await writer.close();
    await child.status;
    assert.deepEqual(outcome, expectedOutcome(value), JSON.stringify(value));
  }
});

Deno.test("a worker host counts a result's text exactly against its bound, and answers the bound's refusal past it", async () => {
  const { child, writer } = await startHost(
    [
      "--unstable-worker-options",
      v8Flags(64 * MiB),
      workerHostUrl(false),
    ],
    "",
    { stdout: "piped", stderr: "null" },
  );
  const encoder = new TextEncoder();
  const send = (id: number) =>
    writer.write(encoder.encode(
      `${
        JSON.stringify({
          t: "run",
          id: String(id),
          maxLogBytes: 1000,
          result: SMALL_BOUND,
          watch: {
            timeoutMs: 60_000,
            graceMs: 200,
            residentBytes: null,
            pollMs: 50,
          },
          source: `export default ${JSON.stringify(NEAR_BOUND[id])};`,
          context: null,
        })
      }\n`,
    ));
  const outcomes: unknown[] = [];
  await send(0);
  for await (const line of lines(child.stdout)) {
    const message = JSON.parse(line);
    if (message.t !== "result") continue;
    outcomes.push(message.outcome);
    if (outcomes.length === NEAR_BOUND.length) break;
    await send(outcomes.length);
  }
  await writer.close();
  await child.status;
  assert.deepEqual(outcomes, NEAR_BOUND.map(expectedOutcome));
});
