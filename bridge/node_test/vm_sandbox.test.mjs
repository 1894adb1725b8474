import assert from "node:assert/strict";
import { test } from "node:test";
import fs from "node:fs";
import {
  ANSWER_CALLS,
  ANSWER_SOURCE,
  AWAITING_SOURCE,
  bridge,
  BUSY_SOURCE,
  cpuTicks,
  hasProc,
  sleep,
} from "./_helpers.mjs";

const { createVmSandbox } = bridge;

function sandboxOf(source, options = {}) {
  return createVmSandbox({
    pluginId: "node-test",
    pluginModule: { kind: "source", source, identifier: "node_test.js" },
    limits: { timeoutMs: 3000 },
    ...options,
  });
}

test("createVmSandbox() on Node runs the realm on a worker thread and returns JSON values", async () => {
  const sandbox = sandboxOf("export const add = ({ a, b }) => a + b;");
  try {
    const result = await sandbox.invoke("add", { a: 2, b: 40 });
    assert.equal(result.ok, true);
    assert.equal(result.value, 42);
    assert.equal(sandbox.instruments.isolation, "thread");
  } finally {
    await sandbox.dispose();
  }
});

test("createVmSandbox() on Node keeps host functions, errors, promises and prototypes out of reach", async () => {
  const sandbox = sandboxOf(
    `
    import { capabilities } from "cordon:host";
    const escape = (value) => {
      try {
        return "escaped: " + value.constructor.constructor("return typeof process")();
      } catch (error) {
        return error instanceof EvalError ? "EvalError" : "other " + error;
      }
    };
    export async function probe() {
      const answer = await capabilities.call("echo", { list: [1] });
      let denied;
      try { await capabilities.call("nope"); } catch (error) { denied = error; }
      let imported;
      try { await import("node:fs"); } catch (error) { imported = error; }
      const pending = capabilities.call("echo", 1);
      await pending;
      return {
        protos: [
          Object.getPrototypeOf(answer) === Object.prototype,
          Object.getPrototypeOf(answer.list) === Array.prototype,
          denied instanceof Error,
          imported instanceof TypeError,
          Object.getPrototypeOf(pending) === Promise.prototype,
        ],
        codes: [denied.code, imported.code],
        escapes: [answer, denied, imported, pending, capabilities.call, globalThis,
          Object.getPrototypeOf(globalThis)].map(escape),
        hostGlobals: [typeof process, typeof require, typeof Buffer, typeof setTimeout],
      };
    }`,
    {
      policy: { capabilities: ["echo"] },
      proxies: { capabilities: { echo: (args) => args } },
    },
  );
  try {
    const result = await sandbox.invoke("probe");
    assert.equal(result.ok, true, JSON.stringify(result));
    assert.deepEqual(result.value.protos, [true, true, true, true, true]);
    assert.deepEqual(result.value.codes, [
      "PERMISSION_DENIED",
      "IMPORT_DYNAMIC",
    ]);
    assert.deepEqual(result.value.escapes, Array(7).fill("EvalError"));
    assert.deepEqual(result.value.hostGlobals, Array(4).fill("undefined"));
  } finally {
    await sandbox.dispose();
  }
});

test("createVmSandbox() on Node leaves no object with a host prototype reachable from plugin code", async () => {
  const sandbox = sandboxOf(`
    import * as host from "cordon:host";
    export async function walk() {
      const roots = [globalThis, host, import.meta, Object.getPrototypeOf(globalThis)];
      try { await import("x"); } catch (error) { roots.push(error); }
      try { await host.capabilities.call("none"); } catch (error) { roots.push(error); }
      roots.push(host.fetch("http://127.0.0.1:1/"), function* () {}, async function () {});
      const seen = new Set();
      const foreign = [];
      while (roots.length > 0) {
        const value = roots.pop();
        if ((typeof value !== "object" && typeof value !== "function") || value === null || seen.has(value)) continue;
        seen.add(value);
        let root = value;
        for (let next = Object.getPrototypeOf(root); next !== null; next = Object.getPrototypeOf(root)) root = next;
        if (root !== Object.prototype && root !== value) foreign.push(String(value.name ?? typeof value));
        roots.push(Object.getPrototypeOf(value));
        for (const key of Reflect.ownKeys(value)) {
          const descriptor = Object.getOwnPropertyDescriptor(value, key);
          if ("value" in descriptor) roots.push(descriptor.value);
          else roots.push(descriptor.get, descriptor.set);
        }
      }
      return { visited: seen.size, foreign };
    }`);
  try {
    const result = await sandbox.invoke("walk");
    assert.equal(result.ok, true, JSON.stringify(result));
    assert.deepEqual(result.value.foreign, []);
    assert.ok(
      result.value.visited > 500,
      `only ${result.value.visited} objects`,
    );
  } finally {
    await sandbox.dispose();
  }
});

