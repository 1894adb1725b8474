// The cases of createVmSandbox() that hold on every runtime, written once.
// vm/vm_sandbox_test.ts registers them with Deno.test and
// vm/node_test/vm_sandbox.test.mjs with node:test, each against its own
// build of the bridge. This file is JavaScript so that Node runs it as is.

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import {
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  realpath,
  rename,
  rm,
  symlink,
  writeFile,
} from "node:fs/promises";
import { createServer } from "node:http";
import net from "node:net";
import { tmpdir } from "node:os";
import { gzipSync } from "node:zlib";
import { join } from "node:path";
import { checkLastWords } from "./last_words_cases.mjs";
import { until } from "./until.mjs";

function fixture(name) {
  return readFileSync(
    new URL(`../../fixtures/plugins/${name}`, import.meta.url),
    "utf8",
  );
}

const BUSY_PLUGIN = fixture("busy_plugin.js");
const ANSWER_PLUGIN = fixture("answer_plugin.js");
const AWAITING_PLUGIN = fixture("awaiting_plugin.js");

/**
 * One call at a time, as the shared file of a realm process sees it: small
 * answers, answers on either side of its 64 KiB slot, a large one, one that
 * comes after the host stopped waiting and ones that need a proxy call.
 */
const ANSWER_CALLS = JSON.parse(fixture("answer_calls.json"));

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

/**
 * Plugin code that reads, lists and writes in `data/box` of `root`,
 * `rounds` times each, and tells what the calls saw: a file's text, a
 * listing of the folder outside or another one, a write, or a failure's
 * code.
 */
const SWAPPED_PLUGIN = `
import { fs } from "cordon:host";
export async function probe({ root, rounds }) {
  const seen = new Set();
  const box = root + "/data/box";
  const outcome = (call) => call.then((value) => value, (error) => error.code);
  for (let i = 0; i < rounds; i++) {
    seen.add(await outcome(fs.readTextFile(box + "/f.txt")));
    seen.add(await outcome(fs.readDir(box).then((entries) =>
      entries.some((entry) => entry.name === "outside.txt") ? "listed outside" : "listed"
    )));
    seen.add(await outcome(fs.writeTextFile(box + "/w.txt", "x").then(() => "wrote")));
  }
  return [...seen];
}`;

function valueOf(result) {
  assert.equal(result.ok, true, JSON.stringify(result));
  return result.ok ? result.value : undefined;
}

function codeOf(result) {
  assert.equal(result.ok, false, JSON.stringify(result));
  return result.ok ? "" : result.error.code;
}

/** Plugin code that logs that a call has begun, on the realm's side. */
const ENTERED = 'console.log("entered");';

/**
 * The `onLog` option of a sandbox whose plugin code logs {@link ENTERED},
 * and `entered`, which resolves once that line has come: the call has
 * reached the realm, whatever the machine's load.
 */
function whenEntered() {
  let resolve;
  const entered = new Promise((done) => resolve = done);
  return {
    onLog: (entry) => {
      if (entry.message === "entered") resolve();
    },
    entered,
  };
}

/** Makes a named pipe (FIFO) at `path`. */
function makeFifo(path) {
  execFileSync("mkfifo", [path]);
}

/**
 * Registers the shared cases of createVmSandbox().
 *
 * @param api `createVmSandbox` of the build under test, `isCordonError`,
 * which tells whether a thrown value is that build's CordonError, and
 * optionally `isolation`, the one isolation every sandbox gets (`quickjs`
 * runs QuickJS, which has no WebAssembly and no import attributes).
 * @param test Registers one test: `test(name, fn)`, where `fn` receives a
 * context whose `step(name, fn)` runs a sub-test.
 */
