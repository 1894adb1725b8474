// The cases of createVmSandbox() about overriding inherited intrinsic
// properties, written once. vm/override_test.ts registers them with
// Deno.test and vm/node_test/override.test.mjs with node:test. The plugin
// bodies and their expected values come from realm/_override_cases_test.ts,
// which `deno task build:node` bundles to dist/cases/ for Node. This file is
// JavaScript so that Node runs it as is.

import assert from "node:assert/strict";

function value(result) {
  assert.equal(result.ok, true, JSON.stringify(result));
  return result.ok ? result.value : undefined;
}

/** A module that exports a function with this name and body. */
function exportOf(name, body) {
  return `export function ${name}() {\n${body}\n}\n`;
}

/**
 * Registers the shared override cases of createVmSandbox().
 *
 * @param api `createVmSandbox` of the build under test and `cases`, the
 * exports of realm/_override_cases_test.ts.
 * @param test Registers one test: `test(name, fn)`.
 */
export function registerOverrideCases(api, test) {
  const { createVmSandbox, cases } = api;

  /** Runs `fn` with a sandbox of `source` and disposes it afterwards. */
  async function withSandbox(source, fn) {
    const sandbox = createVmSandbox({
      pluginId: "override",
      pluginModule: { kind: "source", source, identifier: "override.js" },
      limits: { timeoutMs: 3000 },
    });
    try {
      await fn(sandbox);
    } finally {
      await sandbox.dispose();
    }
  }

  test("createVmSandbox() lets plugin code override inherited intrinsic properties on its own objects", async () => {
    await withSandbox(
      exportOf("overrides", cases.OVERRIDES.body),
      async (sandbox) => {
        assert.deepEqual(
          value(await sandbox.invoke("overrides")),
          cases.OVERRIDES.expected,
        );
        // The overrides of one call are not seen by the next.
        assert.deepEqual(
          value(await sandbox.invoke("overrides")),
          cases.OVERRIDES.expected,
        );
      },
    );
  });

  test("createVmSandbox() makes every tamed intrinsic property an accessor that defines an own property on a derived object", async () => {
    await withSandbox(
      exportOf("check", cases.TAMED_ACCESSORS.body),
      async (sandbox) => {
        assert.deepEqual(
          value(await sandbox.invoke("check")),
          cases.TAMED_ACCESSORS.expected,
        );
      },
    );
  });

  test("createVmSandbox() refuses a write to a tamed intrinsic with a message that says what to do, and changes nothing for the next call", async () => {
    await withSandbox(
      exportOf("writes", cases.INTRINSIC_WRITES.body) +
        exportOf("uncaught", cases.UNCAUGHT_WRITE.body) +
        exportOf("next", cases.AFTER_WRITES.body),
      async (sandbox) => {
        assert.deepEqual(
          value(await sandbox.invoke("writes")),
          cases.INTRINSIC_WRITES.expected("Cannot redefine property: push"),
        );
        const uncaught = await sandbox.invoke("uncaught");
        assert.equal(uncaught.ok, false);
        if (!uncaught.ok) {
          assert.equal(uncaught.error.name, cases.UNCAUGHT_WRITE.expected.name);
          assert.equal(
            uncaught.error.message,
            cases.UNCAUGHT_WRITE.expected.message,
          );
        }
        assert.deepEqual(
          value(await sandbox.invoke("next")),
          cases.AFTER_WRITES.expected,
        );
      },
    );
  });

  test("createVmSandbox() lets library code find the global object as self, global or globalThis without the Function constructor", async () => {
    await withSandbox(
      exportOf("detect", cases.GLOBAL_NAMES.body),
      async (sandbox) => {
        assert.deepEqual(
          value(await sandbox.invoke("detect")),
          cases.GLOBAL_NAMES.expected,
        );
      },
    );
  });
}
