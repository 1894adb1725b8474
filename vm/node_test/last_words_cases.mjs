// A plugin's last console lines, logged just before it runs over its
// deadline, out of memory or stack, or throws, must reach onLog, in order,
// before its call fails, and the failure is named as a run's is on every
// tier. Written once: vm/node_test/vm_sandbox_cases.mjs runs it on every
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
}
export function recurse() {
  console.log("before the recursion");
  const deeper = () => deeper() + 1;
  return deeper();
}
export function fail() {
  console.log("before the throw");
  throw new TypeError("the plugin's own words");
}
export async function failLater() {
  await null;
  console.log("before the rejection");
  throw new Error("rejected in its own words");
}
export function failInGetter() {
  console.log("before the answer");
  return { get field() { console.log("in the getter"); throw new Error("the getter's words"); } };
}
export function answerFunction() {
  console.log("before the function");
  return { run() {} };
}`;

const LOADING_PLUGIN = `
console.log("loading");
console.debug("still loading");
for (;;) {}
export const never = () => null;`;

/**
 * Each call, its deadline, the code and name it fails with (and the message,
 * where it is the plugin's own) and the lines it logged.
 */
const CALLS = [
  ["spin", TIMEOUT_MS, "TIMEOUT", "TimeoutError", null, [
    "log first",
    "info last words",
  ]],
  ["spinInJob", TIMEOUT_MS, "TIMEOUT", "TimeoutError", null, [
    "warn from a promise job",
  ]],
  ["bomb", BOMB_TIMEOUT_MS, "OUT_OF_MEMORY", "OutOfMemoryError", null, [
    "error before the bomb",
  ]],
  ["recurse", BOMB_TIMEOUT_MS, "STACK_OVERFLOW", "StackOverflowError", null, [
    "log before the recursion",
  ]],
  [
    "fail",
    BOMB_TIMEOUT_MS,
    "GUEST_ERROR",
    "TypeError",
    "the plugin's own words",
    [
      "log before the throw",
    ],
  ],
  [
    "failLater",
    BOMB_TIMEOUT_MS,
    "GUEST_ERROR",
    "Error",
    "rejected in its own words",
    [
      "log before the rejection",
    ],
  ],
  [
    "failInGetter",
    BOMB_TIMEOUT_MS,
    "GUEST_ERROR",
    "Error",
    "the getter's words",
    [
      "log before the answer",
      "log in the getter",
    ],
  ],
  [
    "answerFunction",
    BOMB_TIMEOUT_MS,
    "RESULT_NOT_SERIALIZABLE",
    "Error",
    null,
    [
      "log before the function",
    ],
  ],
];

function codeOf(result) {
  return result.ok ? "ok" : result.error.code;
}

/** The failure's code and name, and its message where `message` pins it. */
function failureOf(result, message) {
  if (result.ok) return { code: "ok" };
  const { code, name } = result.error;
  return message === null
    ? { code, name }
    : { code, name, message: result.error.message };
}

/**
 * Checks that the lines a plugin logged before a `TIMEOUT` (in a call, in
 * a promise job, in the module's top-level code), an `OUT_OF_MEMORY`, a
 * `STACK_OVERFLOW`, a throw or rejection of its own (in its answer's getter
 * too) or an answer that is not data reached onLog before the failure, and
 * that the failure has the name (and the plugin's own message) a run of the
 * same code gets on the worker, process and QuickJS tiers.
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
    for (const [name, timeoutMs, code, errorName, message, logged] of CALLS) {
      await t.step(`${name}() ends as ${code} after its lines`, async () => {
        lines.length = 0;
        const result = await calls.invoke(name, null, { timeoutMs });
        assert.deepEqual(failureOf(result, message), {
          code,
          name: errorName,
          ...(message === null ? {} : { message }),
        });
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
