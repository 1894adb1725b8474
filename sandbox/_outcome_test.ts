import assert from "node:assert/strict";
import { runFailures } from "../protocol/run_result.ts";
import {
  hostExitFailure,
  isLoaderStackOverflow,
  readRealmOutcome,
  realmFailure,
  syntaxErrorDetail,
} from "./_outcome.ts";

Deno.test("readRealmOutcome() accepts only the shapes and codes a realm can send", () => {
  assert.deepEqual(readRealmOutcome({ ok: true, value: [1] }), {
    ok: true,
    value: [1],
  });
  assert.equal(
    readRealmOutcome({
      ok: false,
      code: "GUEST_ERROR",
      name: "E",
      message: "m",
    })
      ?.ok,
    false,
  );
  for (
    const forged of [
      { ok: false, code: "TIMEOUT", name: "TimeoutError", message: "fake" },
      { ok: false, code: "GUEST_ERROR", name: 1, message: "m" },
      { ok: true },
      null,
      "ok",
    ]
  ) {
    assert.equal(readRealmOutcome(forged), undefined, JSON.stringify(forged));
  }
});

Deno.test("syntaxErrorDetail() keeps the first line and the position, not the module URL", () => {
  assert.equal(
    syntaxErrorDetail(
      "Identifier 'a' has already been declared at guest:2:5",
    ),
    "Identifier 'a' has already been declared at line 2, column 5",
  );
  assert.equal(
    syntaxErrorDetail(
      'SyntaxError: Expression expected\n  |\n2 | const x = "guest:9:9" +;\n  |                        ~\n    at guest:2:11',
    ),
    "Expression expected at line 2, column 11",
  );
});

Deno.test("syntaxErrorDetail() drops the label after a long run of spaces the engine quotes from the guest's source", () => {
  const quoted = `/(${" ".repeat(8000)}/`;
  assert.equal(
    syntaxErrorDetail(
      `Invalid regular expression: ${quoted}: Unterminated group \t at guest:1:16`,
    ),
    `Invalid regular expression: ${quoted}: Unterminated group at line 1, column 16`,
  );
  assert.equal(
    syntaxErrorDetail(`Unexpected token${" ".repeat(8000)}at guest:3:1x`),
    "Unexpected token" + " ".repeat(8000) + "at guest:3:1x at line 3, column 1",
  );
});

Deno.test("realmFailure() gives a realm's STACK_OVERFLOW the shared message, and keeps a guest's look-alike a GUEST_ERROR", () => {
  assert.deepEqual(
    realmFailure({
      ok: false,
      code: "STACK_OVERFLOW",
      name: "RangeError",
      message: "Maximum call stack size exceeded",
    }),
    runFailures.stackOverflow(),
  );
  assert.deepEqual(
    realmFailure({
      ok: false,
      code: "GUEST_ERROR",
      name: "RangeError",
      message: "Maximum call stack size exceeded",
    }),
    {
      code: "GUEST_ERROR",
      name: "RangeError",
      message: "Maximum call stack size exceeded",
    },
  );
});

Deno.test("hostExitFailure() tells an unsupported Deno, an exhausted heap and a crash apart", () => {
  const unavailable = hostExitFailure(
    { code: 70, signal: null, stderrTail: "" },
    1,
  );
  assert.equal(unavailable.code, "SANDBOX_UNAVAILABLE");
  assert.match(unavailable.message, /--unstable-worker-options/);
  assert.match(unavailable.message, /"unstable": \["worker-options"\]/);
  assert.equal(
    hostExitFailure(
      {
        code: 133,
        signal: "SIGTRAP",
        stderrTail: "#\n# Fatal JavaScript out of memory: Reached heap limit\n",
      },
      32 * 1024 * 1024,
    ).code,
    "OUT_OF_MEMORY",
  );
  const crash = hostExitFailure({ code: 1, signal: null, stderrTail: "" }, 1);
  assert.equal(crash.code, "SANDBOX_CRASHED");
  assert.match(crash.message, /exited with code 1/);
});

Deno.test("hostExitFailure() answers STACK_OVERFLOW only for SIGABRT after Rust's stack overflow report, as Deno's module loader ends", () => {
  const report =
    "\nthread 'tokio-runtime-worker' (30085) has overflowed its stack\nfatal runtime error: stack overflow, aborting\n";
  const deep = hostExitFailure(
    { code: 134, signal: "SIGABRT", stderrTail: report },
    1,
  );
  assert.equal(deep.code, "STACK_OVERFLOW");
  assert.match(
    deep.message,
    /nested too deep for Deno's module loader.*: split the nested expression into named variables or functions$/,
  );
  for (
    const exit of [
      { code: 134, signal: null, stderrTail: report },
      { code: 133, signal: "SIGTRAP", stderrTail: report },
      { code: 134, signal: "SIGABRT", stderrTail: "" },
      // Another abort after a guest printed the report adds its own.
      {
        code: 134,
        signal: "SIGABRT",
        stderrTail: report + "fatal runtime error: something else\n",
      },
    ]
  ) {
    assert.equal(isLoaderStackOverflow(exit), false, JSON.stringify(exit));
    assert.equal(hostExitFailure(exit, 1).code, "SANDBOX_CRASHED");
  }
});
