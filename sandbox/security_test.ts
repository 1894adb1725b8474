/**
 * Security tests of both tiers, on real runtimes. Each asserts the safe
 * outcome a platform relies on, not merely that something failed.
 */

import assert from "node:assert/strict";
import type { SandboxResult } from "../protocol/sandbox_result.ts";
import {
  childPids,
  isRunning,
  newChildren,
  ticksDuring,
} from "./_proc_stat_test.ts";
import {
  CLOCK_READINGS,
  MILLISECOND_PERFORMANCE_CLOCKS,
} from "./_clock_readings_test.ts";
import { createProcessSandbox } from "./process_sandbox.ts";
import type { Sandbox } from "./types.ts";
import { createWorkerSandbox } from "./worker_sandbox.ts";

interface TierFactory {
  name: "worker" | "process";
  create(options?: { maxLogBytes?: number; memoryLimitBytes?: number }):
    & Sandbox
    & AsyncDisposable;
}

const TIERS: TierFactory[] = [
  { name: "worker", create: (options) => createWorkerSandbox(options) },
  { name: "process", create: (options) => createProcessSandbox(options) },
];

function codeOf(result: SandboxResult): string {
  return result.ok ? "ok" : result.error.code;
}

function everything(result: SandboxResult): string {
  return JSON.stringify(result);
}

