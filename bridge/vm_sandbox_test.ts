import assert from "node:assert/strict";
import { CordonError } from "../protocol/cordon_error.ts";
import type { SandboxResult } from "../protocol/sandbox_result.ts";
import {
  createVmSandbox,
  type VmLogEntry,
  type VmSandboxOptions,
} from "./vm_sandbox.ts";

function sandboxOf(
  source: string,
  options: Partial<VmSandboxOptions> = {},
) {
  return createVmSandbox({
    pluginId: "test",
    pluginModule: { kind: "source", source, identifier: "test.js" },
    limits: { timeoutMs: 3000 },
    ...options,
  });
}

function valueOf(result: SandboxResult): unknown {
  assert.equal(result.ok, true, JSON.stringify(result));
  return result.ok ? result.value : undefined;
}

function codeOf(result: SandboxResult): string {
  assert.equal(result.ok, false, JSON.stringify(result));
  return result.ok ? "" : result.error.code;
}

Deno.test("createVmSandbox() runs an exported function in the realm and returns its JSON value", async () => {
  await using sandbox = sandboxOf(
    "export function add({ a, b }) { return { sum: a + b, at: [a, b] }; }",
  );
  const result = await sandbox.invoke("add", { a: 2, b: 40 });
  assert.deepEqual(valueOf(result), { sum: 42, at: [2, 40] });
  assert.equal(result.metrics.tier, "vm");
  assert.equal(sandbox.instruments.invocations, 1);
  assert.equal(sandbox.instruments.state, "running");
});

Deno.test("createVmSandbox() answers plain values at once and still settles thenables and queued jobs", async () => {
  await using sandbox = sandboxOf(`
    let ticks = 0;
    export function plain() {
      Promise.resolve().then(() => { ticks++; });
      return { then: 1, ticks };
    }
    export function thenable() {
      return { then(resolve) { resolve({ from: "then", ticks }); } };
    }
    export function badThen() {
      return { get then() { throw new RangeError("no then"); } };
    }
    export async function later() { await null; return ticks; }
  `);
  assert.deepEqual(valueOf(await sandbox.invoke("plain")), {
    then: 1,
    ticks: 0,
  });
  // The job queued by plain() ran before the next call.
  assert.deepEqual(valueOf(await sandbox.invoke("thenable")), {
    from: "then",
    ticks: 1,
  });
  assert.equal(codeOf(await sandbox.invoke("badThen")), "GUEST_ERROR");
  assert.equal(valueOf(await sandbox.invoke("later")), 1);
});

