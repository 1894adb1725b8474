// A plugin's last console lines, logged just before it runs over its
// deadline or out of memory, must reach onLog, in order, before its call
// fails. Written once: vm/node_test/vm_sandbox_cases.mjs runs it on every
// isolation of its runtime, plugin/node_test/adversarial_cases.mjs on every
// plugin tier. This file is JavaScript so that Node runs it as is.

import assert from "node:assert/strict";

/** A call's deadline: far less than the memory bomb's. */
const TIMEOUT_MS = 400;
/**
 * Filling the heap takes longer than TIMEOUT_MS on a loaded machine: two
 * minutes leave the cap, not the clock, to end it, however loaded.
 */
const BOMB_TIMEOUT_MS = 120_000;
const MEMORY_BYTES = 32 * 1024 * 1024;
/** Only a realm that never comes up takes this long, however loaded the machine. */
const STARTUP_MS = 120_000;

const CALLS_PLUGIN = `
export function spin() {
  console.log("first");
  console.info("last words");
  for (;;) {}
}
export function spinInJob() {
  return Promise.resolve().then(() => {
    console.warn("from a promise job");
    for (;;) {}
  });
}
export function bomb() {
  console.error("before the bomb");
  const a = [];
  for (;;) a.push(new Array(1e5).fill(a.length));
}`;

const LOADING_PLUGIN = `
console.log("loading");
console.debug("still loading");
for (;;) {}
export const never = () => null;`;

/** Each call, the code it fails with and the lines it logged. */
const CALLS = [
  ["spin", TIMEOUT_MS, "TIMEOUT", ["log first", "info last words"]],
  ["spinInJob", TIMEOUT_MS, "TIMEOUT", ["warn from a promise job"]],
  ["bomb", BOMB_TIMEOUT_MS, "OUT_OF_MEMORY", ["error before the bomb"]],
];

function codeOf(result) {
  return result.ok ? "ok" : result.error.code;
}

/**
 * Checks that the lines a plugin logged before a `TIMEOUT` (in a call, in
 * a promise job, in the module's top-level code) or an `OUT_OF_MEMORY`
 * reached onLog before the failure.
 *
 * @param createSandbox Makes a sandbox of `options`, on the tier under
 * test; the caller's sandbox options are the vm sandbox's.
 * @param t A context whose `step(name, fn)` runs a sub-test.
 */
export async function checkLastWords(createSandbox, t) {
  const lines = [];
  const sandboxOf = (source, identifier) =>
    createSandbox({
      pluginId: "last-words",
      pluginModule: { kind: "source", source, identifier },
      onLog: (entry) => lines.push(`${entry.level} ${entry.message}`),
      limits: {
        timeoutMs: TIMEOUT_MS,
        startupTimeoutMs: STARTUP_MS,
        memoryLimitBytes: MEMORY_BYTES,
      },
    });
  const calls = sandboxOf(CALLS_PLUGIN, "last_words.js");
  try {
    for (const [name, timeoutMs, code, logged] of CALLS) {
      await t.step(`${name}() ends as ${code} after its lines`, async () => {
        lines.length = 0;
        const result = await calls.invoke(name, null, { timeoutMs });
        assert.equal(codeOf(result), code);
        assert.deepEqual(lines, logged);
      });
    }
  } finally {
    await calls.dispose();
  }
  const loading = sandboxOf(LOADING_PLUGIN, "loading.js");
  try {
    await t.step("top-level code ends as TIMEOUT after its lines", async () => {
      lines.length = 0;
      assert.equal(codeOf(await loading.start()), "TIMEOUT");
      assert.deepEqual(lines, ["log loading", "debug still loading"]);
    });
  } finally {
    await loading.dispose();
  }
}