async function withSecretFile(
  body: (path: string, secret: string) => Promise<void>,
): Promise<void> {
  const dir = await Deno.makeTempDir();
  const secret = `secret-${crypto.randomUUID()}`;
  try {
    await Deno.writeTextFile(`${dir}/secret.txt`, secret);
    await body(`${dir}/secret.txt`, secret);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

const HOSTNAME = Deno.readTextFileSync("/etc/hostname").trim();

Deno.test("a static import of a host file is refused before any guest code runs", async (t) => {
  await withSecretFile(async (path, secret) => {
    const cases: [string, string][] = [
      [`import text from ${JSON.stringify(path)};`, "IMPORT_FILE"],
      [`import text from "file://${path}";`, "IMPORT_FILE"],
      ['import text from "../../../../../etc/hostname";', "IMPORT_PATH_ESCAPE"],
      [
        'import text from "../../../../../etc/hostname" with { type: "text" };',
        "IMPORT_ATTRIBUTES",
      ],
      [
        `import text from ${JSON.stringify(path)} with { type: "text" };`,
        "IMPORT_ATTRIBUTES",
      ],
      [
        `import bytes from "file://${path}" with { type: "bytes" };`,
        "IMPORT_ATTRIBUTES",
      ],
      [
        `import text from ${
          JSON.stringify(
            `data:text/javascript,import s from "file://${path}" with { type: "text" }; export default s;`,
          )
        };`,
        "IMPORT_DATA",
      ],
      [
        'import text from "blob:null/00000000-0000-0000-0000-000000000000";',
        "IMPORT_BLOB",
      ],
      ['import { readFileSync } from "node:fs";', "IMPORT_NODE_BUILTIN"],
      [`const m = await import("file://${path}");`, "IMPORT_DYNAMIC"],
    ];
    for (const tier of TIERS) {
      await t.step(tier.name, async () => {
        await using sandbox = tier.create();
        for (const [imports, code] of cases) {
          const result = await sandbox.run(
            `console.log("guest code ran");\n${imports}\nexport default typeof text === "undefined" ? null : text;`,
          );
          assert.equal(codeOf(result), code, imports);
          assert.deepEqual(result.logs, [], "no guest code ran");
          assert.ok(!everything(result).includes(secret));
          assert.ok(!everything(result).includes(HOSTNAME) || HOSTNAME === "");
        }
      });
    }
  });
});

Deno.test("an import the lexer misreads as text is refused before any guest code runs", async (t) => {
  const sources = [
    // After a spread, the lexer reads `import` as a property name.
    "const x = { ...import('node:fs') };\nexport default Object.keys(x).length;",
    "export default [...import('node:process')];",
    // After a function expression, it takes `/ ... /` for a regular expression.
    "export const sneaky = function () {} / import('node:fs') / 1;\nexport default 1;",
    // So it does after a property named like a keyword with a space before
    // it, or a name whose escape ends just before a keyword.
    "const o = { return: 1 };\nexport const a = o. return / import('node:fs') / 1;",
    "const aif = () => 1;\nexport const b = \\u{61}if(1) / import('node:fs') / 1;",
    // After a prefix `++`, it takes a regular expression for a division.
    "export const n = ++ /'/.lastIndex + import('node:fs'); // '",
  ];
  for (const tier of TIERS) {
    await t.step(tier.name, async () => {
      await using sandbox = tier.create();
      for (const source of sources) {
        const result = await sandbox.run(
          `console.log("guest code ran");\n${source}`,
        );
        assert.equal(codeOf(result), "IMPORT_DYNAMIC", source);
        assert.deepEqual(result.logs, [], "no guest code ran");
      }
      // Static imports the lexer misreads the same way: the parser finds
      // them.
      for (
        const source of [
          'export const a = function () {} / 1; import * as fs from "node:fs"; export const b = 1 / 2;\nexport default typeof fs;',
          'export const a = class {} / 1; export * from "node:fs"; export const b = 1 / 2;',
          "class A extends /'/.constructor {} import * as fs from \"node:fs\"; export default typeof fs; // '",
          'const o = { typeof: 1 };\nexport const a = o.\ntypeof / 1; import * as fs from "node:fs"; export const b = 1 / 2;\nexport default typeof fs;',
        ]
      ) {
        const result = await sandbox.run(source);
        assert.equal(codeOf(result), "IMPORT_NODE_BUILTIN", source);
      }
      // An `import.source()` call is syntax the parser does not know:
      // refused unread.
      for (
        const source of ["export const s = class {} / import.source('x') / 1;"]
      ) {
        const result = await sandbox.run(source);
        assert.equal(codeOf(result), "GUEST_SYNTAX_ERROR", source);
        assert.match(
          !result.ok ? result.error.message : "",
          /^Cannot check the guest source's imports: line 1 spells an import/,
        );
      }
      // `import.meta` and a member named import are not import calls.
      const allowed = await sandbox.run(
        "const o = { import: (n) => n + 1 };\nexport default [typeof import.meta, o.import(1), o\n.import(2)];",
      );
      assert.deepEqual(allowed.ok && allowed.value, ["object", 2, 3]);
      // Import text in a comment or a string after a misreadable `}` `/`
      // is not an import: the parser tells it apart.
      const commented = await sandbox.run(
        "export const f = function () {} / 2; // see import('x')\nexport default \"import y from 'z'\";",
      );
      assert.equal(commented.ok && commented.value, "import y from 'z'");
    });
  }
});

Deno.test("a source neither the scan nor its parser can read is only parsed: no module it imports runs", async (t) => {
  // The lexer takes `/ 1; ... 1 /` for a regular expression and gives up;
  // the parser reads the source and finds the import it hides.
  const lines = (importLine: string) =>
    [
      "export const a = function () {} / 1;",
      importLine,
      "export const b = 1 / 2;",
      "export default 1;",
    ].join("\n");
  const dependency =
    `"data:text/javascript,console.log('dependency ran');for(;;){}"`;
  const parsed = lines(`import ${dependency};`);
  // A deferred import is syntax the engine takes and the parser does not
  // know, so its imports were never checked.
  const unread = lines(`import defer * as ns from ${dependency};`);
  for (const tier of TIERS) {
    await t.step(tier.name, async () => {
      await using sandbox = tier.create();
      const found = await sandbox.run(parsed, { timeoutMs: 5000 });
      assert.equal(codeOf(found), "IMPORT_DATA");
      const result = await sandbox.run(unread, { timeoutMs: 5000 });
      assert.equal(codeOf(result), "GUEST_SYNTAX_ERROR");
      assert.deepEqual(
        [...found.logs, ...result.logs],
        [],
        "the imported module never ran",
      );
    });
  }
});

Deno.test("Deno.exit() and process.exit() cannot end the caller", async (t) => {
  for (const tier of TIERS) {
    await t.step(tier.name, async () => {
      await using sandbox = tier.create();
      for (
        const source of [
          "Deno.exit(3);",
          "process.exit(3);",
          "export default () => { globalThis.close(); return 1; };",
          "export default async () => { await null; Deno.exit(0); };",
        ]
      ) {
        const result = await sandbox.run(source);
        assert.equal(result.ok, false, source);
        const next = await sandbox.run("export default 'still here';");
        assert.equal(next.ok && next.value, "still here", source);
      }
    });
  }
});

Deno.test("reading /etc/hostname or a file of the test is denied", async (t) => {
  await withSecretFile(async (path, secret) => {
    for (const tier of TIERS) {
      await t.step(tier.name, async () => {
        await using sandbox = tier.create();
        for (
          const source of [
            "export default (path) => Deno.readTextFile(path);",
            "export default (path) => Deno.readTextFileSync(path);",
            "export default async (path) => (await fetch('file://' + path)).text();",
            "export default () => Deno.readTextFile('/etc/hostname');",
            "export default async () => (await fetch('file:///etc/hostname')).text();",
            "export default async () => (await fetch('file:///proc/self/environ')).text();",
          ]
        ) {
          const result = await sandbox.run(source, { context: path });
          assert.equal(result.ok, false, source);
          assert.ok(!everything(result).includes(secret), source);
          if (HOSTNAME !== "") {
            assert.ok(!everything(result).includes(HOSTNAME), source);
          }
        }
      });
    }
  });
});

Deno.test("fetch to a server on 127.0.0.1 never reaches it", async (t) => {
  let requests = 0;
  await using server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    () => {
      requests++;
      return new Response("reached");
    },
  );
  const url = `http://127.0.0.1:${server.addr.port}/`;
  for (const tier of TIERS) {
    await t.step(tier.name, async () => {
      await using sandbox = tier.create();
      const result = await sandbox.run(
        `export default async (url) => {
          const attempts = [];
          const attempt = async (name, f) => {
            try { await f(); attempts.push(name + ": reached"); }
            catch (error) { attempts.push(name + ": " + error.name); }
          };
          await attempt("fetch", () => fetch(url));
          await attempt("websocket", () => new Promise((resolve, reject) => {
            const socket = new WebSocket(url.replace("http", "ws"));
            socket.onopen = resolve;
            socket.onerror = () => reject(new Error("refused"));
          }));
          await attempt("connect", () => Deno.connect({ hostname: "127.0.0.1", port: Number(new URL(url).port) }));
          return attempts;
        };`,
        { context: url },
      );
      assert.ok(result.ok, everything(result));
      assert.ok(
        !(result.value as string[]).some((line) => line.endsWith("reached")),
      );
    });
  }
  assert.equal(requests, 0);
});

Deno.test("environment variables are unreadable", async (t) => {
  const secret = `env-secret-${crypto.randomUUID()}`;
  Deno.env.set("CORDON_TEST_SECRET", secret);
  try {
    for (const tier of TIERS) {
      await t.step(tier.name, async () => {
        await using sandbox = tier.create();
        for (
          const source of [
            'export default Deno.env.get("CORDON_TEST_SECRET");',
            "export default Deno.env.toObject();",
            "export default process.env;",
            "export default async () => (await fetch('file:///proc/self/environ')).text();",
          ]
        ) {
          const result = await sandbox.run(source);
          assert.equal(result.ok, false, source);
          assert.ok(!everything(result).includes(secret), source);
        }
      });
    }
  } finally {
    Deno.env.delete("CORDON_TEST_SECRET");
  }
});

Deno.test("Deno.Command cannot start a program", async (t) => {
  const dir = await Deno.makeTempDir();
  try {
    for (const tier of TIERS) {
      await t.step(tier.name, async () => {
        const marker = `${dir}/${tier.name}-ran`;
        await using sandbox = tier.create();
        const result = await sandbox.run(
          `export default async (marker) => {
            await new Deno.Command("touch", { args: [marker] }).output();
            return "started";
          };`,
          { context: marker },
        );
        assert.equal(result.ok, false);
        assert.throws(() => Deno.statSync(marker), Deno.errors.NotFound);
      });
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("throwing a 100 MB string does not bring down the caller", async (t) => {
  for (const tier of TIERS) {
    await t.step(tier.name, async () => {
      await using sandbox = tier.create({
        memoryLimitBytes: 512 * 1024 * 1024,
      });
      const result = await sandbox.run('throw "x".repeat(100 * 1024 * 1024);', {
        timeoutMs: 30_000,
      });
      assert.equal(result.ok, false);
      assert.ok(
        ["GUEST_ERROR", "OUT_OF_MEMORY"].includes(codeOf(result)),
        codeOf(result),
      );
      assert.ok(everything(result).length < 20_000, "the message is clipped");
      const next = await sandbox.run("export default 'fine';");
      assert.equal(next.ok && next.value, "fine");
    });
  }
});

Deno.test("a memory bomb is capped with OUT_OF_MEMORY", async (t) => {
  for (const tier of TIERS) {
    await t.step(tier.name, async () => {
      await using sandbox = tier.create({ memoryLimitBytes: 32 * 1024 * 1024 });
      for (
        const source of [
          "const kept = [];\nfor (;;) kept.push({ a: Math.random(), b: [1, 2, 3] });",
          "let text = 'x';\nconst parts = [];\nfor (;;) parts.push(text += Math.random());",
        ]
      ) {
        const result = await sandbox.run(source, { timeoutMs: 60_000 });
        assert.equal(codeOf(result), "OUT_OF_MEMORY", source);
      }
      assert.equal(codeOf(await sandbox.run("export default 1;")), "ok");
    });
  }
});

Deno.test("prototype pollution stays inside its run", async (t) => {
  for (const tier of TIERS) {
    await t.step(tier.name, async () => {
      await using sandbox = tier.create();
      const polluting = await sandbox.run(
        [
          'Object.prototype.polluted = "yes";',
          'Array.prototype.map = function () { return "hijacked"; };',
          'JSON.parse = () => "hijacked";',
          'Object.prototype.toJSON = function () { return "hijacked"; };',
          'Promise.prototype.then = function () { return "hijacked"; };',
          "export default 1;",
        ].join("\n"),
      );
      assert.equal(codeOf(polluting), "ok");
      assert.equal(({} as Record<string, unknown>).polluted, undefined);
      assert.deepEqual([1, 2].map((n) => n * 2), [2, 4]);
      const next = await sandbox.run(
        'export default [typeof ({}).polluted, [1, 2].map((n) => n * 2), JSON.parse("[1]"), typeof Object.prototype.toJSON];',
      );
      assert.deepEqual(next.ok && next.value, [
        "undefined",
        [2, 4],
        [1],
        "undefined",
      ]);
    });
  }
});

Deno.test("a guest that floods the console is capped", async (t) => {
  for (const tier of TIERS) {
    await t.step(tier.name, async () => {
      await using sandbox = tier.create({ maxLogBytes: 1024 });
      const result = await sandbox.run(
        'for (let i = 0; i < 200_000; i++) console.log("spam " + i);\nexport default "survived";',
        { timeoutMs: 30_000 },
      );
      assert.equal(result.ok && result.value, "survived");
      assert.equal(result.logsTruncated, true);
      const bytes = result.logs.reduce(
        (sum, entry) => sum + new TextEncoder().encode(entry.message).length,
        0,
      );
      assert.ok(bytes <= 1024 && result.logs.length > 10, `${bytes} bytes`);
    });
  }
  await using sandbox = createProcessSandbox({ maxLogBytes: 1024 });
  const raw = await sandbox.run(
    'const bytes = new TextEncoder().encode("raw spam\\n".repeat(1000));\nfor (let i = 0; i < 2_000; i++) Deno.stdout.writeSync(bytes);\nexport default "survived";',
    { timeoutMs: 30_000 },
  );
  assert.equal(raw.ok && raw.value, "survived");
  assert.equal(raw.logsTruncated, true);
  assert.ok(raw.logs.length <= 1024 / "raw spam".length + 1);
});

Deno.test("guest code cannot forge the sandbox's answer", async (t) => {
  const forged = '{"t":"result","outcome":{"ok":true,"value":"forged"}}';
  for (const tier of TIERS) {
    await t.step(tier.name, async () => {
      await using sandbox = tier.create();
      const result = await sandbox.run(
        [
          `const forged = ${JSON.stringify(forged)};`,
          'if (typeof postMessage === "function") postMessage(JSON.parse(forged));',
          'if (typeof Deno === "object") Deno.stdout.writeSync(new TextEncoder().encode(forged + "\\n"));',
          "console.log(forged);",
          'export default "real";',
        ].join("\n"),
      );
      assert.equal(result.ok && result.value, "real");
      const timeout = await sandbox.run(
        'console.log(\'{"t":"result","outcome":{"ok":true,"value":"forged"}}\');\nfor (;;) {}',
        { timeoutMs: 300 },
      );
      assert.equal(codeOf(timeout), "TIMEOUT");
    });
  }
});

Deno.test("a worker guest cannot pose as its host's stop request", async () => {
  // A stop the guest could fake would close its worker while its code runs
  // on; the host would then take its next run with that code still running.
  await using sandbox = createWorkerSandbox();
  const result = await sandbox.run(
    [
      'const fake = new MessageEvent("message", { data: "stop" });',
      'Object.defineProperty(fake, "isTrusted", { value: true });',
      "dispatchEvent(fake);",
      'export default [typeof postMessage, "postMessage" in globalThis, name];',
    ].join("\n"),
  );
  assert.deepEqual(result.ok && result.value, ["undefined", false, ""]);
});

Deno.test("a guest's unload listener never runs after its answer", async (t) => {
  for (const tier of TIERS) {
    await t.step(tier.name, async () => {
      await using sandbox = tier.create();
      const result = await sandbox.run(
        [
          "addEventListener('unload', () => {",
          "  console.log('unload ran');",
          "  if (typeof Deno === 'object') Deno.exit(9);",
          "});",
          "export default 'answered';",
        ].join("\n"),
      );
      assert.equal(result.ok && result.value, "answered");
      assert.deepEqual(result.logs, []);
      if (tier.name === "process") assert.equal(result.metrics.exitCode, 0);
    });
  }
});

/** The folder where a sandbox child's Deno would keep its caches by default. */
async function defaultDenoDir(): Promise<string> {
  const { stdout } = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json"],
    clearEnv: true,
    env: { NO_COLOR: "1" },
    stdout: "piped",
    stderr: "null",
  }).output();
  return JSON.parse(new TextDecoder().decode(stdout)).denoDir;
}

async function filesHolding(dir: string, text: string): Promise<string[]> {
  const needle = new TextEncoder().encode(text);
  const found: string[] = [];
  for await (const entry of Deno.readDir(dir)) {
    if (!entry.isFile) continue;
    let bytes: Uint8Array;
    try {
      bytes = await Deno.readFile(`${dir}/${entry.name}`);
    } catch (error) {
      // Another Deno (a type check) may remove its journal meanwhile.
      if (error instanceof Deno.errors.NotFound) continue;
      throw error;
    }
    const first = bytes.indexOf(needle[0]!);
    for (let i = first; i >= 0; i = bytes.indexOf(needle[0]!, i + 1)) {
      if (needle.every((byte, j) => bytes[i + j] === byte)) {
        found.push(entry.name);
        break;
      }
    }
  }
  return found;
}

Deno.test("guest source leaves no trace in Deno's cache folder", async (t) => {
  const denoDir = await defaultDenoDir();
  // Deno writes its caches as it goes; each module below waits a moment
  // before it answers, so a write has happened by the time it is looked for.
  const settle = "await new Promise((resolve) => setTimeout(resolve, 300));";
  await t.step("a plain child Deno would keep it there", async () => {
    // The check itself: a module Deno loads by default is found there.
    const tag = `cordon-cache-probe-${crypto.randomUUID()}`;
    const module = "data:text/javascript," +
      encodeURIComponent(`export default ${JSON.stringify(tag)};`);
    await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--no-config",
        "data:text/javascript," +
        encodeURIComponent(`await import(${JSON.stringify(module)});${settle}`),
      ],
      clearEnv: true,
      env: { NO_COLOR: "1" },
      stdout: "null",
      stderr: "null",
    }).output();
    assert.notDeepEqual(await filesHolding(denoDir, tag), []);
  });
  for (const tier of TIERS) {
    await t.step(tier.name, async () => {
      const tag = `cordon-cache-probe-${crypto.randomUUID()}`;
      {
        await using sandbox = tier.create();
        const result = await sandbox.run(
          `const tag = ${
            JSON.stringify(tag)
          };\n${settle}\nexport default tag.length;`,
        );
        assert.equal(result.ok && result.value, tag.length);
      }
      assert.deepEqual(await filesHolding(denoDir, tag), []);
    });
  }
});