Deno.test("createVmSandbox() keeps every value the plugin sees inside the context's own intrinsics", async () => {
  await using sandbox = sandboxOf(
    `
    import { capabilities, fetch } from "cordon:host";
    const escape = (value) => {
      try {
        const make = value.constructor.constructor;
        const fn = make("return typeof process + typeof Deno + typeof require");
        return "escaped: " + fn();
      } catch (error) {
        return error instanceof EvalError ? "EvalError" : "other " + error;
      }
    };
    export async function probe() {
      const out = {};
      const answer = await capabilities.call("echo", { list: [1], when: "now" });
      out.resultProto = Object.getPrototypeOf(answer) === Object.prototype;
      out.arrayProto = Object.getPrototypeOf(answer.list) === Array.prototype;
      out.resultEscape = escape(answer);
      let denied;
      try { await capabilities.call("nope"); } catch (error) { denied = error; }
      out.deniedIsError = denied instanceof Error;
      out.deniedCode = denied.code;
      out.deniedEscape = escape(denied);
      out.deniedStack = String(denied.stack);
      const pending = fetch("http://127.0.0.1:1/none");
      out.promiseProto = Object.getPrototypeOf(pending) === Promise.prototype;
      out.promiseEscape = escape(pending);
      let fetchError;
      try { await pending; } catch (error) { fetchError = error; }
      out.fetchErrorIsError = fetchError instanceof Error;
      out.fetchErrorEscape = escape(fetchError);
      let importError;
      try { await import("node:fs"); } catch (error) { importError = error; }
      out.importErrorIsTypeError = importError instanceof TypeError;
      out.importCode = importError.code;
      out.importEscape = escape(importError);
      out.functionEscape = escape(capabilities.call);
      out.globalEscape = escape(globalThis);
      out.globalProtoEscape = escape(Object.getPrototypeOf(globalThis));
      out.hostGlobals = [typeof process, typeof Deno, typeof require, typeof Buffer];
      return out;
    }`,
    {
      policy: { capabilities: ["echo"] },
      proxies: { capabilities: { echo: (args) => args } },
    },
  );
  const probe = valueOf(await sandbox.invoke("probe")) as Record<
    string,
    unknown
  >;
  assert.equal(probe.resultProto, true);
  assert.equal(probe.arrayProto, true);
  assert.equal(probe.deniedIsError, true);
  assert.equal(probe.deniedCode, "PERMISSION_DENIED");
  assert.equal(probe.promiseProto, true);
  assert.equal(probe.fetchErrorIsError, true);
  assert.equal(probe.importErrorIsTypeError, true);
  assert.equal(probe.importCode, "IMPORT_DYNAMIC");
  for (
    const key of [
      "resultEscape",
      "deniedEscape",
      "promiseEscape",
      "fetchErrorEscape",
      "importEscape",
      "functionEscape",
      "globalEscape",
      "globalProtoEscape",
    ]
  ) assert.equal(probe[key], "EvalError", key);
  assert.deepEqual(probe.hostGlobals, [
    "undefined",
    "undefined",
    "undefined",
    "undefined",
  ]);
  assert.doesNotMatch(String(probe.deniedStack), /\bat\b|\/work\/|file:/);
});

/** Plugin code that walks everything it can reach and flags foreign prototypes. */
const WALK_PLUGIN = `
import * as host from "cordon:host";
export async function walk() {
  const roots = [globalThis, host, import.meta, Object.getPrototypeOf(globalThis)];
  try { await import("x"); } catch (error) { roots.push(error); }
  try { await host.capabilities.call("none"); } catch (error) { roots.push(error); }
  roots.push(host.fetch("http://127.0.0.1:1/"), function* () {}, async function () {}, async function* () {});
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
}`;

Deno.test("createVmSandbox() leaves no object with a host prototype reachable from plugin code", async () => {
  await using sandbox = sandboxOf(WALK_PLUGIN);
  const { visited, foreign } = valueOf(await sandbox.invoke("walk")) as {
    visited: number;
    foreign: string[];
  };
  assert.deepEqual(foreign, []);
  assert.ok(visited > 500, `only ${visited} objects were reachable`);
});

Deno.test("createVmSandbox() disables code generation from strings and WebAssembly", async () => {
  await using sandbox = sandboxOf(`
    export function probe() {
      const attempt = (fn) => { try { fn(); return "ran"; } catch (e) { return e.name; } };
      return {
        eval: attempt(() => eval("1 + 1")),
        fn: attempt(() => Function("return 1")),
        asyncFn: attempt(() => (async () => {}).constructor("return 1")),
        wasm: attempt(() => new WebAssembly.Module(new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0]))),
      };
    }`);
  assert.deepEqual(valueOf(await sandbox.invoke("probe")), {
    eval: "EvalError",
    fn: "EvalError",
    asyncFn: "EvalError",
    wasm: "CompileError",
  });
});

