import assert from "node:assert/strict";
import { test } from "node:test";
import { bridge } from "./_helpers.mjs";

const { createVmSandbox } = bridge;

test("createVmSandbox() on Node lets plugin code override inherited intrinsic properties and refuses writes to the intrinsics", async () => {
  const sandbox = createVmSandbox({
    pluginId: "node-override",
    pluginModule: {
      kind: "source",
      identifier: "node_override.js",
      source: `export function probe() {
  function Stack() {}
  Stack.prototype = Object.create(Array.prototype);
  Stack.prototype.constructor = Stack;
  class P extends Promise {}
  P.resolve = () => "custom";
  const arr = [];
  arr.push = () => "pushed";
  const err = new Error();
  err.name = "Custom";
  err.message = "m";
  const plain = {};
  plain.toString = () => "plain";
  let refused;
  try { Array.prototype.push = 1; } catch (error) { refused = error.message; }
  return [new Stack().constructor === Stack, P.resolve(), arr.push(), String(err), String(plain), refused, [].push(1), self === globalThis];
}`,
    },
    limits: { timeoutMs: 3000 },
  });
  try {
    const result = await sandbox.invoke("probe");
    assert.equal(result.ok, true, JSON.stringify(result));
    assert.deepEqual(result.value, [
      true,
      "custom",
      "pushed",
      "Custom: m",
      "plain",
      "Cannot assign to push: intrinsics are frozen in a sandbox; define it on your own object instead",
      1,
      true,
    ]);
  } finally {
    await sandbox.dispose();
  }
});