Deno.test("no storage, channel or nested worker is left to guest code", async (t) => {
  for (const tier of TIERS) {
    await t.step(tier.name, async () => {
      await using sandbox = tier.create();
      const result = await sandbox.run(
        "export default [typeof caches, typeof localStorage, typeof sessionStorage, typeof BroadcastChannel, typeof Worker, typeof process, typeof Buffer];",
      );
      assert.deepEqual(result.ok && result.value, Array(7).fill("undefined"));
    });
  }
});

Deno.test("no navigator tells guest code the host's runtime, its version, platform or core count", async (t) => {
  for (const tier of TIERS) {
    await t.step(tier.name, async () => {
      await using sandbox = tier.create();
      const result = await sandbox.run(
        "export default [typeof navigator, typeof Navigator, typeof WorkerNavigator];",
      );
      assert.deepEqual(result.ok && result.value, Array(3).fill("undefined"));
    });
  }
});

Deno.test("no clock finer than Date.now()'s millisecond reaches guest code", async (t) => {
  for (const tier of TIERS) {
    await t.step(tier.name, async () => {
      await using sandbox = tier.create();
      const result = await sandbox.run(
        `export default (() => {${CLOCK_READINGS}})();`,
      );
      assert.deepEqual(
        result.ok && result.value,
        MILLISECOND_PERFORMANCE_CLOCKS,
      );
    });
  }
});

