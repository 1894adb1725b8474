import assert from "node:assert/strict";
import { readRunnerMessage } from "./_runner_protocol.ts";

Deno.test("readRunnerMessage() keeps a guest's __proto__ key as a key", () => {
  const line =
    `{"kind":"result","id":3,"recycle":false,"result":{"ok":true,"value":{"__proto__":{"polluted":true}},"logs":[],"logsTruncated":false,"metrics":{"tier":"quickjs","durationMs":1}}}`;
  const read = readRunnerMessage(JSON.parse(line));
  assert.ok(read?.kind === "result" && read.result.ok);
  const value = read.result.value as Record<string, unknown>;
  assert.equal(Object.getPrototypeOf(value), Object.prototype);
  assert.deepEqual(Object.keys(value), ["__proto__"]);
});

Deno.test("readRunnerMessage() refuses a message that is not a runner's", () => {
  for (
    const data of [
      null,
      "ready",
      { kind: "result", id: 1, recycle: false, result: { ok: true } },
      { kind: "result", id: "1", recycle: false, result: null },
      { kind: "other" },
      { kind: "log", id: 1, level: "shout", message: "x" },
      { kind: "log", id: 1, level: "log", message: 1 },
      { kind: "log", id: "1", level: "log", message: "x" },
      { kind: "log", level: "log", message: "x" },
      { kind: "truncated" },
      { kind: "truncated", id: null },
    ]
  ) {
    assert.equal(readRunnerMessage(data), null, JSON.stringify(data));
  }
  assert.deepEqual(readRunnerMessage({ kind: "ready" }), { kind: "ready" });
});

Deno.test("readRunnerMessage() reads a logged line and a truncation of a run", () => {
  assert.deepEqual(
    readRunnerMessage({
      kind: "log",
      id: 2,
      level: "warn",
      message: "careful",
      extra: true,
    }),
    { kind: "log", id: 2, level: "warn", message: "careful" },
  );
  assert.deepEqual(readRunnerMessage({ kind: "truncated", id: 2 }), {
    kind: "truncated",
    id: 2,
  });
});

Deno.test("readRunnerMessage() keeps REALM_CODE_ALTERED of a runner that cannot start, and no other code", () => {
  assert.deepEqual(
    readRunnerMessage({
      kind: "unavailable",
      message: "Cannot start the QuickJS engine: ...",
      code: "REALM_CODE_ALTERED",
    }),
    {
      kind: "unavailable",
      message: "Cannot start the QuickJS engine: ...",
      code: "REALM_CODE_ALTERED",
    },
  );
  assert.deepEqual(
    readRunnerMessage({
      kind: "unavailable",
      message: "m",
      code: "GUEST_ERROR",
    }),
    { kind: "unavailable", message: "m" },
  );
});