Deno.test("createVmSandbox() freezes globals and intrinsics but lets plugins name their own errors", async () => {
  await using sandbox = sandboxOf(`
    export function probe() {
      const attempt = (fn) => { try { fn(); return "changed"; } catch (e) { return e.name; } };
      class PluginError extends Error {
        constructor(message) { super(message); this.name = "PluginError"; }
      }
      const own = { toString() { return "mine"; } };
      own.valueOf = () => 7;
      return {
        arrayProto: attempt(() => { Array.prototype.evil = 1; }),
        objectProto: attempt(() => { Object.prototype.toString = () => "x"; }),
        jsonParse: attempt(() => { JSON.parse = () => 1; }),
        promiseThen: attempt(() => { Promise.prototype.then = () => 1; }),
        // Deno's vm globals may ignore the write instead of throwing.
        replaceGlobal: (attempt(() => { globalThis.Array = null; }), typeof Array),
        deleteGlobal: (attempt(() => { delete globalThis.JSON; }), typeof JSON),
        frozen: [Object.isFrozen(Array.prototype), Object.isFrozen(Object), Object.isFrozen(Math)],
        errorName: new PluginError("x").name,
        own: String(own) + (own + 0),
      };
    }`);
  assert.deepEqual(valueOf(await sandbox.invoke("probe")), {
    arrayProto: "TypeError",
    objectProto: "TypeError",
    jsonParse: "TypeError",
    promiseThen: "TypeError",
    replaceGlobal: "function",
    deleteGlobal: "object",
    frozen: [true, true, true],
    errorName: "PluginError",
    own: "mine7",
  });
});

Deno.test("createVmSandbox() refuses every import but cordon:host at link time with its IMPORT code", async (t) => {
  const cases: [string, string][] = [
    ['import fs from "node:fs";', "IMPORT_NODE_BUILTIN"],
    ['import fs from "fs";', "IMPORT_COMPAT"],
    ['import x from "npm:lodash";', "IMPORT_NPM"],
    ['import x from "jsr:@std/path";', "IMPORT_JSR"],
    ['import x from "https://example.com/x.js";', "IMPORT_REMOTE"],
    ['import x from "file:///etc/passwd";', "IMPORT_FILE"],
    ['import x from "data:text/javascript,export default 1";', "IMPORT_DATA"],
    ['import x from "./helper.js";', "IMPORT_PATH_ESCAPE"],
    ['import x from "left-pad";', "IMPORT_UNDECLARED"],
    ['import x from "cordon:host" with { type: "json" };', "IMPORT_ATTRIBUTES"],
  ];
  for (const [line, code] of cases) {
    await t.step(`${line} gives ${code}`, async () => {
      await using sandbox = sandboxOf(
        `${line}\nexport function f() { return 1; }`,
      );
      const started = await sandbox.start();
      assert.equal(codeOf(started), code);
      assert.equal(started.ok ? "" : started.error.name, "ImportDeniedError");
    });
  }
});

Deno.test("createVmSandbox() reports a syntax error of the plugin module as GUEST_SYNTAX_ERROR", async () => {
  await using sandbox = sandboxOf("export function f( {");
  const started = await sandbox.start();
  assert.equal(codeOf(started), "GUEST_SYNTAX_ERROR");
  await assert.rejects(
    Promise.resolve(sandbox.invoke("f")).then((r) => {
      if (!r.ok) throw new Error(r.error.code);
    }),
    /GUEST_SYNTAX_ERROR/,
  );
});