Deno.test("guest code that times its work as the difference of two performance.now() readings runs", async (t) => {
  for (const tier of TIERS) {
    await t.step(tier.name, async () => {
      await using sandbox = tier.create();
      const result = await sandbox.run(
        `export default async () => {
          const start = performance.now();
          await new Promise((resolve) => setTimeout(resolve, 20));
          const elapsed = performance.now() - start;
          return { whole: Number.isInteger(elapsed), advanced: elapsed > 0 };
        };`,
        { timeoutMs: 30_000 },
      );
      assert.deepEqual(result.ok && result.value, {
        whole: true,
        advanced: true,
      });
    });
  }
});

Deno.test("code generation from strings is unavailable at run time", async (t) => {
  for (const tier of TIERS) {
    await t.step(tier.name, async () => {
      await using sandbox = tier.create();
      const result = await sandbox.run(
        `const tries = {
          eval: () => eval("import('node:process')"),
          indirectEval: () => (0, eval)("1"),
          Function: () => new Function("return 1")(),
          AsyncFunction: () => (async function () {}).constructor("return 1")(),
        };
        export default Object.entries(tries).map(([name, f]) => {
          try { f(); return name + ": ran"; } catch (error) { return name + ": " + error.name; }
        });`,
      );
      assert.deepEqual(result.ok && result.value, [
        "eval: EvalError",
        "indirectEval: EvalError",
        "Function: EvalError",
        "AsyncFunction: EvalError",
      ]);
    });
  }
});

Deno.test("ProcessSandbox kills a timed-out guest: its process uses no more CPU", async () => {
  await using sandbox = createProcessSandbox({ concurrency: 1 });
  const before = new Set(childPids());
  const spinning = sandbox.run("for (;;) {}", { timeoutMs: 3_000 });
  const guests = await newChildren(before, 30_000);
  assert.equal(guests.length, 1, "the guest runs in one child process");
  const whileSpinning = await ticksDuring(guests, 1_500);
  assert.equal(codeOf(await spinning), "TIMEOUT");
  const afterTimeout = await ticksDuring(guests, 1_500);
  assert.ok(afterTimeout <= 10, `used ${afterTimeout} ticks after its timeout`);
  // The same measure, side by side on the same machine, sees the spinning
  // guest: how much it shows depends on the machine's load.
  assert.ok(
    whileSpinning > afterTimeout,
    `spinning shows (${whileSpinning} ticks, ${afterTimeout} after)`,
  );
  assert.equal(isRunning(guests[0]!), false);
});
