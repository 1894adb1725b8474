import assert from "node:assert/strict";
import type { SandboxResult } from "../protocol/sandbox_result.ts";
import { createVmSandbox } from "./vm_sandbox.ts";
import * as cases from "../realm/_override_cases_test.ts";

function sandboxOf(source: string) {
  return createVmSandbox({
    pluginId: "override",
    pluginModule: { kind: "source", source, identifier: "override.js" },
    limits: { timeoutMs: 3000 },
  });
}

function value(result: SandboxResult): unknown {
  assert.equal(result.ok, true, JSON.stringify(result));
  return result.ok ? result.value : undefined;
}

/** A module that exports a function with this name and body. */
function exportOf(name: string, body: string): string {
  return `export function ${name}() {\n${body}\n}\n`;
}

Deno.test("createVmSandbox() lets plugin code override inherited intrinsic properties on its own objects", async () => {
  await using sandbox = sandboxOf(exportOf("overrides", cases.OVERRIDES.body));
  assert.deepEqual(
    value(await sandbox.invoke("overrides")),
    cases.OVERRIDES.expected,
  );
  // The overrides of one call are not seen by the next.
  assert.deepEqual(
    value(await sandbox.invoke("overrides")),
    cases.OVERRIDES.expected,
  );
});

Deno.test("createVmSandbox() makes every tamed intrinsic property an accessor that defines an own property on a derived object", async () => {
  await using sandbox = sandboxOf(
    exportOf("check", cases.TAMED_ACCESSORS.body),
  );
  assert.deepEqual(
    value(await sandbox.invoke("check")),
    cases.TAMED_ACCESSORS.expected,
  );
});

Deno.test("createVmSandbox() refuses a write to a tamed intrinsic with a message that says what to do, and changes nothing for the next call", async () => {
  await using sandbox = sandboxOf(
    exportOf("writes", cases.INTRINSIC_WRITES.body) +
      exportOf("uncaught", cases.UNCAUGHT_WRITE.body) +
      exportOf("next", cases.AFTER_WRITES.body),
  );
  assert.deepEqual(
    value(await sandbox.invoke("writes")),
    cases.INTRINSIC_WRITES.expected("Cannot redefine property: push"),
  );
  const uncaught = await sandbox.invoke("uncaught");
  assert.equal(uncaught.ok, false);
  if (!uncaught.ok) {
    assert.equal(uncaught.error.name, cases.UNCAUGHT_WRITE.expected.name);
    assert.equal(uncaught.error.message, cases.UNCAUGHT_WRITE.expected.message);
  }
  assert.deepEqual(
    value(await sandbox.invoke("next")),
    cases.AFTER_WRITES.expected,
  );
});

Deno.test("createVmSandbox() lets library code find the global object as self, global or globalThis without the Function constructor", async () => {
  await using sandbox = sandboxOf(exportOf("detect", cases.GLOBAL_NAMES.body));
  assert.deepEqual(
    value(await sandbox.invoke("detect")),
    cases.GLOBAL_NAMES.expected,
  );
});