test("createVmSandbox() on Node refuses imports other than cordon:host at link time", async () => {
  for (
    const [line, code] of [
      ['import fs from "node:fs";', "IMPORT_NODE_BUILTIN"],
      ['import cp from "child_process";', "IMPORT_COMPAT"],
      ['import x from "https://example.com/x.js";', "IMPORT_REMOTE"],
    ]
  ) {
    const sandbox = sandboxOf(`${line}\nexport const f = () => 1;`);
    try {
      const started = await sandbox.start();
      assert.equal(started.ok, false);
      assert.equal(started.error.code, code);
    } finally {
      await sandbox.dispose();
    }
  }
});

test(
  "createVmSandbox() on Node stops an endless loop for real and serves the next call",
  {
    skip: !hasProc(),
  },
  async () => {
    const sandbox = sandboxOf(
      "export function loop() { for (;;) {} }\nexport const ping = () => 'pong';",
      { limits: { timeoutMs: 400 } },
    );
    try {
      assert.equal((await sandbox.start()).ok, true);
      const result = await sandbox.invoke("loop");
      assert.equal(result.error?.code, "TIMEOUT");
      const before = cpuTicks();
      await sleep(1000);
      const used = cpuTicks() - before;
      assert.ok(used < 30, `the host used ${used} CPU ticks after the timeout`);
      const next = await sandbox.invoke("ping");
      assert.equal(next.value, "pong");
      assert.equal(sandbox.instruments.restarts, 1);
    } finally {
      await sandbox.dispose();
    }
  },
);

test("createVmSandbox() on Node ends a never-settling promise and a memory bomb with codes", async () => {
  const sandbox = sandboxOf(
    `export const never = () => new Promise(() => {});
     export function bomb() { const a = []; for (;;) a.push(new Array(1e5).fill(a.length)); }
     export const ping = () => "pong";`,
    { limits: { timeoutMs: 5000, memoryLimitBytes: 48 * 1024 * 1024 } },
  );
  try {
    const never = await sandbox.invoke("never", null, { timeoutMs: 300 });
    assert.equal(never.error?.code, "TIMEOUT");
    const bomb = await sandbox.invoke("bomb");
    assert.equal(bomb.error?.code, "OUT_OF_MEMORY");
    assert.equal((await sandbox.invoke("ping")).value, "pong");
  } finally {
    await sandbox.dispose();
  }
});

test("createVmSandbox() on Node can host the realm in a child process too", async () => {
  const sandbox = sandboxOf(
    "export const ping = () => 'pong';\nexport function loop() { for (;;) {} }",
    { isolation: "process", limits: { timeoutMs: 400 } },
  );
  try {
    for (let i = 0; i < 20; i++) {
      assert.equal((await sandbox.invoke("ping")).value, "pong");
    }
    assert.equal(sandbox.instruments.isolation, "process");
    assert.equal(typeof sandbox.instruments.realmPid, "number");
    if (fs.existsSync("/proc/self/fd")) {
      // The realm holds its channel file open; the host removed its name.
      const pid = sandbox.instruments.realmPid;
      const held = fs.readdirSync(`/proc/${pid}/fd`)
        .map((fd) => {
          try {
            return fs.readlinkSync(`/proc/${pid}/fd/${fd}`);
          } catch {
            return "";
          }
        })
        .filter((link) => link.includes("cordon-realm-"));
      assert.equal(held.length, 1);
      assert.match(held[0], /\/channel \(deleted\)$/);
    }
    assert.equal((await sandbox.invoke("loop")).error?.code, "TIMEOUT");
    assert.equal((await sandbox.invoke("ping")).value, "pong");
  } finally {
    await sandbox.dispose();
  }
});