Deno.test("createVmSandbox() turns plugin failures into results with codes", async () => {
  await using sandbox = sandboxOf(`
    export function boom() { throw new TypeError("bad input"); }
    export async function reject() { throw "plain"; }
    export function fn() { return () => 1; }
    export function deep() { const f = () => f(); return f(); }
    export const notAFunction = 1;
    export async function dynamic() { await import("node:" + "fs"); }`);
  const boom = await sandbox.invoke("boom");
  assert.equal(codeOf(boom), "GUEST_ERROR");
  assert.equal(boom.ok ? "" : boom.error.message, "bad input");
  assert.equal(boom.ok ? "" : boom.error.name, "TypeError");
  const reject = await sandbox.invoke("reject");
  assert.equal(reject.ok ? "" : reject.error.name, "NonErrorThrown");
  assert.equal(codeOf(await sandbox.invoke("fn")), "RESULT_NOT_SERIALIZABLE");
  assert.equal(codeOf(await sandbox.invoke("deep")), "STACK_OVERFLOW");
  assert.equal(
    codeOf(await sandbox.invoke("notAFunction")),
    "BRIDGE_INVALID_PLUGIN_SURFACE",
  );
  assert.equal(
    codeOf(await sandbox.invoke("missing")),
    "BRIDGE_INVALID_PLUGIN_SURFACE",
  );
  const dynamic = await sandbox.invoke("dynamic");
  assert.equal(codeOf(dynamic), "IMPORT_DYNAMIC");
  assert.equal(dynamic.ok ? "" : dynamic.error.name, "ImportDeniedError");
  assert.equal(sandbox.instruments.failures, 7);
  // Failures are data: the realm keeps serving.
  assert.equal(sandbox.instruments.restarts, 0);
});

Deno.test("createVmSandbox() gates capabilities through the policy and the checker", async () => {
  const calls: string[] = [];
  await using sandbox = sandboxOf(
    `
    import { capabilities } from "cordon:host";
    export const held = () => capabilities.list();
    export const call = (name) => capabilities.call(name, { n: 1 });`,
    {
      policy: { capabilities: ["kv.read", "kv.write"] },
      checker: (request) =>
        request.kind !== "capability" || request.name !== "kv.write",
      proxies: {
        capabilities: {
          "kv.read": (args) => {
            calls.push("kv.read");
            return { read: args };
          },
          "kv.write": () => {
            calls.push("kv.write");
            return null;
          },
          "kv.admin": () => {
            calls.push("kv.admin");
            return null;
          },
        },
      },
    },
  );
  assert.deepEqual(valueOf(await sandbox.invoke("held")), [
    "kv.read",
    "kv.write",
  ]);
  assert.deepEqual(valueOf(await sandbox.invoke("call", "kv.read")), {
    read: { n: 1 },
  });
  assert.equal(
    codeOf(await sandbox.invoke("call", "kv.admin")),
    "PERMISSION_DENIED",
  );
  assert.equal(
    codeOf(await sandbox.invoke("call", "kv.write")),
    "PERMISSION_DENIED",
  );
  assert.deepEqual(calls, ["kv.read"]);
  assert.equal(sandbox.instruments.denials, 2);
});

Deno.test("createVmSandbox() fetches only the hosts of policy.fetch", async (t) => {
  const seen: string[] = [];
  await using server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    async (request) => {
      seen.push(
        `${request.method} ${new URL(request.url).pathname} ${
          request.headers.get("x-test")
        } ${await request.text()}`,
      );
      if (new URL(request.url).pathname === "/redirect") {
        return Response.redirect("http://127.0.0.1:1/elsewhere", 302);
      }
      return Response.json({ ok: true, bytes: [1, 2, 3] });
    },
  );
  const origin = `http://127.0.0.1:${server.addr.port}`;
  await using sandbox = sandboxOf(
    `
    import { fetch } from "cordon:host";
    export async function get(url) {
      const response = await fetch(url, { method: "POST", headers: { "x-test": "yes" }, body: "ping" });
      return { status: response.status, data: response.status === 200 ? await response.json() : null, location: response.header("location") };
    }`,
    { policy: { fetch: [`127.0.0.1:${server.addr.port}`] } },
  );
  await t.step(
    "an allowed host is fetched with method, headers and body",
    async () => {
      assert.deepEqual(valueOf(await sandbox.invoke("get", `${origin}/data`)), {
        status: 200,
        data: { ok: true, bytes: [1, 2, 3] },
        location: null,
      });
      assert.deepEqual(seen, ["POST /data yes ping"]);
    },
  );
  await t.step(
    "another port, host or scheme is denied before any request",
    async () => {
      for (
        const url of [
          "http://127.0.0.1:1/data",
          "http://localhost:1/",
          "file:///etc/passwd",
          `http://user:pw@127.0.0.1:${server.addr.port}/`,
        ]
      ) {
        assert.equal(
          codeOf(await sandbox.invoke("get", url)),
          "PERMISSION_DENIED",
          url,
        );
      }
      assert.equal(seen.length, 1);
    },
  );
  await t.step("redirects are returned, not followed", async () => {
    const answer = valueOf(
      await sandbox.invoke("get", `${origin}/redirect`),
    ) as { status: number; location: string };
    assert.equal(answer.status, 302);
    assert.equal(answer.location, "http://127.0.0.1:1/elsewhere");
  });
});

