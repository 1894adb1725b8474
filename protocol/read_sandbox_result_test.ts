import assert from "node:assert/strict";
import {
  type SandboxError,
  type SandboxResult,
  SandboxResultSchema,
} from "./sandbox_result.ts";
import { ERROR_CODES, type ErrorCode, isErrorCode } from "./error_codes.ts";
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

Deno.test("isSandboxResult() and SandboxResultSchema take a failure's code only from the registry, so a runner cannot hand the host a code its types do not name", () => {
  for (const code of Object.keys(ERROR_CODES)) {
    const result = { ...FAILED, error: { ...FAILED.error, code } };
    assert.equal(isSandboxResult(result), true, code);
    assert.equal(SandboxResultSchema.safeParse(result).success, true, code);
  }
  for (const code of ["TIMEOUTS", "timeout", "toString", "__proto__", ""]) {
    const result = { ...FAILED, error: { ...FAILED.error, code } };
    assert.equal(isSandboxResult(result), false, code);
    assert.equal(SandboxResultSchema.safeParse(result).success, false, code);
  }
});

Deno.test("a failure's code narrows to the registry's codes", () => {
  const narrow = (result: SandboxResult): ErrorCode | "ok" =>
    result.ok ? "ok" : result.error.code;
  assert.equal(narrow(FAILED as SandboxResult), "TIMEOUT");
  const error: SandboxError = {
    // @ts-expect-error TIMEOUTS is no registered code
    code: "TIMEOUTS",
    name: "TimeoutError",
    message: "Too long",
  };
  assert.equal(isErrorCode(error.code), false);
});
