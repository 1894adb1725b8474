import assert from "node:assert/strict";
import { SandboxResultSchema } from "./sandbox_result.ts";
import { variants } from "./_test_variants_test.ts";
import { isSandboxResult } from "./read_sandbox_result.ts";

const SUCCEEDED = {
  ok: true,
  value: { list: [1, "two", null, true, { deep: [[]] }], empty: {} },
  logs: [{ level: "info", message: "hello" }],
  logsTruncated: false,
  metrics: { tier: "quickjs", durationMs: 1.5 },
};

const FAILED = {
  ok: false,
  error: { code: "TIMEOUT", name: "TimeoutError", message: "Too long" },
  logs: [],
  logsTruncated: true,
  metrics: { tier: "process", durationMs: 0, exitCode: 1 },
};

const SUBSTITUTES: unknown[] = [
  undefined,
  null,
  0,
  -1,
  1.5,
  2 ** 60,
  "",
  "log",
  "quickjs",
  "vm",
  true,
  false,
  [],
  [1],
  {},
  { extra: 1 },
];

Deno.test("isSandboxResult() agrees with SandboxResultSchema on every variant of valid results", () => {
  let tried = 0;
  let valid = 0;
  for (const result of [SUCCEEDED, FAILED]) {
    assert.equal(isSandboxResult(result), true);
    for (const variant of variants(result, SUBSTITUTES)) {
      // Cloned, as a worker runner's message arrives, and through JSON, as
      // a process runner's does.
      for (const copy of [structuredClone(variant), jsonCopy(variant)]) {
        const expected = SandboxResultSchema.safeParse(copy).success;
        assert.equal(
          isSandboxResult(copy),
          expected,
          `disagrees on ${Deno.inspect(copy)}`,
        );
        tried++;
        if (expected) valid++;
      }
    }
  }
  // Both answers occur, so agreement is not agreement on one answer.
  assert.ok(tried > 500, `only ${tried} variants`);
  assert.ok(valid > 50 && valid < tried - 200, `${valid} of ${tried} valid`);
});

function jsonCopy(value: unknown): unknown {
  const text = JSON.stringify(value);
  return text === undefined ? undefined : JSON.parse(text);
}

Deno.test("isSandboxResult() refuses a result nested deeper than the stack, without throwing", () => {
  const deep = JSON.parse(`${"[".repeat(200_000)}${"]".repeat(200_000)}`);
  assert.equal(isSandboxResult({ ...SUCCEEDED, value: deep }), false);
  assert.equal(isSandboxResult(SUCCEEDED), true);
});