export function registerVmSandboxCases(api, test) {
  const { createVmSandbox, isCordonError } = api;
  const quickjs = api.isolation === "quickjs";
  // Deno refuses the thread isolation: its worker.terminate() cannot stop
  // a looping plugin.
  const onDeno = typeof globalThis.Deno === "object";
  const runtimeIsolations = onDeno ? ["process"] : ["process", "thread"];
  const isolations = api.isolation === undefined
    ? runtimeIsolations
    : [api.isolation];

  function sandboxOf(source, options = {}) {
    return createVmSandbox({
      pluginId: "test",
      pluginModule: { kind: "source", source, identifier: "test.js" },
      limits: { timeoutMs: 3000 },
      ...options,
      ...(api.isolation === undefined ? {} : { isolation: api.isolation }),
    });
  }

  /** Runs `fn` with a sandbox of `source` and disposes it afterwards. */
  async function withSandbox(source, options, fn) {
    const sandbox = sandboxOf(source, options);
    try {
      await fn(sandbox);
    } finally {
      await sandbox.dispose();
    }
  }

  /**
   * The source and options of a plugin whose `start()` and `stop()` hooks
   * record their calls in `events`, and which answers `ping`.
   */
  function lifecycleRecorder(events) {
    const source = `
    import { capabilities } from "cordon:host";
    export const start = () => capabilities.call("record", "start");
    export const stop = () => capabilities.call("record", "stop");
    export const ping = () => "pong";`;
    const record = (event) => {
      events.push(String(event));
    };
    return [source, {
      policy: { capabilities: ["record"] },
      proxies: { capabilities: { record } },
    }];
  }

  /**
   * A sandbox of `source` that may call the `echo` capability, whose log
   * lines go to `lines`.
   */
  function echoingOptions(isolation, lines) {
    return {
      isolation,
      policy: { capabilities: ["echo"] },
      proxies: { capabilities: { echo: (args) => args } },
      onLog: (entry) => lines.push(entry.message),
    };
  }

  /**
   * The source and options of a plugin whose `hold()` answers once
   * `open()` is called, and whose `ping()` answers at once; `entered`
   * resolves once a `hold()` runs in the realm.
   */
  function gatedPlugin() {
    let open = () => {};
    let enter = () => {};
    const gate = new Promise((resolve) => open = () => resolve("opened"));
    const entered = new Promise((resolve) => enter = resolve);
    const source = `
    import { capabilities } from "cordon:host";
    export const hold = () => capabilities.call("gate", null);
    export const ping = () => "pong";`;
    const options = {
      policy: { capabilities: ["gate"] },
      proxies: {
        capabilities: {
          gate: () => {
            enter();
            return gate;
          },
        },
      },
    };
    return { source, options, open, entered };
  }

  test("createVmSandbox() refuses a maxQueued out of range or of the wrong type", () => {
    const source = "export const ping = () => 'pong';";
    for (const maxQueued of [-1, 0.5, Number.NaN, 1_000_000_001]) {
      assert.throws(() => sandboxOf(source, { maxQueued }), {
        name: "RangeError",
        message:
          "Cannot create a vm sandbox: maxQueued must be an integer from 0 to 1000000000",
      });
    }
    assert.throws(() => sandboxOf(source, { maxQueued: "9" }), TypeError);
  });

  for (const isolation of isolations) {
    test(`createVmSandbox() with isolation ${isolation} keeps nothing a call matched on RegExp for the next call to read`, async () => {
      // One realm serves every call, whoever made it: a token one request
      // carried, matched by the plugin's code, must not wait on RegExp's
      // legacy statics (input, lastMatch, $1, ...) for the next call.
      const source = `
      export function plant(token) { return /token=(\\w+)/.exec("a=1&token=" + token + "&b=2")[1]; }
      export function look() {
        return ["input", "$_", "lastMatch", "$&", "lastParen", "$+", "leftContext", "$\`", "rightContext", "$'", "$1", "$9"]
          .filter((name) => name in RegExp)
          .map((name) => name + "=" + String(RegExp[name]));
      }`;
      await withSandbox(source, { isolation }, async (sandbox) => {
        assert.equal(
          valueOf(await sandbox.invoke("plant", "s3cret")),
          "s3cret",
        );
        assert.deepEqual(valueOf(await sandbox.invoke("look", null)), []);
      });
    });
  }

  for (const isolation of isolations) {
    test(`createVmSandbox() with isolation ${isolation} refuses a call past maxQueued with SANDBOX_BUSY at once, and answers the ones it took`, async () => {
      const { source, options, open } = gatedPlugin();
      await withSandbox(
        source,
        { ...options, isolation, maxQueued: 1 },
        async (sandbox) => {
          // The realm runs one call; one more may wait, the third may not.
          // Each counts from the moment invoke() is called, so the two
          // held calls count before the realm has even started.
          const held = [sandbox.invoke("hold"), sandbox.invoke("hold")];
          const refused = await sandbox.invoke("ping");
          assert.equal(codeOf(refused), "SANDBOX_BUSY");
          assert.equal(refused.error.name, "CordonError");
          assert.match(
            refused.error.message,
            /^The vm sandbox of plugin "test" has as many runs waiting for a runner as its maxQueued allows \(1\)/,
          );
          open();
          assert.deepEqual((await Promise.all(held)).map(valueOf), [
            "opened",
            "opened",
          ]);
          // Answered calls give their places up.
          assert.equal(valueOf(await sandbox.invoke("ping")), "pong");
        },
      );
    });
  }

  for (const isolation of isolations) {
    test(`createVmSandbox() with isolation ${isolation} answers a call aborted while the realm starts ABORTED at once, not once the start is over`, async () => {
      const { options, open, entered } = gatedPlugin();
      const source = `
      import { capabilities } from "cordon:host";
      export const start = () => capabilities.call("gate", null);
      export const ping = () => "pong";`;
      await withSandbox(source, { ...options, isolation }, async (sandbox) => {
        const controller = new AbortController();
        let answer;
        sandbox.invoke("ping", null, { signal: controller.signal })
          .then((result) => answer = result);
        try {
          // The start() hook waits for the gate, so the call waits too.
          await entered;
          controller.abort();
          await until(
            () => answer !== undefined,
            "the aborted call's answer while the start waits",
            120_000,
          );
          assert.equal(codeOf(answer), "ABORTED");
        } finally {
          open();
        }
        // The start goes on for the calls that did not abort.
        assert.equal(valueOf(await sandbox.invoke("ping")), "pong");
      });
    });
  }

  for (const isolation of isolations) {
    test(`createVmSandbox() with isolation ${isolation} and maxQueued 0 runs one call at a time, and an aborted call keeps its place until the realm is done with it`, async () => {
      const { source, options, open, entered } = gatedPlugin();
      await withSandbox(
        source,
        { ...options, isolation, maxQueued: 0 },
        async (sandbox) => {
          const controller = new AbortController();
          const held = sandbox.invoke("hold", null, {
            signal: controller.signal,
          });
          assert.equal(codeOf(await sandbox.invoke("ping")), "SANDBOX_BUSY");
          await entered;
          controller.abort();
          assert.equal(codeOf(await held), "ABORTED");
          // The realm still runs the aborted hold(): a caller that aborts
          // each call it sends must not queue work in the realm past the
          // bound.
          assert.equal(codeOf(await sandbox.invoke("ping")), "SANDBOX_BUSY");
          open();
          // Once the realm answers it, its place is free again.
          let answer = await sandbox.invoke("ping");
          // Two minutes of tries only catch a place never given up.
          for (let tries = 1; answer.error?.code === "SANDBOX_BUSY"; tries++) {
            assert.ok(
              tries < 12_000,
              "the aborted call never gave its place up",
            );
            await new Promise((resolve) => setTimeout(resolve, 10));
            answer = await sandbox.invoke("ping");
          }
          assert.equal(valueOf(answer), "pong");
        },
      );
    });
  }

  test("createVmSandbox() refuses a policy, checker, log sink or proxy of the wrong shape before any realm starts", () => {
    const wrong = [
      [
        { policy: { capabilities: "all" } },
        /policy\.capabilities: pass an array of names/,
      ],
      [
        { policy: { fetch: "example.com" } },
        /policy\.fetch: pass an array of hosts/,
      ],
      [
        { policy: { fetch: { allow: ["a"] } } },
        /policy\.fetch: pass an array of hosts/,
      ],
      [{ policy: { fs: "/" } }, /policy\.fs: pass \{ read\?, write\? \}/],
      [{ policy: { fs: { read: "/srv" } } }, /policy\.fs\.read: pass an array/],
      [{ policy: { fs: { write: "/" } } }, /policy\.fs\.write: pass an array/],
      [
        { checker: { check: () => true } },
        /checker must be a PermissionChecker function/,
      ],
      [{ onLog: "console" }, /onLog must be a function/],
      [{ proxies: { fetch: "fetch" } }, /proxies\.fetch must be a function/],
      [
        { proxies: { capabilities: { echo: 1 } } },
        /proxies\.capabilities\["echo"\] must be a function/,
      ],
    ];
    for (const [options, message] of wrong) {
      assert.throws(() => sandboxOf("export const x = 1;", options), {
        name: "TypeError",
        message,
      });
    }
  });

  test("createVmSandbox() and invoke() refuse a limit that is not a whole number in range, so no call ends at once or fails as the plugin's", async () => {
    const MAX_TIMER_MS = 2 ** 31 - 1;
    const wrong = [
      [{ timeoutMs: 0 }, RangeError],
      [{ timeoutMs: MAX_TIMER_MS + 1 }, RangeError],
      [{ timeoutMs: 1000.5 }, RangeError],
      [{ timeoutMs: "1000" }, TypeError],
      [{ startupTimeoutMs: 2 ** 32 }, RangeError],
      [{ stopTimeoutMs: 1e20 }, RangeError],
      [{ proxyTimeoutMs: MAX_TIMER_MS + 1 }, RangeError],
      [{ memoryLimitBytes: 8 * 1024 * 1024 - 1 }, RangeError],
      [{ memoryLimitBytes: 64 * 1024 ** 3 + 1 }, RangeError],
      [{ maxPayloadBytes: 4096.5 }, RangeError],
      [{ maxWriteBytes: -1 }, RangeError],
      [{ maxWriteBytes: 1.5 }, RangeError],
      [{ maxWriteBytes: "64" }, TypeError],
    ];
    for (const [limits, type] of wrong) {
      assert.throws(
        () => sandboxOf("export const x = 1;", { limits }),
        (error) =>
          error instanceof type &&
          /^Cannot create a vm sandbox: limits\.\w+ must be/.test(
            error.message,
          ),
        JSON.stringify(limits),
      );
    }
    await withSandbox(
      "export const ping = () => 'pong';",
      {
        limits: { timeoutMs: MAX_TIMER_MS, memoryLimitBytes: 8 * 1024 * 1024 },
      },
      async (sandbox) => {
        for (const timeoutMs of [MAX_TIMER_MS + 1, 2.5, 0]) {
          await assert.rejects(
            sandbox.invoke("ping", null, { timeoutMs }),
            RangeError,
            String(timeoutMs),
          );
        }
        await assert.rejects(
          sandbox.invoke("ping", null, { timeoutMs: "5" }),
          TypeError,
        );
        // The largest time limit is a real one: the call is answered.
        const answer = await sandbox.invoke("ping", null, {
          timeoutMs: MAX_TIMER_MS,
        });
        assert.deepEqual([answer.ok, answer.value], [true, "pong"]);
      },
    );
  });

  test("createVmSandbox() and invoke() refuse a misspelt option at any depth, naming the closest one", async () => {
    const wrong = [
      [{ timeoutMs: 100 }, "unknown option timeoutMs"],
      [
        { limits: { timeoutMS: 100 } },
        "unknown option limits.timeoutMS; did you mean limits.timeoutMs?",
      ],
      [
        { policy: { fecth: ["a"] } },
        "unknown option policy.fecth; did you mean policy.fetch?",
      ],
      [
        { policy: { fs: { reed: ["/srv"] } } },
        "unknown option policy.fs.reed; did you mean policy.fs.read?",
      ],
      [
        { proxies: { capability: {} } },
        "unknown option proxies.capability; did you mean proxies.capabilities?",
      ],
    ];
    for (const [options, message] of wrong) {
      assert.throws(() => sandboxOf("export const x = 1;", options), {
        name: "TypeError",
        message: `Cannot create a vm sandbox: ${message}`,
      });
    }
    await withSandbox(
      "export const ping = () => 'pong';",
      {},
      async (sandbox) => {
        await assert.rejects(sandbox.invoke("ping", null, { timeout: 5 }), {
          name: "TypeError",
          message:
            "Cannot invoke ping(): unknown option timeout; did you mean timeoutMs?",
        });
      },
    );
  });

  test("createVmSandbox() reads its policy once, so a getter cannot widen the folders after the check", async () => {
    const root = await mkdtemp(join(tmpdir(), "cordon-policy-"));
    try {
      await mkdir(`${root}/data`);
      await writeFile(`${root}/secret.txt`, "secret");
      await symlink(`${root}/secret.txt`, `${root}/data/link.txt`);
      let reads = 0;
      const policy = {
        get fs() {
          reads++;
          return { read: reads === 1 ? [`${root}/data`] : [root] };
        },
      };
      await withSandbox(
        `
      import { fs } from "cordon:host";
      export const read = (path) => fs.readTextFile(path);`,
        { policy },
        async (sandbox) => {
          const result = await sandbox.invoke("read", `${root}/data/link.txt`);
          assert.equal(result.ok, false, JSON.stringify(result));
          assert.equal(reads, 1);
        },
      );
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });

  test("createVmSandbox() runs an exported function in the realm and returns its JSON value", async () => {
    await withSandbox(
      "export function add({ a, b }) { return { sum: a + b, at: [a, b] }; }",
      {},
      async (sandbox) => {
        const result = await sandbox.invoke("add", { a: 2, b: 40 });
        assert.deepEqual(valueOf(result), { sum: 42, at: [2, 40] });
        assert.equal(result.metrics.tier, quickjs ? "quickjs" : "vm");
        assert.equal(sandbox.instruments.invocations, 1);
        assert.equal(sandbox.instruments.state, "running");
      },
    );
  });

  test("createVmSandbox() gives plugin code the Web APIs that are pure computation, and decodes bytes as the host does", async () => {
    // A broken sequence, a stray byte, an emoji and an encoded surrogate.
    const bytes = [
      0x68,
      0xc3,
      0xa9,
      0xe2,
      0x9c,
      0x41,
      0xff,
      0xf0,
      0x9f,
      0x8e,
      0x89,
      0xed,
      0xa0,
      0x80,
    ];
    await withSandbox(
      `import { base64, bodyText, utf8 } from "cordon:host";
export function probe(bytes) {
  const input = new Uint8Array(bytes);
  const attempt = (fn) => { try { return fn(); } catch (e) { return [e.name, e instanceof DOMException]; } };
  return {
    decoded: new TextDecoder().decode(input),
    helper: utf8.decode(input),
    body: bodyText({ bodyBase64: base64.encode(input) }),
    encoded: Array.from(new TextEncoder().encode("h\\u00e9 \\ud800")),
    base64: [btoa("\\u00ff"), atob(" /w== "), attempt(() => atob("a")), base64.encode(utf8.encode("hi"))],
    decodedBack: Array.from(base64.decode(base64.encode(input))),
    forgiving: Array.from(base64.decode(" /w= = ")),
    refused: attempt(() => base64.decode("a")),
    random: [
      crypto.getRandomValues(new Uint8Array(8)).length,
      /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/.test(crypto.randomUUID()),
      crypto.randomUUID() !== crypto.randomUUID(),
    ],
    microtask: typeof queueMicrotask,
  };
}`,
      {},
      async (sandbox) => {
        const text = new TextDecoder().decode(new Uint8Array(bytes));
        assert.deepEqual(valueOf(await sandbox.invoke("probe", bytes)), {
          decoded: text,
          helper: text,
          body: text,
          encoded: [104, 195, 169, 32, 239, 191, 189],
          base64: ["/w==", "\u00ff", ["InvalidCharacterError", true], "aGk="],
          decodedBack: bytes,
          forgiving: [255],
          refused: ["InvalidCharacterError", true],
          random: [8, true, true],
          microtask: "function",
        });
      },
    );
  });

  test("createVmSandbox() keys every realm's crypto apart: two plugins, and one plugin's realm after a runaway, draw different bytes", async () => {
    const source =
      `export const draw = () => Array.from(crypto.getRandomValues(new Uint8Array(16)));
export function spin() { for (;;) {} }`;
    // Only the runaway has a short budget: the realms' starts and the draw
    // of the new realm keep the calm limits.timeoutMs.
    const first = sandboxOf(source);
    const second = sandboxOf(source);
    try {
      const drawn = [
        valueOf(await first.invoke("draw")),
        valueOf(await second.invoke("draw")),
      ];
      const spun = await first.invoke("spin", null, { timeoutMs: 500 });
      assert.equal(codeOf(spun), "TIMEOUT");
      drawn.push(valueOf(await first.invoke("draw")));
      assert.equal(first.instruments.restarts, 1);
      assert.equal(new Set(drawn.map(String)).size, 3);
    } finally {
      await first.dispose();
      await second.dispose();
    }
  });

  test("createVmSandbox() answers a call sent in the same turn as a runaway one, and times out only the runaway", async () => {
    await withSandbox(
      `export const quick = async () => { await null; return "done"; };
export const plain = () => "plain";
export function spin() { for (;;) {} }`,
      { limits: { timeoutMs: 500 } },
      async (sandbox) => {
        valueOf(await sandbox.start());
        // Calls made in one turn reach the realm in one write.
        const [quick, plain, spin] = await Promise.all([
          sandbox.invoke("quick"),
          sandbox.invoke("plain"),
          sandbox.invoke("spin"),
        ]);
        assert.equal(valueOf(quick), "done");
        assert.equal(valueOf(plain), "plain");
        assert.equal(codeOf(spin), "TIMEOUT");
      },
    );
  });

  test("createVmSandbox() answers plain values at once and still settles thenables and queued jobs", async () => {
    await withSandbox(
      `
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
  `,
      {},
      async (sandbox) => {
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
      },
    );
  });

  test("createVmSandbox() keeps every value the plugin sees inside the context's own intrinsics", async () => {
    await withSandbox(
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
      const calling = capabilities.call("echo", 1);
      out.callPromiseProto = Object.getPrototypeOf(calling) === Promise.prototype;
      out.callPromiseEscape = escape(calling);
      await calling;
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
      out.hostGlobals = [typeof process, typeof Deno, typeof require, typeof Buffer, typeof setTimeout];
      return out;
    }`,
      {
        policy: { capabilities: ["echo"] },
        proxies: { capabilities: { echo: (args) => args } },
      },
      async (sandbox) => {
        const probe = valueOf(await sandbox.invoke("probe"));
        assert.equal(probe.resultProto, true);
        assert.equal(probe.arrayProto, true);
        assert.equal(probe.deniedIsError, true);
        assert.equal(probe.deniedCode, "PERMISSION_DENIED");
        assert.equal(probe.callPromiseProto, true);
        assert.equal(probe.promiseProto, true);
        assert.equal(probe.fetchErrorIsError, true);
        assert.equal(probe.importErrorIsTypeError, true);
        assert.equal(probe.importCode, "IMPORT_DYNAMIC");
        for (
          const key of [
            "resultEscape",
            "deniedEscape",
            "callPromiseEscape",
            "promiseEscape",
            "fetchErrorEscape",
            "importEscape",
            "functionEscape",
            "globalEscape",
            "globalProtoEscape",
          ]
        ) assert.equal(probe[key], "EvalError", key);
        assert.deepEqual(probe.hostGlobals, Array(5).fill("undefined"));
        assert.doesNotMatch(String(probe.deniedStack), /\bat\b|\/work\/|file:/);
      },
    );
  });

  test("createVmSandbox() leaves no object with a host prototype reachable from plugin code", async () => {
    await withSandbox(WALK_PLUGIN, {}, async (sandbox) => {
      const { visited, foreign } = valueOf(await sandbox.invoke("walk"));
      assert.deepEqual(foreign, []);
      assert.ok(visited > 500, `only ${visited} objects were reachable`);
    });
  });

  test("createVmSandbox() disables code generation from strings and WebAssembly", async () => {
    await withSandbox(
      `
    export function probe() {
      const attempt = (fn) => { try { fn(); return "ran"; } catch (e) { return e.name; } };
      const say = (fn) => { try { fn(); return "ran"; } catch (e) { return e.message; } };
      return {
        said: [
          say(() => eval("1 + 1")),
          say(() => new Function("return 1")),
          say(() => (function* () {}).constructor("yield 1")),
        ],
        eval: attempt(() => eval("1 + 1")),
        fn: attempt(() => Function("return 1")),
        asyncFn: attempt(() => (async () => {}).constructor("return 1")),
        wasm: attempt(() => new WebAssembly.Module(new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0]))),
      };
    }`,
      {},
      async (sandbox) => {
        assert.deepEqual(valueOf(await sandbox.invoke("probe")), {
          // Every tier says what to write instead.
          said: [
            "Cannot use eval in a sandbox: code generation from strings is denied; write the code directly",
            "Cannot use the Function constructor in a sandbox: code generation from strings is denied; write the function directly",
            "Cannot use the GeneratorFunction constructor in a sandbox: code generation from strings is denied; write the function directly",
          ],
          eval: "EvalError",
          fn: "EvalError",
          asyncFn: "EvalError",
          wasm: quickjs ? "ReferenceError" : "CompileError",
        });
      },
    );
  });

  test("createVmSandbox() freezes globals and intrinsics but lets plugins name their own errors", async () => {
    await withSandbox(
      `
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
    }`,
      {},
      async (sandbox) => {
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
      },
    );
  });

  test("createVmSandbox() refuses every import but cordon:host at link time with its IMPORT code", async (t) => {
    const cases = [
      ['import fs from "node:fs";', "IMPORT_NODE_BUILTIN"],
      ['import fs from "fs";', "IMPORT_COMPAT"],
      ['import cp from "child_process";', "IMPORT_COMPAT"],
      ['import x from "npm:lodash";', "IMPORT_NPM"],
      ['import x from "jsr:@std/path";', "IMPORT_JSR"],
      ['import x from "https://example.com/x.js";', "IMPORT_REMOTE"],
      ['import x from "file:///etc/passwd";', "IMPORT_FILE"],
      ['import x from "data:text/javascript,export default 1";', "IMPORT_DATA"],
      ['import x from "./helper.js";', "IMPORT_PATH_ESCAPE"],
      ['import x from "left-pad";', "IMPORT_UNDECLARED"],
    ];
    // QuickJS does not parse import attributes: the module is refused as
    // not valid.
    const attributes = 'import x from "cordon:host" with { type: "json" };';
    if (quickjs) cases.push([attributes, "GUEST_SYNTAX_ERROR", "SyntaxError"]);
    else cases.push([attributes, "IMPORT_ATTRIBUTES"]);
    for (const [line, code, name = "ImportDeniedError"] of cases) {
      await t.step(`${line} gives ${code}`, async () => {
        await withSandbox(
          `${line}\nexport function f() { return 1; }`,
          {},
          async (sandbox) => {
            const started = await sandbox.start();
            assert.equal(codeOf(started), code);
            assert.equal(started.ok ? "" : started.error.name, name);
          },
        );
      });
    }
    // A plugin that imports a package or a module of its own is told to
    // bundle it in, the one way a plugin gets such code.
    for (
      const line of [
        'import x from "./helper.js";',
        'import x from "left-pad";',
      ]
    ) {
      await t.step(
        `${line} says to bundle the code into the plugin module`,
        async () => {
          await withSandbox(
            `${line}\nexport function f() { return 1; }`,
            {},
            async (sandbox) => {
              const started = await sandbox.start();
              assert.match(
                started.ok ? "" : started.error.message,
                /bundle .* into the plugin module/,
              );
            },
          );
        },
      );
    }
  });

  test("createVmSandbox() quotes a refused import clipped, with its bidi and separator characters escaped", async (t) => {
    const hidden = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u;
    // Raw in the string literal, as none of them makes the classifier
    // refuse the specifier by its form.
    const raw = "x\u202etxt\u2028y\u2066";
    const escaped = String.raw`x\u202etxt\u2028y\u2066`;
    for (const prefix of ["./", "left-pad/"]) {
      await t.step(`${prefix} is quoted escaped`, async () => {
        await withSandbox(
          `import x from "${prefix}${raw}";\nexport function f() { return 1; }`,
          {},
          async (sandbox) => {
            const started = await sandbox.start();
            assert.equal(started.ok, false);
            const { message } = started.error;
            assert.ok(!hidden.test(message), message);
            assert.ok(message.includes(`"${prefix}${escaped}"`), message);
          },
        );
      });
    }
    await t.step("a long specifier is clipped", async () => {
      const long = "./" + "x".repeat(10_000);
      await withSandbox(
        `import x from "${long}";\nexport function f() { return 1; }`,
        {},
        async (sandbox) => {
          const started = await sandbox.start();
          assert.equal(started.ok, false);
          const { message } = started.error;
          assert.ok(message.includes(`"${long.slice(0, 200)}…"`), message);
          assert.ok(message.length < 400, `${message.length} characters`);
        },
      );
    });
  });

  test("createVmSandbox() refuses a source or defer phase import of cordon:host as GUEST_SYNTAX_ERROR before linking, as QuickJS does", async (t) => {
    for (
      const line of [
        'import source host from "cordon:host";',
        'import defer * as host from "cordon:host";',
      ]
    ) {
      await t.step(line, async () => {
        await withSandbox(
          `${line}\nexport function f() { return 1; }`,
          {},
          async (sandbox) => {
            const started = await sandbox.start();
            assert.equal(codeOf(started), "GUEST_SYNTAX_ERROR");
            assert.equal(started.ok ? "" : started.error.name, "SyntaxError");
          },
        );
      });
    }
  });

  test("createVmSandbox() reports a syntax error of the plugin module as GUEST_SYNTAX_ERROR", async () => {
    await withSandbox("export function f( {", {}, async (sandbox) => {
      const started = await sandbox.start();
      assert.equal(codeOf(started), "GUEST_SYNTAX_ERROR");
      await assert.rejects(
        Promise.resolve(sandbox.invoke("f")).then((r) => {
          if (!r.ok) throw new Error(r.error.code);
        }),
        /GUEST_SYNTAX_ERROR/,
      );
    });
  });

  test("createVmSandbox() turns plugin failures into results with codes", async () => {
    await withSandbox(
      `
    export function boom() { throw new TypeError("bad input"); }
    export async function reject() { throw "plain"; }
    export function fn() { return () => 1; }
    export function deep() { const f = () => f(); return f(); }
    export const notAFunction = 1;
    export async function dynamic() { await import("node:" + "fs"); }`,
      {},
      async (sandbox) => {
        const boom = await sandbox.invoke("boom");
        assert.equal(codeOf(boom), "GUEST_ERROR");
        assert.equal(boom.ok ? "" : boom.error.message, "bad input");
        assert.equal(boom.ok ? "" : boom.error.name, "TypeError");
        const reject = await sandbox.invoke("reject");
        assert.equal(reject.ok ? "" : reject.error.name, "NonErrorThrown");
        assert.equal(
          codeOf(await sandbox.invoke("fn")),
          "RESULT_NOT_SERIALIZABLE",
        );
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
      },
    );
  });

  test("createVmSandbox() gives a limit's code only to the engine's own error, not to a look-alike the plugin throws", async () => {
    await withSandbox(
      `
    export function stackObject() {
      throw { name: "InternalError", message: "stack overflow" };
    }
    export function memoryObject() {
      throw { name: "InternalError", message: "out of memory" };
    }
    export function rangeError() { throw new RangeError("my call stack"); }
    export function deep() { const f = () => f(); return f(); }`,
      {},
      async (sandbox) => {
        for (const name of ["stackObject", "memoryObject", "rangeError"]) {
          const result = await sandbox.invoke(name);
          assert.equal(codeOf(result), "GUEST_ERROR", name);
        }
        assert.equal(codeOf(await sandbox.invoke("deep")), "STACK_OVERFLOW");
        // Each was the plugin's own failure: the realm keeps serving.
        assert.equal(sandbox.instruments.restarts, 0);
      },
    );
  });

  test("createVmSandbox() gates capabilities through the policy and the checker", async () => {
    const calls = [];
    await withSandbox(
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
      async (sandbox) => {
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
      },
    );
  });

  test("createVmSandbox() writes a capability's result as a plugin's answer is written, and fails a call whose result holds a function or symbol", async () => {
    await withSandbox(
      `
    import { capabilities } from "cordon:host";
    export const call = (name) => capabilities.call(name, {}).then(
      (value) => ({ value }),
      (error) => ({ code: error.code, name: error.name, message: error.message }),
    );`,
      {
        policy: { capabilities: ["data", "method", "symbol"] },
        proxies: {
          capabilities: {
            // As JSON.stringify writes them.
            data: () => ({
              at: new Date(0),
              list: [1, undefined, -0],
              gone: undefined,
            }),
            // JSON.stringify would leave these out: the call fails instead.
            method: () => ({ n: 1, close() {} }),
            symbol: () => [1, Symbol("s")],
          },
        },
      },
      async (sandbox) => {
        assert.deepEqual(valueOf(await sandbox.invoke("call", "data")), {
          value: { at: "1970-01-01T00:00:00.000Z", list: [1, null, 0] },
        });
        for (const name of ["method", "symbol"]) {
          assert.deepEqual(valueOf(await sandbox.invoke("call", name)), {
            code: "PROXY_CALL_FAILED",
            name: "TypeError",
            message:
              "The host's answer to capability is not JSON data: fix the capability to return JSON",
          });
        }
      },
    );
  });

  test("createVmSandbox() bounds fetch responses, file reads and capability results in bytes and time with PROXY_LIMIT_EXCEEDED", async () => {
    const root = await mkdtemp(join(tmpdir(), "cordon-bounds-"));
    try {
      await writeFile(`${root}/small.txt`, "x".repeat(100));
      await writeFile(`${root}/large.txt`, "x".repeat(5000));
      await withSandbox(
        `
    import { capabilities, fetch, fs } from "cordon:host";
    export const get = (url) => fetch(url).then((r) => r.text()).then((t) => t.length);
    export const read = (path) => fs.readTextFile(path).then((t) => t.length);
    export const call = (name) => capabilities.call(name, {}).then((v) => JSON.stringify(v).length);`,
        {
          policy: {
            fetch: ["small.test", "large.test"],
            fs: { read: [root] },
            capabilities: ["small", "large", "slow"],
          },
          proxies: {
            fetch: (request) =>
              Promise.resolve(
                new Response(
                  "x".repeat(request.url.includes("large") ? 5000 : 100),
                ),
              ),
            capabilities: {
              small: () => "x".repeat(100),
              large: () => "x".repeat(5000),
              slow: () => new Promise(() => {}),
            },
          },
          limits: {
            timeoutMs: 3000,
            maxFetchResponseBytes: 1000,
            maxFileReadBytes: 1000,
            maxCapabilityResultBytes: 1000,
            proxyTimeoutMs: 200,
          },
        },
        async (sandbox) => {
          assert.equal(
            valueOf(await sandbox.invoke("get", "http://small.test/")),
            100,
          );
          assert.equal(
            codeOf(await sandbox.invoke("get", "http://large.test/")),
            "PROXY_LIMIT_EXCEEDED",
          );
          assert.equal(
            valueOf(await sandbox.invoke("read", `${root}/small.txt`)),
            100,
          );
          assert.equal(
            codeOf(await sandbox.invoke("read", `${root}/large.txt`)),
            "PROXY_LIMIT_EXCEEDED",
          );
          assert.equal(valueOf(await sandbox.invoke("call", "small")), 102);
          assert.equal(
            codeOf(await sandbox.invoke("call", "large")),
            "PROXY_LIMIT_EXCEEDED",
          );
          const slow = await sandbox.invoke("call", "slow");
          assert.equal(codeOf(slow), "PROXY_LIMIT_EXCEEDED");
          assert.match(slow.error.message, /200 ms/);
        },
      );
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });

  test("createVmSandbox() ends the wait for a call when its signal aborts, and serves the next call", async () => {
    const { onLog, entered } = whenEntered();
    await withSandbox(
      `export const never = () => { ${ENTERED} return new Promise(() => {}); };
    export const ping = () => "pong";`,
      { onLog },
      async (sandbox) => {
        const before = new AbortController();
        before.abort();
        assert.equal(
          codeOf(await sandbox.invoke("ping", null, { signal: before.signal })),
          "ABORTED",
        );
        const during = new AbortController();
        const call = sandbox.invoke("never", null, { signal: during.signal });
        // The abort ends a call the realm is running.
        await entered;
        during.abort();
        assert.equal(codeOf(await call), "ABORTED");
        assert.equal(valueOf(await sandbox.invoke("ping")), "pong");
      },
    );
  });

  test("createVmSandbox() gives a module's top level timeoutMs, not startupTimeoutMs as well", async () => {
    await withSandbox("for (;;) {}\nexport const x = 1;", {
      limits: { timeoutMs: 300, startupTimeoutMs: 120_000 },
    }, async (sandbox) => {
      const started = Date.now();
      const result = await sandbox.start();
      assert.equal(codeOf(result), "TIMEOUT");
      assert.match(result.error.message, /module evaluation .* 300 ms/);
      // Evaluation on top of startupTimeoutMs would take two minutes, far
      // past any start of a loaded machine: the bound catches that alone.
      assert.ok(Date.now() - started < 120_000);
    });
  });

  test("createVmSandbox() names startupTimeoutMs, not timeoutMs, when a realm does not come up in time", async () => {
    // No realm starts within 1 ms: before, the message blamed the plugin
    // and asked for a larger limits.timeoutMs, which changes nothing.
    await withSandbox("export const x = 1;", {
      limits: { timeoutMs: 30_000, startupTimeoutMs: 1 },
    }, async (sandbox) => {
      const result = await sandbox.start();
      assert.equal(codeOf(result), "TIMEOUT");
      assert.match(
        result.error.message,
        /1 ms.*raise limits\.startupTimeoutMs$/,
      );
      assert.doesNotMatch(result.error.message, /limits\.timeoutMs/);
    });
  });

  test("createVmSandbox() bounds the entries of fs.readDir, from disk and from a host fs proxy, with PROXY_LIMIT_EXCEEDED", async () => {
    const root = await mkdtemp(join(tmpdir(), "cordon-dir-"));
    try {
      for (let i = 0; i < 11; i++) await writeFile(`${root}/${i}.txt`, "");
      const listing = (count) =>
        Array.from({ length: count }, (_, i) => ({
          name: `${i}.txt`,
          isFile: true,
          isDirectory: false,
          isSymlink: false,
        }));
      const source = `
    import { fs } from "cordon:host";
    export const list = (path) => fs.readDir(path).then((entries) => entries.length);`;
      const options = (proxies) => ({
        policy: { fs: { read: [root, "/proxied"] } },
        proxies,
        limits: { maxDirEntries: 10 },
      });
      await withSandbox(source, options(undefined), async (sandbox) => {
        await rm(`${root}/10.txt`);
        assert.equal(valueOf(await sandbox.invoke("list", root)), 10);
        await writeFile(`${root}/10.txt`, "");
        const over = await sandbox.invoke("list", root);
        assert.equal(codeOf(over), "PROXY_LIMIT_EXCEEDED");
        assert.match(over.error.message, /more than 10 entries/);
      });
      const fsProxy = {
        readTextFile: () => Promise.resolve(""),
        writeTextFile: () => Promise.resolve(),
        readDir: (path) =>
          Promise.resolve(listing(path.endsWith("many") ? 11 : 10)),
      };
      await withSandbox(source, options({ fs: fsProxy }), async (sandbox) => {
        assert.equal(valueOf(await sandbox.invoke("list", "/proxied/few")), 10);
        assert.equal(
          codeOf(await sandbox.invoke("list", "/proxied/many")),
          "PROXY_LIMIT_EXCEEDED",
        );
      });
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });

  test("createVmSandbox() refuses an isolation its runtime cannot stop, with SANDBOX_UNAVAILABLE", () => {
    const refused = onDeno ? ["thread"] : ["worker", "quickjs"];
    for (const isolation of refused) {
      assert.throws(
        () =>
          createVmSandbox({
            pluginId: "refused",
            isolation,
            pluginModule: {
              kind: "source",
              source: "export const a = 1;",
              identifier: "refused.js",
            },
          }),
        (error) =>
          isCordonError(error) && error.code === "SANDBOX_UNAVAILABLE" &&
          error.message.includes(`"${isolation}"`),
        isolation,
      );
    }
  });

  test("createVmSandbox() refuses a plugin module holding a NUL character, whatever its isolation, with GUEST_SYNTAX_ERROR", () => {
    for (
      const isolation of ["auto", "thread", "process", "worker", "quickjs"]
    ) {
      assert.throws(
        () =>
          createVmSandbox({
            pluginId: "nul",
            isolation,
            pluginModule: {
              kind: "source",
              source: "export const a = 1; // \0\nexport const b = 2;",
              identifier: "nul.js",
            },
          }),
        (error) =>
          isCordonError(error) && error.code === "GUEST_SYNTAX_ERROR" &&
          /NUL character \(U\+0000\) on line 1/.test(error.message),
        isolation,
      );
    }
  });

  test("createVmSandbox() runs a plugin module with the NUL deno bundle writes in its comment for a module it made up", async () => {
    // As `deno bundle` writes a plugin that bundles qs, whose `browser`
    // field disables `util.inspect`.
    await withSandbox(
      "// deno:\0deno-browser-disabled:./util.inspect\n" +
        "var inspect = {};\n" +
        "export const later = () => typeof inspect;",
      {},
      async (sandbox) => {
        assert.equal(valueOf(await sandbox.invoke("later", null)), "object");
      },
    );
  });

  test("createVmSandbox() reads and writes only inside the folders of policy.fs", async (t) => {
    const root = await mkdtemp(join(tmpdir(), "cordon-fs-"));
    try {
      await mkdir(`${root}/data`);
      await mkdir(`${root}/out`);
      await writeFile(`${root}/data/a.txt`, "alpha");
      await writeFile(`${root}/secret.txt`, "secret");
      await symlink(`${root}/secret.txt`, `${root}/data/link.txt`);
      await withSandbox(
        `
      import { fs } from "cordon:host";
      export const read = (path) => fs.readTextFile(path);
      export const list = (path) => fs.readDir(path);
      export const write = ({ path, text }) => fs.writeTextFile(path, text);`,
        {
          policy: { fs: { read: [`${root}/data`], write: [`${root}/out`] } },
        },
        async (sandbox) => {
          await t.step("a file inside a read folder is read", async () => {
            assert.equal(
              valueOf(await sandbox.invoke("read", `${root}/data/a.txt`)),
              "alpha",
            );
            const names = valueOf(await sandbox.invoke("list", `${root}/data`))
              .map((e) => e.name).sort();
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
              const missing = await sandbox.invoke(
                "read",
                `${root}/data/none.txt`,
              );
              assert.equal(codeOf(missing), "PROXY_CALL_FAILED");
              assert.equal(missing.ok ? "" : missing.error.name, "NotFound");
            },
          );
          await t.step("writes land only in a write folder", async () => {
            valueOf(
              await sandbox.invoke("write", {
                path: `${root}/out/b.txt`,
                text: "b",
              }),
            );
            assert.equal(await readFile(`${root}/out/b.txt`, "utf8"), "b");
            assert.equal(
              codeOf(
                await sandbox.invoke("write", {
                  path: `${root}/data/a.txt`,
                  text: "x",
                }),
              ),
              "PERMISSION_DENIED",
            );
            assert.equal(
              await readFile(`${root}/data/a.txt`, "utf8"),
              "alpha",
            );
          });
        },
      );
    } finally {
      await rm(root, { recursive: true });
    }
  });

  /** A plugin that reads, lists and writes what it is asked to. */
  const FILE_PLUGIN = `
      import { fs } from "cordon:host";
      export const read = (path) => fs.readTextFile(path);
      export const list = (path) => fs.readDir(path).then((entries) => entries.length);
      export const write = ({ path, text }) => fs.writeTextFile(path, text);`;

  /** The error name of a failed call, after checking its code. */
  function failureOf(result, code) {
    assert.equal(codeOf(result), code, JSON.stringify(result));
    return result.error.name;
  }

  test("createVmSandbox() reads only regular files, and at most maxFileReadBytes + 1 bytes of one", async () => {
    const root = await realpath(await mkdtemp(join(tmpdir(), "cordon-read-")));
    try {
      await writeFile(`${root}/at-bound.txt`, "é".repeat(2047) + "x");
      await writeFile(`${root}/over.txt`, "x".repeat(4096));
      makeFifo(`${root}/pipe`);
      await withSandbox(FILE_PLUGIN, {
        // /proc/self/pagemap is a regular file that reports 0 bytes and
        // holds 8 for each page of the address space: it has no end within
        // reach. Its reads must be whole 8-byte entries, so the bound + 1
        // is 4096.
        policy: { fs: { read: [root, "/proc/self"] } },
        limits: { maxFileReadBytes: 4095 },
      }, async (sandbox) => {
        assert.equal(
          valueOf(await sandbox.invoke("read", `${root}/at-bound.txt`)),
          "é".repeat(2047) + "x",
        );
        for (const path of [`${root}/over.txt`, "/proc/self/pagemap"]) {
          const over = await sandbox.invoke("read", path);
          assert.equal(failureOf(over, "PROXY_LIMIT_EXCEEDED"), "RangeError");
          assert.match(over.error.message, /larger than 4095 bytes/, path);
        }
        const pipe = await sandbox.invoke("read", `${root}/pipe`);
        assert.equal(failureOf(pipe, "PROXY_CALL_FAILED"), "NotAFile");
        const folder = await sandbox.invoke("read", root);
        assert.equal(failureOf(folder, "PROXY_CALL_FAILED"), "IsADirectory");
        assert.equal(valueOf(await sandbox.invoke("list", root)), 3);
      });
    } finally {
      await rm(root, { recursive: true });
    }
  });

  test("createVmSandbox() answers a read or write of a name longer than the file system allows with what is wrong, and writes nothing", async () => {
    const root = await realpath(await mkdtemp(join(tmpdir(), "cordon-long-")));
    try {
      await withSandbox(
        FILE_PLUGIN,
        { policy: { fs: { read: [root], write: [root] } } },
        async (sandbox) => {
          // 255 bytes is the most a name may hold on the common file systems.
          const fits = `${root}/${"a".repeat(255)}`;
          await sandbox.invoke("write", { path: fits, text: "x" });
          assert.equal(valueOf(await sandbox.invoke("read", fits)), "x");
          const long = `${root}/${"b".repeat(256)}`;
          for (
            const answer of [
              await sandbox.invoke("write", { path: long, text: "x" }),
              await sandbox.invoke("read", long),
            ]
          ) {
            assert.equal(failureOf(answer, "PROXY_CALL_FAILED"), "Error");
            assert.match(
              answer.error.message,
              /: a name in the path is longer than the file system allows; use a shorter name$/,
            );
          }
          assert.deepEqual(await readdir(root), ["a".repeat(255)]);
        },
      );
    } finally {
      await rm(root, { recursive: true });
    }
  });

  test("createVmSandbox() counts writes through a custom fs proxy against maxWriteBytes, and never calls it for a refused one", async () => {
    const written = [];
    const fsProxy = {
      readTextFile: () => Promise.resolve(""),
      writeTextFile: (path, text) => {
        written.push(`${path}:${text.length}`);
        return path.endsWith("fails")
          ? Promise.reject(new Error("no room"))
          : Promise.resolve();
      },
      readDir: () => Promise.resolve([]),
    };
    await withSandbox(FILE_PLUGIN, {
      policy: { fs: { write: ["/proxied"] } },
      proxies: { fs: fsProxy },
      limits: { maxWriteBytes: 3 * 4096 },
    }, async (sandbox) => {
      const write = (path, text) => sandbox.invoke("write", { path, text });
      valueOf(await write("/proxied/a", "x".repeat(5000)));
      // The write that failed gives its block back.
      assert.equal(
        codeOf(await write("/proxied/fails", "")),
        "PROXY_CALL_FAILED",
      );
      const over = await write("/proxied/b", "x".repeat(8000));
      assert.equal(failureOf(over, "PROXY_LIMIT_EXCEEDED"), "RangeError");
      assert.match(
        over.error.message,
        /more than 12288 bytes.*limits\.maxWriteBytes/,
      );
      valueOf(await write("/proxied/b", "x".repeat(3000)));
      valueOf(await write("/proxied/a", ""));
      valueOf(await write("/proxied/c", ""));
      assert.deepEqual(written, [
        "/proxied/a:5000",
        "/proxied/fails:0",
        "/proxied/b:3000",
        "/proxied/a:0",
        "/proxied/c:0",
      ]);
    });
  });

  test("createVmSandbox() writes only regular files: a FIFO is NotAFile and leaves the host's file calls working", async () => {
    const root = await realpath(await mkdtemp(join(tmpdir(), "cordon-write-")));
    try {
      await mkdir(`${root}/out`);
      await mkdir(`${root}/out/folder`);
      await writeFile(`${root}/secret.txt`, "secret");
      await symlink(`${root}/secret.txt`, `${root}/out/link.txt`);
      await symlink(`${root}/new.txt`, `${root}/out/dangling.txt`);
      makeFifo(`${root}/out/pipe`);
      await withSandbox(FILE_PLUGIN, {
        policy: { fs: { write: [`${root}/out`] } },
        limits: { proxyTimeoutMs: 2000 },
      }, async (sandbox) => {
        const write = (name, text = "x") =>
          sandbox.invoke("write", { path: `${root}/out/${name}`, text });
        // More than the threads of Node's file pool, which a FIFO with no
        // reader would hold for good.
        for (let i = 0; i < 6; i++) {
          assert.equal(
            failureOf(await write("pipe"), "PROXY_CALL_FAILED"),
            "NotAFile",
          );
        }
        valueOf(await write("a.txt", "a longer text"));
        valueOf(await write("a.txt", "short"));
        assert.equal(await readFile(`${root}/out/a.txt`, "utf8"), "short");
        assert.equal(
          failureOf(await write("folder"), "PROXY_CALL_FAILED"),
          "IsADirectory",
        );
        // The write folder itself is a folder too, not a path that leads
        // out of it through a link.
        for (const name of ["", "."]) {
          assert.equal(
            failureOf(await write(name), "PROXY_CALL_FAILED"),
            "IsADirectory",
            `out/${name}`,
          );
        }
        for (const name of ["link.txt", "dangling.txt"]) {
          assert.equal(codeOf(await write(name)), "PERMISSION_DENIED", name);
        }
        assert.equal(await readFile(`${root}/secret.txt`, "utf8"), "secret");
        await assert.rejects(readFile(`${root}/new.txt`), { code: "ENOENT" });
      });
    } finally {
      await rm(root, { recursive: true });
    }
  });

  test("createVmSandbox() denies a missing path behind a link out of its folder, so it cannot tell what exists outside", async () => {
    const root = await realpath(await mkdtemp(join(tmpdir(), "cordon-links-")));
    try {
      for (const folder of ["data", "data/sub", "out", "outside"]) {
        await mkdir(`${root}/${folder}`);
      }
      await writeFile(`${root}/data/a.txt`, "alpha");
      await writeFile(`${root}/outside/there.txt`, "secret");
      await symlink(`${root}/outside`, `${root}/data/away`);
      await symlink(`${root}/outside/none.txt`, `${root}/data/dangling.txt`);
      await symlink(`${root}/data/sub`, `${root}/data/inner`);
      await symlink(`${root}/outside`, `${root}/out/away`);
      await withSandbox(FILE_PLUGIN, {
        policy: { fs: { read: [`${root}/data`], write: [`${root}/out`] } },
      }, async (sandbox) => {
        const denied = [
          ["read", "data/away/there.txt"],
          ["read", "data/away/none.txt"],
          ["read", "data/away/none/deeper.txt"],
          ["read", "data/a.txt/../away/none.txt"],
          ["read", "data/dangling.txt"],
          ["list", "data/away/none"],
          ["write", "out/away/new.txt"],
          ["write", "out/away/none/new.txt"],
        ];
        for (const [op, path] of denied) {
          const result = await sandbox.invoke(
            op,
            op === "write"
              ? { path: `${root}/${path}`, text: "x" }
              : `${root}/${path}`,
          );
          assert.equal(codeOf(result), "PERMISSION_DENIED", `${op} ${path}`);
        }
        // Inside the folders, what is missing is reported missing.
        const missing = [
          ["read", "data/inner/none.txt"],
          ["read", "data/none/deeper.txt"],
          ["list", "data/none"],
          ["write", "out/none/new.txt"],
        ];
        for (const [op, path] of missing) {
          const result = await sandbox.invoke(
            op,
            op === "write"
              ? { path: `${root}/${path}`, text: "x" }
              : `${root}/${path}`,
          );
          assert.equal(
            failureOf(result, "PROXY_CALL_FAILED"),
            "NotFound",
            path,
          );
        }
        // A plugin has no call that makes a folder, so a write into a
        // missing one says whose job the folder is.
        const unmade = await sandbox.invoke("write", {
          path: `${root}/out/none/new.txt`,
          text: "x",
        });
        assert.match(
          unmade.ok ? "" : unmade.error.message,
          /folder does not exist; a plugin cannot make folders/,
        );
        assert.equal(
          valueOf(await sandbox.invoke("list", `${root}/data/inner`)),
          0,
        );
        assert.deepEqual(await readdir(`${root}/outside`), ["there.txt"]);
      });
    } finally {
      await rm(root, { recursive: true });
    }
  });

  test("createVmSandbox() serves a folder of its policy that is made behind a link after the first file call", async () => {
    const root = await realpath(await mkdtemp(join(tmpdir(), "cordon-later-")));
    try {
      await mkdir(`${root}/real`);
      // The policy names its folders through a link, as /var/run names /run.
      await symlink(`${root}/real`, `${root}/link`);
      await withSandbox(FILE_PLUGIN, {
        policy: {
          fs: { read: [`${root}/link/data`], write: [`${root}/link/out`] },
        },
      }, async (sandbox) => {
        // Not there yet: missing, not a way out.
        assert.equal(
          failureOf(
            await sandbox.invoke("list", `${root}/link/data`),
            "PROXY_CALL_FAILED",
          ),
          "NotFound",
        );
        assert.equal(
          failureOf(
            await sandbox.invoke("write", {
              path: `${root}/link/out/new.txt`,
              text: "x",
            }),
            "PROXY_CALL_FAILED",
          ),
          "NotFound",
        );
        await mkdir(`${root}/real/data`);
        await mkdir(`${root}/real/out`);
        await writeFile(`${root}/real/data/a.txt`, "alpha");
        assert.equal(
          valueOf(await sandbox.invoke("read", `${root}/link/data/a.txt`)),
          "alpha",
        );
        assert.equal(
          valueOf(
            await sandbox.invoke("write", {
              path: `${root}/link/out/new.txt`,
              text: "beta",
            }),
          ),
          null,
        );
        assert.equal(
          await readFile(`${root}/real/out/new.txt`, "utf8"),
          "beta",
        );
      });
    } finally {
      await rm(root, { recursive: true });
    }
  });

  test("createVmSandbox() reads, lists and writes only inside its folders while a folder on the path is swapped for a link out of them", async () => {
    const root = await realpath(await mkdtemp(join(tmpdir(), "cordon-swap-")));
    try {
      // data/box is a folder at one moment and a link to outside/ at the
      // next: the host that resolved data/box/... inside may open it outside.
      for (const folder of ["data", "data/box", "outside"]) {
        await mkdir(`${root}/${folder}`);
      }
      await writeFile(`${root}/data/box/f.txt`, "inside");
      await writeFile(`${root}/outside/f.txt`, "secret");
      await writeFile(`${root}/outside/outside.txt`, "");
      await symlink(`${root}/outside`, `${root}/data/link`);
      let swapping = true;
      const swaps = (async () => {
        const [box, link, aside] = ["box", "link", "aside"].map((name) =>
          `${root}/data/${name}`
        );
        while (swapping) {
          await rename(box, aside);
          await rename(link, box);
          await rename(box, link);
          await rename(aside, box);
        }
      })();
      const seen = new Set();
      try {
        await withSandbox(SWAPPED_PLUGIN, {
          policy: {
            fs: { read: [`${root}/data`], write: [`${root}/data`] },
          },
          limits: { timeoutMs: 60_000 },
        }, async (sandbox) => {
          const outcomes = valueOf(
            await sandbox.invoke("probe", { root, rounds: 400 }),
          );
          for (const outcome of outcomes) seen.add(outcome);
        });
      } finally {
        swapping = false;
        await swaps;
      }
      assert.ok(!seen.has("secret"), [...seen].join(", "));
      assert.ok(!seen.has("listed outside"), [...seen].join(", "));
      assert.deepEqual((await readdir(`${root}/outside`)).sort(), [
        "f.txt",
        "outside.txt",
      ]);
      assert.equal(await readFile(`${root}/outside/f.txt`, "utf8"), "secret");
    } finally {
      await rm(root, { recursive: true });
    }
  });

  test("createVmSandbox() allows a call only when the checker answers true or { allowed: true }", async () => {
    const answers = {
      "true": () => true,
      "allowed": () => ({ allowed: true }),
      "async-allowed": () => Promise.resolve({ allowed: true }),
      "false": () => false,
      "refusal": () => ({
        allowed: false,
        message: "Cannot use it: the host says no",
      }),
      "undefined": () => undefined,
      "null": () => null,
      "yes": () => "yes",
      "one": () => 1,
      "allowed-yes": () => ({ allowed: "yes" }),
      "allowed-one": () => ({ allowed: 1 }),
      "async-allowed-yes": () => Promise.resolve({ allowed: "yes" }),
      "empty": () => ({}),
      "throws": () => {
        throw new Error("the checker broke");
      },
    };
    const ran = [];
    const names = Object.keys(answers);
    await withSandbox(
      `import { capabilities } from "cordon:host";
      export const call = (name) => capabilities.call(name);`,
      {
        policy: { capabilities: names },
        checker: (request) => answers[request.name](),
        proxies: {
          capabilities: Object.fromEntries(
            names.map((name) => [name, () => {
              ran.push(name);
              return "ran";
            }]),
          ),
        },
      },
      async (sandbox) => {
        const messages = {};
        for (const name of names) {
          const result = await sandbox.invoke("call", name);
          messages[name] = result.ok
            ? result.value
            : `${result.error.code}: ${result.error.message}`;
        }
        assert.deepEqual(ran, ["true", "allowed", "async-allowed"]);
        assert.match(
          messages.false,
          /^PERMISSION_DENIED: .*the host's permission checker refused it/,
        );
        assert.match(
          messages.refusal,
          /^PERMISSION_DENIED: .*Cannot use it: the host says no/,
        );
        for (const name of names.slice(5)) {
          assert.match(
            messages[name],
            /^PERMISSION_DENIED: .*the host's permission checker answered neither true nor \{ allowed: true \}/,
            name,
          );
        }
        assert.equal(sandbox.instruments.denials, names.length - 3);
      },
    );
  });

  test("createVmSandbox() measures payloads, answers, host call arguments and capability results in UTF-8 bytes", async () => {
    // "✓" is one UTF-16 code unit and three UTF-8 bytes; "é" is two bytes.
    await withSandbox(
      `import { capabilities } from "cordon:host";
      export const size = (text) => text.length;
      export const answer = ({ char, count }) => char.repeat(count);
      export const send = ({ char, count }) => capabilities.call("size", char.repeat(count));
      export const receive = (name) => capabilities.call(name).then((text) => text.length);`,
      {
        policy: { capabilities: ["size", "narrow", "wide"] },
        proxies: {
          capabilities: {
            size: (text) => text.length,
            narrow: () => "é".repeat(400),
            wide: () => "✓".repeat(400),
          },
        },
        limits: { maxPayloadBytes: 1024, maxCapabilityResultBytes: 1000 },
      },
      async (sandbox) => {
        assert.equal(
          valueOf(await sandbox.invoke("size", "é".repeat(500))),
          500,
        );
        await assert.rejects(
          sandbox.invoke("size", "✓".repeat(400)),
          (error) =>
            error instanceof RangeError && /1202 bytes/.test(error.message),
        );
        const narrow = { char: "é", count: 500 };
        const wide = { char: "✓", count: 400 };
        assert.equal(
          valueOf(await sandbox.invoke("answer", narrow)).length,
          500,
        );
        assert.equal(
          codeOf(await sandbox.invoke("answer", wide)),
          "RESULT_NOT_SERIALIZABLE",
        );
        assert.equal(
          valueOf(await sandbox.invoke("send", { char: "é", count: 480 })),
          480,
        );
        assert.equal(
          codeOf(await sandbox.invoke("send", wide)),
          "PROXY_LIMIT_EXCEEDED",
        );
        assert.equal(valueOf(await sandbox.invoke("receive", "narrow")), 400);
        assert.equal(
          codeOf(await sandbox.invoke("receive", "wide")),
          "PROXY_LIMIT_EXCEEDED",
        );
      },
    );
  });

  test("createVmSandbox() reads a fetched body as text, JSON and bytes as the host reads it, each read a fresh copy", async () => {
    const json = JSON.stringify({ name: "h\u00e9 \u{1f389}", list: [1, 2] });
    // Valid UTF-8 JSON, then bytes that are not UTF-8.
    const bodies = {
      "/json": new TextEncoder().encode(json),
      "/binary": Uint8Array.from([0x68, 0xff, 0xc3, 0x28, 0xed, 0xa0, 0x80, 0]),
    };
    const server = createServer((request, response) => {
      response.end(bodies[request.url]);
    });
    await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address();
    try {
      await withSandbox(
        `import { fetch } from "cordon:host";
        export async function read(url) {
          const response = await fetch(url);
          const bytes = await response.bytes();
          bytes[0] = 0;
          const again = await response.bytes();
          let json;
          try { json = await response.json(); } catch (e) { json = e.name; }
          return { text: await response.text(), json, bytes: Array.from(again), copies: bytes !== again };
        }`,
        { policy: { fetch: [`127.0.0.1:${port}`] } },
        async (sandbox) => {
          for (const [path, body] of Object.entries(bodies)) {
            const text = new TextDecoder().decode(body);
            let parsed;
            try {
              parsed = JSON.parse(text);
            } catch (error) {
              parsed = error.name;
            }
            assert.deepEqual(
              valueOf(
                await sandbox.invoke("read", `http://127.0.0.1:${port}${path}`),
              ),
              { text, json: parsed, bytes: Array.from(body), copies: true },
              path,
            );
          }
        },
      );
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  test("createVmSandbox() keeps hop-by-hop headers off a plugin's fetch, both ways", async () => {
    const received = [];
    const server = createServer((request, response) => {
      received.push(request.headers);
      response.writeHead(200, {
        "x-answer": "1",
        "keep-alive": "timeout=5",
        "proxy-authenticate": "Basic",
        "x-up-option": "1",
        connection: "keep-alive, x-up-option",
      });
      response.end("ok");
    });
    await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address();
    try {
      await withSandbox(
        `import { fetch } from "cordon:host";
        export async function send(url) {
          const response = await fetch(url, {
            method: "POST",
            body: "ping",
            headers: [
              ["Connection", "upgrade, x-named"], ["Upgrade", "h2c"], ["Keep-Alive", "timeout=5"],
              ["TE", "trailers"], ["Transfer-Encoding", "chunked"], ["Trailer", "x-t"],
              ["Proxy-Authorization", "Basic eDp5"], ["Proxy-Connection", "keep-alive"],
              ["X-Named", "1"], ["X-Kept", "1"],
            ],
          });
          return { status: response.status, text: await response.text(), headers: response.headers.map(([name]) => name) };
        }`,
        { policy: { fetch: [`127.0.0.1:${port}`] } },
        async (sandbox) => {
          const answer = valueOf(
            await sandbox.invoke("send", `http://127.0.0.1:${port}/`),
          );
          assert.deepEqual([answer.status, answer.text], [200, "ok"]);
          assert.equal(received.length, 1);
          const sent = received[0];
          assert.equal(sent["x-kept"], "1");
          for (
            const name of [
              "upgrade",
              "keep-alive",
              "te",
              "transfer-encoding",
              "trailer",
              "proxy-authorization",
              "proxy-connection",
              "x-named",
            ]
          ) assert.equal(sent[name], undefined, name);
          // The runtime's own client may ask to keep its connection.
          assert.match(sent.connection ?? "keep-alive", /^keep-alive$/i);
          assert.ok(answer.headers.includes("x-answer"));
          for (
            const name of [
              "connection",
              "keep-alive",
              "proxy-authenticate",
              "x-up-option",
              "transfer-encoding",
            ]
          ) assert.ok(!answer.headers.includes(name), name);
        },
      );
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  test("createVmSandbox() sends a plugin's fetch with the headers the host's client owns dropped, the same on every runtime", async () => {
    const received = [];
    const receivedNames = [];
    const server = createServer((request, response) => {
      request.resume();
      request.on("end", () => {
        received.push(request.headers);
        receivedNames.push(
          request.rawHeaders.filter((_, index) => index % 2 === 0),
        );
        // Compressed whatever was asked, as some servers do: the runtime
        // decodes it only when it negotiated the coding itself.
        response.writeHead(299, "Custom Phrase", {
          "content-type": "text/plain",
          "content-encoding": "gzip",
        });
        response.end(gzipSync("decoded"));
      });
    });
    await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address();
    const kept = [
      ["cookie", "a=1"],
      ["origin", "http://origin.test"],
      ["referer", "http://origin.test/page"],
      ["via", "1.1 relay"],
      ["date", "Tue, 01 Jan 2030 00:00:00 GMT"],
      ["dnt", "1"],
      ["accept-charset", "utf-8"],
      ["access-control-request-method", "PUT"],
      ["user-agent", "plugin/1"],
      ["x-kept", "1"],
    ];
    try {
      await withSandbox(
        `import { fetch } from "cordon:host";
        export async function send({ url, kept }) {
          const response = await fetch(url, {
            method: "POST",
            body: "ping",
            headers: [
              ["Host", "elsewhere.test"], ["Content-Length", "999"],
              ["Expect", "100-continue"], ["Accept-Encoding", "identity"],
              ["Sec-Fetch-Mode", "navigate"], ["Sec-Custom", "1"],
              ["__proto__", "p"], ...kept,
            ],
          });
          return { status: response.status, statusText: response.statusText, text: await response.text() };
        }`,
        { policy: { fetch: [`127.0.0.1:${port}`] } },
        async (sandbox) => {
          const answer = valueOf(
            await sandbox.invoke("send", {
              url: `http://127.0.0.1:${port}/`,
              kept,
            }),
          );
          // The standard phrase of the status, never the server's own.
          assert.deepEqual(answer, {
            status: 299,
            statusText: "",
            text: "decoded",
          });
          assert.equal(received.length, 1);
          const sent = received[0];
          assert.equal(sent.host, `127.0.0.1:${port}`);
          assert.equal(sent["content-length"], "4");
          assert.equal(sent.expect, undefined);
          assert.notEqual(sent["accept-encoding"], "identity");
          assert.equal(sent["sec-custom"], undefined);
          // Node's client drops this name without a word, Deno's sends it.
          assert.ok(!receivedNames[0].includes("__proto__"), receivedNames[0]);
          // Node's client sends its own mode, Deno's none.
          assert.match(sent["sec-fetch-mode"] ?? "cors", /^cors$/);
          for (const [name, value] of kept) assert.equal(sent[name], value);
        },
      );
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  test("createVmSandbox() fails a plugin's fetch whose answer one runtime's client would refuse, on every runtime", async () => {
    const answers = {
      "/switching":
        "HTTP/1.1 101 Switching Protocols\r\nupgrade: x\r\nconnection: upgrade\r\n\r\n",
      "/two-lengths":
        "HTTP/1.1 200 OK\r\ncontent-length: 2\r\ncontent-length: 2\r\n\r\nok",
      "/bad-name": "HTTP/1.1 200 OK\r\nx bad: 1\r\ncontent-length: 2\r\n\r\nok",
      "/fine": "HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok",
    };
    const server = net.createServer((socket) => {
      let head = "";
      socket.on("error", () => {});
      socket.on("data", (chunk) => {
        head += chunk;
        if (!head.includes("\r\n\r\n")) return;
        socket.end(answers[head.split(" ")[1]]);
      });
    });
    await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address();
    try {
      await withSandbox(
        `import { fetch } from "cordon:host";
        export function read(url) {
          return fetch(url).then((r) => r.text(), (e) => e.code + " " + e.name);
        }`,
        { policy: { fetch: [`127.0.0.1:${port}`] } },
        async (sandbox) => {
          for (const path of Object.keys(answers)) {
            assert.equal(
              valueOf(
                await sandbox.invoke("read", `http://127.0.0.1:${port}${path}`),
              ),
              path === "/fine" ? "ok" : "PROXY_CALL_FAILED NetworkError",
              path,
            );
          }
        },
      );
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  test("createVmSandbox() refuses a plugin's fetch that no web Request can carry with the same words on every runtime", async () => {
    await withSandbox(
      `import { fetch } from "cordon:host";
      export function send({ method, headers }) {
        return fetch("http://127.0.0.1:9/", { method, headers }).then(
          () => "sent",
          (e) => [e.code, e.name, e.message],
        );
      }`,
      { policy: { fetch: ["127.0.0.1:9"] } },
      async (sandbox) => {
        const refused = (why) => [
          "PROXY_CALL_FAILED",
          "TypeError",
          `Cannot build the request to "http://127.0.0.1:9/": ${why}`,
        ];
        const method = refused("its method is not one a web Request carries");
        const header = refused(
          "a header name is not a token or a value holds CR, LF or NUL",
        );
        for (
          const [args, expected] of [
            [{ method: "TRACE" }, method],
            [{ method: "GE T" }, method],
            [{ headers: [["a b", "1"]] }, header],
            [{ headers: [["x", "a\nb"]] }, header],
          ]
        ) {
          assert.deepEqual(
            valueOf(await sandbox.invoke("send", args)),
            expected,
            JSON.stringify(args),
          );
        }
      },
    );
  });

  test("createVmSandbox() forwards console lines of plugin code to onLog", async () => {
    const lines = [];
    await withSandbox(
      `
    import { console as hostConsole } from "cordon:host";
    export function talk() { console.log("n =", 1, { x: true }); hostConsole.warn("careful"); console.error("a\\u0000b", "\\uD800"); return null; }`,
      { onLog: (entry) => lines.push(entry) },
      async (sandbox) => {
        valueOf(await sandbox.invoke("talk"));
        // The lines travel beside the answer; wait for all three.
        await until(() => lines.length >= 3, "three console lines", 30_000);
        assert.deepEqual(lines, [
          { pluginId: "test", level: "log", message: 'n = 1 {"x":true}' },
          { pluginId: "test", level: "warn", message: "careful" },
          // Whole, with what follows a NUL, and escaped for the operator.
          { pluginId: "test", level: "error", message: "a\\x00b \\ud800" },
        ]);
      },
    );
  });

  test("createVmSandbox() names the console's methods by their level, as every tier does", async () => {
    await withSandbox(
      `export function names() { return Object.keys(console).map((level) => console[level].name); }`,
      {},
      async (sandbox) => {
        assert.deepEqual(valueOf(await sandbox.invoke("names")), [
          "log",
          "info",
          "warn",
          "error",
          "debug",
        ]);
      },
    );
  });

  test("createVmSandbox() throws what a console argument's getter or Proxy trap throws into the plugin, as every tier does, and logs nothing for that call", async () => {
    const lines = [];
    await withSandbox(
      `export function talk() {
      const args = [
        { get message() { throw new Error("message getter"); } },
        { message: "m", get name() { throw new Error("name getter"); } },
        new Proxy({}, { get() { throw new Error("get trap"); } }),
      ];
      const caught = [];
      for (const arg of args) {
        try { console.warn("before", arg); caught.push("logged"); } catch (error) { caught.push(error.message); }
      }
      console.log("after");
      return caught;
    }`,
      { onLog: (entry) => lines.push(entry.message) },
      async (sandbox) => {
        assert.deepEqual(valueOf(await sandbox.invoke("talk")), [
          "message getter",
          "name getter",
          "get trap",
        ]);
        await until(() => lines.length >= 1, "the console line", 120_000);
        assert.deepEqual(lines, ["after"]);
      },
    );
  });

  for (const isolation of isolations) {
    test(`createVmSandbox() with isolation ${isolation} delivers the console lines logged before a failure (a limit, a throw, an answer that is not data) to onLog first, and names the failure as a run does`, async (t) => {
      await checkLastWords(
        (options) =>
          sandboxOf(options.pluginModule.source, { ...options, isolation }),
        t,
      );
    });
  }

  for (const isolation of isolations) {
    test(`createVmSandbox() with isolation ${isolation} gives a plugin's errors a stack of a few lines, naming the realm's frames briefly`, async () => {
      await withSandbox(
        `export function caught() { try { null.x; } catch (e) { return e.stack; } }
export async function later() { await null; return new Error("late").stack; }`,
        { isolation },
        async (sandbox) => {
          for (const name of ["caught", "later"]) {
            const result = await sandbox.invoke(name);
            assert.equal(result.ok, true, JSON.stringify(result));
            // Each frame of the realm's program named it whole, in base64,
            // where Node runs it from a data: URL: over 1 MB a stack.
            assert.ok(
              result.value.length < 4096,
              `${name}: a stack of ${result.value.length} characters: ${
                result.value.slice(0, 400)
              }`,
            );
            assert.match(result.value, /test\.js:\d+:\d+/);
          }
        },
      );
    });
  }

  for (const isolation of isolations) {
    test(`createVmSandbox() with isolation ${isolation} hands a flood of console lines to a slow onLog in turns, with the host's timers running between them`, async () => {
      const lines = [];
      // The most lines onLog got with no turn of a host timer between them.
      let sinceTick = 0;
      let longestRun = 0;
      const ticker = setInterval(() => sinceTick = 0, 1);
      const slowSink = (entry) => {
        lines.push(entry.message);
        longestRun = Math.max(longestRun, ++sinceTick);
        const until = performance.now() + 0.2;
        while (performance.now() < until) {
          // A sink that writes each line synchronously somewhere slow.
        }
      };
      try {
        await withSandbox(
          `export function flood() { for (let i = 0; ; i++) console.log(String(i)); }`,
          { isolation, limits: { timeoutMs: 500 }, onLog: slowSink },
          async (sandbox) => {
            assert.equal(codeOf(await sandbox.invoke("flood")), "TIMEOUT");
          },
        );
      } finally {
        clearInterval(ticker);
      }
      // In order, none left out.
      assert.ok(lines.length > 0);
      assert.deepEqual(lines, lines.map((_, i) => String(i)));
      assert.ok(
        longestRun < 1000,
        `${longestRun} lines went to onLog with no host timer between them`,
      );
    });
  }

  for (const isolation of isolations) {
    test(`createVmSandbox() with isolation ${isolation} answers a plugin that logs more in one call than its memory limit holds, every line reaching onLog in order`, async () => {
      // 48 MiB of lines under a 32 MiB cap: a realm that kept the lines the
      // host had not read yet in its own memory would run out of it.
      const count = 48 * 1024;
      let received = 0;
      let inOrder = true;
      await withSandbox(
        `export function flood() {
          const filler = "x".repeat(1000);
          for (let i = 0; i < ${count}; i++) console.log(i, filler);
          return "answered";
        }`,
        {
          isolation,
          limits: { timeoutMs: 60_000, memoryLimitBytes: 32 * 1024 * 1024 },
          onLog: (entry) => {
            if (!entry.message.startsWith(`${received} x`)) inOrder = false;
            received++;
          },
        },
        async (sandbox) => {
          assert.equal(valueOf(await sandbox.invoke("flood")), "answered");
        },
      );
      assert.equal(received, count);
      assert.ok(inOrder, "the lines reached onLog out of order");
    });
  }

  test("createVmSandbox() serves concurrent calls, large payloads, proxy calls and promise jobs on both isolations", async (t) => {
    for (const isolation of isolations) {
      await t.step(isolation, async () => {
        const lines = [];
        await withSandbox(
          BUSY_PLUGIN,
          echoingOptions(isolation, lines),
          async (sandbox) => {
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
                length: texts[n].length,
                tail: texts[n].slice(-4),
              })
            );
            await until(() => lines.length >= 48, "48 console lines", 30_000);
            assert.equal(lines.length, 48);
            for (let n = 0; n < 24; n++) {
              assert.ok(
                lines.indexOf(`start ${n}`) < lines.indexOf(`end ${n}`),
              );
            }
            assert.equal(sandbox.instruments.isolation, isolation);
            assert.equal(sandbox.instruments.restarts, 0);
          },
        );
      });
    }
  });

  test("createVmSandbox() answers calls alone and together whatever the answer's size and timing, on both isolations", async (t) => {
    for (const isolation of isolations) {
      await t.step(isolation, async () => {
        const lines = [];
        await withSandbox(
          ANSWER_PLUGIN,
          echoingOptions(isolation, lines),
          async (sandbox) => {
            let count = 0;
            const answer = async (call) => {
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
            await until(
              () => lines.length >= count,
              "every console line",
              120_000,
            );
            assert.deepEqual(
              [...lines].sort(),
              Array.from({ length: count }, (_, n) => `answering ${n}`).sort(),
            );
            assert.equal(sandbox.instruments.restarts, 0);
          },
        );
      });
    }
  });

  test("createVmSandbox() loads a module whose top level awaits the host and a refused import()", async (t) => {
    for (const isolation of isolations) {
      await t.step(isolation, async () => {
        await withSandbox(
          AWAITING_PLUGIN,
          {
            isolation,
            policy: { capabilities: ["config"] },
            proxies: { capabilities: { config: () => ({ greeting: "hi" }) } },
          },
          async (sandbox) => {
            assert.deepEqual(valueOf(await sandbox.invoke("read")), {
              config: { greeting: "hi" },
              refused: "IMPORT_DYNAMIC",
              again: "IMPORT_DYNAMIC",
            });
          },
        );
      });
    }
  });

  test("createVmSandbox() runs start() once per realm and stop() when stopped", async () => {
    const events = [];
    await withSandbox(
      ...lifecycleRecorder(events),
      async (sandbox) => {
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
      },
    );
  });

  test("createVmSandbox() runs start() and stop() in the order they are called, so the last call decides", async () => {
    const events = [];
    await withSandbox(
      ...lifecycleRecorder(events),
      async (sandbox) => {
        assert.equal((await sandbox.start()).ok, true);
        // A start while a stop is under way starts a realm after it.
        const restarted = await Promise.all([sandbox.stop(), sandbox.start()]);
        assert.equal(restarted[1].ok, true);
        assert.equal(sandbox.instruments.state, "running");
        assert.deepEqual(events, ["start", "stop", "start"]);
        // A stop after that start is not merged into the stop before it.
        const stopping = sandbox.stop();
        const starting = sandbox.start();
        await Promise.all([stopping, starting, sandbox.stop()]);
        assert.equal(sandbox.instruments.state, "stopped");
        assert.deepEqual(events, [
          "start",
          "stop",
          "start",
          "stop",
          "start",
          "stop",
        ]);
      },
    );
  });

  test("createVmSandbox() can be disposed twice and refuses use afterwards", async () => {
    const sandbox = sandboxOf("export const f = () => 1;");
    assert.equal(valueOf(await sandbox.invoke("f")), 1);
    await sandbox.dispose();
    await sandbox.dispose();
    assert.equal(sandbox.instruments.state, "disposed");
    await assert.rejects(
      sandbox.invoke("f"),
      (error) => isCordonError(error) && error.code === "SANDBOX_DISPOSED",
    );
    await assert.rejects(
      sandbox.start(),
      (error) => isCordonError(error) && error.code === "SANDBOX_DISPOSED",
    );
  });

  test("createVmSandbox() starts no realm for a call made while dispose() is under way, and fails the call in flight with SANDBOX_DISPOSED", async () => {
    for (const before of ["nothing", "a call", "a timeout", "a stop"]) {
      const { onLog, entered } = whenEntered();
      const sandbox = sandboxOf(
        `export const f = () => 1; export const loop = () => { for (;;) {} }; export const hang = () => { ${ENTERED} return new Promise(() => {}); };`,
        // Room for the module's evaluation on two loaded cores (300 ms was
        // measured too short at a load of 12); only "a timeout" waits it out.
        { limits: { timeoutMs: 1500 }, onLog },
      );
      let inFlight = Promise.resolve(null);
      if (before === "a call") {
        assert.equal(valueOf(await sandbox.invoke("f")), 1);
        inFlight = sandbox.invoke("hang", null, { timeoutMs: 10_000 });
        // The call reaches the realm before the disposal.
        await entered;
      }
      if (before === "a timeout") {
        assert.equal(codeOf(await sandbox.invoke("loop")), "TIMEOUT");
      }
      // A call made during a stop waits for it, then starts a realm.
      if (before === "a stop") void sandbox.stop();
      const waiting = before === "a stop" ? sandbox.invoke("f") : null;
      const started = sandbox.instruments.realmsStarted;
      const disposing = sandbox.dispose();
      // One turn later: the stop has begun, the realm may be gone.
      await Promise.resolve();
      await assert.rejects(
        sandbox.invoke("f"),
        (error) => isCordonError(error) && error.code === "SANDBOX_DISPOSED",
        before,
      );
      await assert.rejects(
        sandbox.start(),
        (error) => isCordonError(error) && error.code === "SANDBOX_DISPOSED",
        before,
      );
      await disposing;
      if (waiting !== null) {
        assert.equal(codeOf(await waiting), "SANDBOX_DISPOSED");
      }
      const call = await inFlight;
      if (call !== null) assert.equal(codeOf(call), "SANDBOX_DISPOSED", before);
      assert.equal(sandbox.instruments.realmsStarted, started, before);
      assert.equal(sandbox.instruments.state, "disposed", before);
      assert.equal(sandbox.instruments.realmPid, null, before);
    }
  });

  test("createVmSandbox() fails a call in flight with SANDBOX_DISPOSED, or the stop's own failure, when the plugin's stop() hook cannot finish in time", async () => {
    // The hook waits behind a call that loops, or never settles itself:
    // its time running out ends the realm for the stop, which is no
    // timeout of the calls in flight nor of the realm.
    const cases = [
      ["a call loops", "export const stop = () => {};", "loop"],
      [
        "stop() never settles",
        "export const stop = () => new Promise(() => {});",
        "hang",
      ],
    ];
    for (const [what, hook, name] of cases) {
      for (const end of ["dispose", "stop"]) {
        const { onLog, entered } = whenEntered();
        const sandbox = sandboxOf(
          `${hook} export const loop = () => { ${ENTERED} for (;;) {} }; export const hang = () => { ${ENTERED} return new Promise(() => {}); };`,
          { limits: { timeoutMs: 10_000, stopTimeoutMs: 200 }, onLog },
        );
        assert.equal((await sandbox.start()).ok, true, what);
        const inFlight = sandbox.invoke(name);
        // The call reaches the realm before the end.
        await entered;
        await (end === "dispose" ? sandbox.dispose() : sandbox.stop());
        const call = await inFlight;
        const where = `${what}, ${end}`;
        if (end === "dispose") {
          assert.equal(codeOf(call), "SANDBOX_DISPOSED", where);
        } else {
          assert.equal(codeOf(call), "SANDBOX_CRASHED", where);
          assert.match(call.error.message, /was stopped while the call ran/);
        }
        assert.equal(sandbox.instruments.timeouts, 0, where);
        await sandbox.dispose();
      }
    }
  });

  test("createVmSandbox() ends a realm whose module left plugin code spinning after its load, before any call: the jobs of an import() it refused", async () => {
    // The jobs run on the realm's own turn, which may come before the load's
    // answer left: the console line takes it along, so the host has the
    // load answered while they spin. A timed-out start or a realm ended
    // after it, never a realm left spinning until a call comes.
    await withSandbox(
      `import("cordon:" + "nothing").catch(() => { console.log("on"); for (;;) {} });
      export const f = () => 1;`,
      { limits: { timeoutMs: 500 } },
      async (sandbox) => {
        await sandbox.start();
        await until(
          () => sandbox.instruments.timeouts > 0,
          "a timeout",
          120_000,
        );
        assert.equal(sandbox.instruments.timeouts, 1);
      },
    );
  });

  test("createVmSandbox() ends a realm still starting when it is disposed: the start answers SANDBOX_DISPOSED instead of running to its deadline", async () => {
    for (const when of ["at once", "looping"]) {
      const { onLog, entered } = whenEntered();
      const sandbox = sandboxOf(
        `${ENTERED}\nfor (;;) {}\nexport const x = 1;`,
        {
          limits: { timeoutMs: 2000 },
          onLog,
        },
      );
      const starting = sandbox.start();
      // At once, or with the module looping in its realm.
      if (when === "looping") await entered;
      await sandbox.dispose();
      assert.equal(codeOf(await starting), "SANDBOX_DISPOSED", when);
      assert.equal(sandbox.instruments.state, "disposed");
      assert.equal(sandbox.instruments.realmPid, null);
    }
  });

  test("createVmSandbox() rejects malformed options with TypeError and RangeError", () => {
    const pluginModule = { kind: "source", source: "", identifier: "x.js" };
    assert.throws(
      () => createVmSandbox({ pluginId: "", pluginModule }),
      TypeError,
    );
    assert.throws(
      () => createVmSandbox({ pluginId: "x", pluginModule: { kind: "file" } }),
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
}