/**
 * A sandbox of `source` that may call the `echo` capability, whose log
 * lines go to `lines`.
 */
function echoingSandbox(source, isolation, lines) {
  return sandboxOf(source, {
    isolation,
    policy: { capabilities: ["echo"] },
    proxies: { capabilities: { echo: (args) => args } },
    onLog: (entry) => lines.push(entry.message),
  });
}

test("createVmSandbox() on Node serves concurrent calls, large payloads, proxy calls and promise jobs on both isolations", async (t) => {
  const source = BUSY_SOURCE;
  for (const isolation of ["thread", "process"]) {
    await t.test(isolation, async () => {
      const lines = [];
      const sandbox = echoingSandbox(source, isolation, lines);
      try {
        // Every fourth payload is larger than a pipe's buffer and than the
        // shared slot of a worker thread.
        const texts = Array.from(
          { length: 24 },
          (_, n) => (n % 4 === 0 ? "é".repeat(150_000) : "x".repeat(n)) + n,
        );
        const results = await Promise.all(
          texts.map((text, n) => sandbox.invoke("echo", { n, text })),
        );
        results.forEach((result, n) => {
          assert.equal(result.ok, true, JSON.stringify(result));
          assert.deepEqual(result.value, {
            n,
            echoed: n,
            later: "set",
            length: texts[n].length,
            tail: texts[n].slice(-4),
          });
        });
        for (let i = 0; i < 50 && lines.length < 48; i++) await sleep(10);
        assert.equal(lines.length, 48);
        for (let n = 0; n < 24; n++) {
          assert.ok(lines.indexOf(`start ${n}`) < lines.indexOf(`end ${n}`));
        }
        assert.equal(sandbox.instruments.isolation, isolation);
        assert.equal(sandbox.instruments.restarts, 0);
      } finally {
        await sandbox.dispose();
      }
    });
  }
});

test("createVmSandbox() on Node loads a module whose top level awaits the host and a refused import()", async (t) => {
  const source = AWAITING_SOURCE;
  for (const isolation of ["thread", "process"]) {
    await t.test(isolation, async () => {
      const sandbox = sandboxOf(source, {
        isolation,
        policy: { capabilities: ["config"] },
        proxies: { capabilities: { config: () => ({ greeting: "hi" }) } },
      });
      try {
        const result = await sandbox.invoke("read");
        assert.equal(result.ok, true, JSON.stringify(result));
        assert.deepEqual(result.value, {
          config: { greeting: "hi" },
          refused: "IMPORT_DYNAMIC",
          again: "IMPORT_DYNAMIC",
        });
      } finally {
        await sandbox.dispose();
      }
    });
  }
});

test("createVmSandbox() on Node answers calls alone and together whatever the answer's size and timing, on both isolations", async (t) => {
  for (const isolation of ["thread", "process"]) {
    await t.test(isolation, async () => {
      const lines = [];
      const sandbox = echoingSandbox(ANSWER_SOURCE, isolation, lines);
      try {
        let count = 0;
        const answer = async (call) => {
          const n = count++;
          const result = await sandbox.invoke("answer", { n, ...call });
          assert.equal(result.ok, true, JSON.stringify(result));
          assert.deepEqual(result.value, {
            n,
            echoed: n,
            text: "é".repeat(call.size) + n,
          });
        };
        // One at a time, then all at once, then one at a time again.
        for (const call of ANSWER_CALLS) await answer(call);
        await Promise.all(ANSWER_CALLS.map(answer));
        for (const call of ANSWER_CALLS) await answer(call);
        for (let i = 0; i < 50 && lines.length < count; i++) await sleep(10);
        assert.deepEqual(
          [...lines].sort(),
          Array.from({ length: count }, (_, n) => `answering ${n}`).sort(),
        );
        assert.equal(sandbox.instruments.restarts, 0);
      } finally {
        await sandbox.dispose();
      }
    });
  }
});