Deno.test("createVmSandbox() reads and writes only inside the folders of policy.fs", async (t) => {
  const root = await Deno.makeTempDir();
  try {
    await Deno.mkdir(`${root}/data`);
    await Deno.mkdir(`${root}/out`);
    await Deno.writeTextFile(`${root}/data/a.txt`, "alpha");
    await Deno.writeTextFile(`${root}/secret.txt`, "secret");
    await Deno.symlink(`${root}/secret.txt`, `${root}/data/link.txt`);
    await using sandbox = sandboxOf(
      `
      import { fs } from "cordon:host";
      export const read = (path) => fs.readTextFile(path);
      export const list = (path) => fs.readDir(path);
      export const write = ({ path, text }) => fs.writeTextFile(path, text);`,
      {
        policy: { fs: { read: [`${root}/data`], write: [`${root}/out`] } },
      },
    );
    await t.step("a file inside a read folder is read", async () => {
      assert.equal(
        valueOf(await sandbox.invoke("read", `${root}/data/a.txt`)),
        "alpha",
      );
      const names = (valueOf(await sandbox.invoke("list", `${root}/data`)) as {
        name: string;
      }[]).map((e) => e.name).sort();
      assert.deepEqual(names, ["a.txt", "link.txt"]);
    });
    await t.step(
      "dot-dot, relative paths and symbolic links cannot leave it",
      async () => {
        for (
          const path of [
            `${root}/data/../secret.txt`,
            "data/a.txt",
            `${root}/data/link.txt`,
            `${root}/data/a.txt\0`,
          ]
        ) {
          assert.equal(
            codeOf(await sandbox.invoke("read", path)),
            "PERMISSION_DENIED",
            path,
          );
        }
      },
    );
    await t.step(
      "a missing file is a failure with a code but no host detail",
      async () => {
        const missing = await sandbox.invoke("read", `${root}/data/none.txt`);
        assert.equal(codeOf(missing), "PROXY_CALL_FAILED");
        assert.equal(missing.ok ? "" : missing.error.name, "NotFound");
      },
    );
    await t.step("writes land only in a write folder", async () => {
      valueOf(
        await sandbox.invoke("write", { path: `${root}/out/b.txt`, text: "b" }),
      );
      assert.equal(await Deno.readTextFile(`${root}/out/b.txt`), "b");
      assert.equal(
        codeOf(
          await sandbox.invoke("write", {
            path: `${root}/data/a.txt`,
            text: "x",
          }),
        ),
        "PERMISSION_DENIED",
      );
      assert.equal(await Deno.readTextFile(`${root}/data/a.txt`), "alpha");
    });
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("createVmSandbox() forwards console lines of plugin code to onLog", async () => {
  const lines: VmLogEntry[] = [];
  await using sandbox = sandboxOf(
    `
    import { console as hostConsole } from "cordon:host";
    export function talk() { console.log("n =", 1, { x: true }); hostConsole.warn("careful"); return null; }`,
    { onLog: (entry) => lines.push(entry) },
  );
  valueOf(await sandbox.invoke("talk"));
  // The lines travel beside the answer; wait for both.
  for (let i = 0; i < 50 && lines.length < 2; i++) {
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  assert.deepEqual(lines, [
    { pluginId: "test", level: "log", message: 'n = 1 {"x":true}' },
    { pluginId: "test", level: "warn", message: "careful" },
  ]);
});

const BUSY_PLUGIN = await Deno.readTextFile(
  new URL("../fixtures/plugins/busy_plugin.js", import.meta.url),
);
const ANSWER_PLUGIN = await Deno.readTextFile(
  new URL("../fixtures/plugins/answer_plugin.js", import.meta.url),
);
const AWAITING_PLUGIN = await Deno.readTextFile(
  new URL("../fixtures/plugins/awaiting_plugin.js", import.meta.url),
);

/**
 * A sandbox of `source` that may call the `echo` capability, whose log
 * lines go to `lines`.
 */
function echoingSandbox(
  source: string,
  isolation: "process" | "thread",
  lines: string[],
) {
  return sandboxOf(source, {
    isolation,
    policy: { capabilities: ["echo"] },
    proxies: { capabilities: { echo: (args) => args } },
    onLog: (entry) => lines.push(entry.message),
  });
}

Deno.test("createVmSandbox() serves concurrent calls, large payloads, proxy calls and promise jobs on both isolations", async (t) => {
  for (const isolation of ["process", "thread"] as const) {
    await t.step(isolation, async () => {
      const lines: string[] = [];
      await using sandbox = echoingSandbox(BUSY_PLUGIN, isolation, lines);
      // Every fourth payload is larger than a pipe's buffer and than the
      // shared slot of a worker thread, so it arrives in pieces or by port.
      const texts = Array.from(
        { length: 24 },
        (_, n) => (n % 4 === 0 ? "é".repeat(150_000) : "x".repeat(n)) + n,
      );
      const results = await Promise.all(
        texts.map((text, n) => sandbox.invoke("echo", { n, text })),
      );
      results.forEach((result, n) =>
        assert.deepEqual(valueOf(result), {
          n,
          echoed: n,
          later: "set",
          length: texts[n]!.length,
          tail: texts[n]!.slice(-4),
        })
      );
      for (let i = 0; i < 50 && lines.length < 48; i++) {
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      assert.equal(lines.length, 48);
      for (let n = 0; n < 24; n++) {
        assert.ok(lines.indexOf(`start ${n}`) < lines.indexOf(`end ${n}`));
      }
      assert.equal(sandbox.instruments.isolation, isolation);
      assert.equal(sandbox.instruments.restarts, 0);
    });
  }
});

/**
 * One call at a time, as the shared file of a realm process sees it: small
 * answers, answers on either side of its 64 KiB slot, a large one, one that
 * comes after the host stopped waiting and ones that need a proxy call.
 */
const ANSWER_CALLS: { size: number; busyMs: number; viaHost: boolean }[] = JSON
  .parse(
    await Deno.readTextFile(
      new URL("../fixtures/plugins/answer_calls.json", import.meta.url),
    ),
  );

Deno.test("createVmSandbox() answers calls alone and together whatever the answer's size and timing, on both isolations", async (t) => {
  for (const isolation of ["process", "thread"] as const) {
    await t.step(isolation, async () => {
      const lines: string[] = [];
      await using sandbox = echoingSandbox(ANSWER_PLUGIN, isolation, lines);
      let count = 0;
      const answer = async (call: (typeof ANSWER_CALLS)[number]) => {
        const n = count++;
        const result = await sandbox.invoke("answer", { n, ...call });
        assert.deepEqual(valueOf(result), {
          n,
          echoed: n,
          text: "é".repeat(call.size) + n,
        });
      };
      // One at a time, then all at once, then one at a time again.
      for (const call of ANSWER_CALLS) await answer(call);
      await Promise.all(ANSWER_CALLS.map(answer));
      for (const call of ANSWER_CALLS) await answer(call);
      for (let i = 0; i < 50 && lines.length < count; i++) {
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      assert.deepEqual(
        lines.toSorted(),
        Array.from({ length: count }, (_, n) => `answering ${n}`).toSorted(),
      );
      assert.equal(sandbox.instruments.restarts, 0);
    });
  }
});

Deno.test("createVmSandbox() loads a module whose top level awaits the host and a refused import()", async (t) => {
  for (const isolation of ["process", "thread"] as const) {
    await t.step(isolation, async () => {
      await using sandbox = sandboxOf(
        AWAITING_PLUGIN,
        {
          isolation,
          policy: { capabilities: ["config"] },
          proxies: { capabilities: { config: () => ({ greeting: "hi" }) } },
        },
      );
      assert.deepEqual(valueOf(await sandbox.invoke("read")), {
        config: { greeting: "hi" },
        refused: "IMPORT_DYNAMIC",
        again: "IMPORT_DYNAMIC",
      });
    });
  }
});

Deno.test("createVmSandbox() runs start() once per realm and stop() when stopped", async () => {
  const events: string[] = [];
  await using sandbox = sandboxOf(
    `
    import { capabilities } from "cordon:host";
    export const start = () => capabilities.call("record", "start");
    export const stop = () => capabilities.call("record", "stop");
    export const ping = () => "pong";`,
    {
      policy: { capabilities: ["record"] },
      proxies: {
        capabilities: {
          record: (event) => {
            events.push(String(event));
          },
        },
      },
    },
  );
  await Promise.all([sandbox.start(), sandbox.start()]);
  await sandbox.start();
  assert.equal(valueOf(await sandbox.invoke("ping")), "pong");
  assert.deepEqual(events, ["start"]);
  await sandbox.stop();
  await sandbox.stop();
  assert.deepEqual(events, ["start", "stop"]);
  assert.equal(sandbox.instruments.state, "stopped");
  assert.equal(valueOf(await sandbox.invoke("ping")), "pong");
  assert.deepEqual(events, ["start", "stop", "start"]);
  assert.equal(sandbox.instruments.restarts, 0);
});

Deno.test("createVmSandbox() can be disposed twice and refuses use afterwards", async () => {
  const sandbox = sandboxOf("export const f = () => 1;");
  assert.equal(valueOf(await sandbox.invoke("f")), 1);
  await sandbox.dispose();
  await sandbox.dispose();
  assert.equal(sandbox.instruments.state, "disposed");
  await assert.rejects(
    sandbox.invoke("f"),
    (error) =>
      error instanceof CordonError && error.code === "SANDBOX_DISPOSED",
  );
  await assert.rejects(
    sandbox.start(),
    (error) =>
      error instanceof CordonError && error.code === "SANDBOX_DISPOSED",
  );
});

Deno.test("createVmSandbox() rejects malformed options with TypeError and RangeError", () => {
  const pluginModule = {
    kind: "source",
    source: "",
    identifier: "x.js",
  } as const;
  assert.throws(
    () => createVmSandbox({ pluginId: "", pluginModule }),
    TypeError,
  );
  assert.throws(
    () =>
      createVmSandbox({
        pluginId: "x",
        pluginModule: { kind: "file" } as unknown as typeof pluginModule,
      }),
    TypeError,
  );
  assert.throws(
    () =>
      createVmSandbox({
        pluginId: "x",
        pluginModule,
        limits: { timeoutMs: 0 },
      }),
    RangeError,
  );
  assert.throws(
    () =>
      createVmSandbox({
        pluginId: "x",
        pluginModule,
        policy: { fetch: ["http://example.com/path"] },
      }),
    TypeError,
  );
  assert.throws(
    () =>
      createVmSandbox({
        pluginId: "x",
        pluginModule,
        policy: { fs: { read: ["relative/dir"] } },
      }),
    TypeError,
  );
});
