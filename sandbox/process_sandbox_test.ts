import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { CordonError } from "../protocol/cordon_error.ts";
import type { SandboxResult } from "../protocol/sandbox_result.ts";
import { operatorQuote } from "../protocol/operator_text.ts";
import { createProcessSandbox } from "./process_sandbox.ts";
import { withPollutedPrototype } from "../protocol/_test_hostile_test.ts";
import { childPids, newChildren } from "./_proc_stat_test.ts";

function codeOf(result: SandboxResult): string {
  return result.ok ? "ok" : result.error.code;
}

Deno.test("createProcessSandbox() rejects options of the wrong type or range", () => {
  assert.throws(
    () => createProcessSandbox({ allowRead: "/tmp" as unknown as string[] }),
    TypeError,
  );
  assert.throws(
    () => createProcessSandbox({ allowRead: ["/a,/etc"] }),
    TypeError,
  );
  assert.throws(() => createProcessSandbox({ allowNet: [""] }), TypeError);
  assert.throws(
    () => createProcessSandbox({ env: { "BAD-NAME": "x" } }),
    TypeError,
  );
  assert.throws(
    () => createProcessSandbox({ env: { OK: 1 as unknown as string } }),
    TypeError,
  );
  assert.throws(
    () => createProcessSandbox({ memoryLimitBytes: 1024 }),
    RangeError,
  );
  assert.throws(() => createProcessSandbox({ concurrency: 0 }), RangeError);
  for (const maxQueued of [-1, 1.5, Number.NaN]) {
    assert.throws(() => createProcessSandbox({ maxQueued }), {
      name: "RangeError",
      message:
        "Cannot configure the sandbox: maxQueued must be an integer from 0 to 1000000000",
    });
  }
  assert.throws(
    () => createProcessSandbox({ maxQueued: "4" as unknown as number }),
    TypeError,
  );
  assert.throws(
    () => createProcessSandbox({ timeoutMs: Number.POSITIVE_INFINITY }),
    RangeError,
  );
});

Deno.test("createProcessSandbox() refuses env variables that change how the guest's process starts or connects", async () => {
  // Each would act before the bootstrap or past the grants: a preloaded
  // script, a native library, V8 flags, a proxy that allowNet does not name.
  for (
    const name of [
      "NODE_OPTIONS",
      "DENO_V8_FLAGS",
      "DENO_DIR",
      "LD_PRELOAD",
      "HTTP_PROXY",
      "https_proxy",
      "RUST_LOG",
      "OTEL_DENO",
      // Deno writes each TLS session's keys to the file it names, a write
      // no allowWrite grant covers.
      "SSLKEYLOGFILE",
      "SslKeyLogFile",
    ]
  ) {
    assert.throws(
      () => createProcessSandbox({ env: { [name]: "x" } }),
      (error: unknown) =>
        error instanceof TypeError &&
        error.message.includes(`env.${name}`),
      name,
    );
  }
  await using _sandbox = createProcessSandbox({
    env: { TZ: "UTC", LANG: "C", TMPDIR: "/tmp", NODENAME: "n" },
  });
});

Deno.test("createProcessSandbox() checks the grants it uses, whatever a grant list's own map() answers, where that answer was granted unchecked", () => {
  assert.throws(
    // deno-lint-ignore no-sparse-arrays
    () => createProcessSandbox({ allowRead: ["/a", , "/b"] as string[] }),
    {
      name: "TypeError",
      message:
        "allowRead[1] must be a non-empty string without commas or NUL characters",
    },
  );
  const list = ["/a,/etc"];
  Object.defineProperty(list, "map", { value: () => ["/a"] });
  assert.throws(() => createProcessSandbox({ allowRead: list }), {
    name: "TypeError",
    message:
      `allowRead[0] "/a,/etc" holds a comma, which the child's permission flag reads as a separator between two grants: grant a folder above it whose path holds none, or move it`,
  });
});

Deno.test("createProcessSandbox() refuses a grant whose path holds a comma, quoting the path, as the child's permission flag would read it as two grants", async () => {
  const temp = await Deno.makeTempDir();
  try {
    const folder = `${temp}/a b#c%20d?e,f\n/ü 日本`;
    await Deno.mkdir(folder, { recursive: true });
    for (const name of ["allowRead", "allowWrite"] as const) {
      assert.throws(() => createProcessSandbox({ [name]: ["/x", folder] }), {
        name: "TypeError",
        message: `${name}[1] ${
          operatorQuote(folder)
        } holds a comma, which the child's permission flag reads as a separator between two grants: grant a folder above it whose path holds none, or move it`,
      });
    }
  } finally {
    await Deno.remove(temp, { recursive: true });
  }
});

Deno.test("createProcessSandbox() starts its child in this process's working folder when a polluted Object.prototype names another cwd, so a relative grant names the files it named", async () => {
  const elsewhere = await Deno.makeTempDir();
  try {
    await Deno.mkdir(`${elsewhere}/granted-folder`);
    await Deno.writeTextFile(
      `${elsewhere}/granted-folder/secret.txt`,
      "secret",
    );
    await using sandbox = createProcessSandbox({
      allowRead: ["granted-folder"],
    });
    const result = await withPollutedPrototype(
      { cwd: elsewhere },
      () =>
        sandbox.run(
          'export default await Deno.readTextFile("granted-folder/secret.txt").catch((error) => error.name);',
        ),
    );
    assert.equal(result.ok && result.value, "NotFound");
  } finally {
    await Deno.remove(elsewhere, { recursive: true });
  }
});

Deno.test("createProcessSandbox() refuses an env it cannot read with a TypeError naming env", () => {
  const { proxy, revoke } = Proxy.revocable({ GREETING: "hello" }, {});
  revoke();
  assert.throws(() => createProcessSandbox({ env: proxy }), {
    name: "TypeError",
    message: /^Cannot create the process sandbox: env could not be read: /,
  });
});

Deno.test("createProcessSandbox() refuses a misspelt option, naming the closest one", () => {
  assert.throws(() => createProcessSandbox({ memoryLimit: 1e8 } as never), {
    name: "TypeError",
    message:
      "Cannot create the process sandbox: unknown option memoryLimit; did you mean memoryLimitBytes?",
  });
  assert.throws(() => createProcessSandbox({ allowEnv: ["HOME"] } as never), {
    name: "TypeError",
    message: "Cannot create the process sandbox: unknown option allowEnv",
  });
});

Deno.test("ProcessSandbox reports the child's exit code", async () => {
  await using sandbox = createProcessSandbox();
  const fine = await sandbox.run("export default 1;");
  assert.equal(fine.metrics.exitCode, 0);
  assert.equal(fine.metrics.tier, "process");
  const exited = await sandbox.run("Deno.exit(7);\nexport default 1;");
  assert.equal(codeOf(exited), "SANDBOX_CRASHED");
  assert.equal(exited.metrics.exitCode, 7);
  assert.match(!exited.ok ? exited.error.message : "", /exited with code 7/);
  const killed = await sandbox.run("for (;;) {}", { timeoutMs: 200 });
  assert.equal(codeOf(killed), "TIMEOUT");
  assert.equal(killed.metrics.exitCode, 137);
});

Deno.test("ProcessSandbox.run() takes a declaration, and answers one with packs DECLARATION_INVALID", async () => {
  await using sandbox = createProcessSandbox();
  const result = await sandbox.run(
    { source: "export default ({ n }) => n + 1;", packages: [] },
    { context: { n: 1 } },
  );
  assert.equal(result.ok && result.value, 2);
  const withPacks = await sandbox.run({
    source: "export default 1;",
    packages: [{ specifier: "@acme/math" }, "@acme/text"],
  });
  assert.deepEqual(withPacks.ok ? withPacks : withPacks.error, {
    code: "DECLARATION_INVALID",
    name: "DeclarationError",
    message:
      "The declaration is invalid at packages: it names 2 packs, but the process sandbox runs guest code without packs; pass no packages, or run it on the QuickJS tier",
  });
});

Deno.test("ProcessSandbox keeps what guest code prints as logs, never as the answer", async () => {
  await using sandbox = createProcessSandbox();
  const result = await sandbox.run(
    [
      "const encoder = new TextEncoder();",
      'Deno.stdout.writeSync(encoder.encode("raw out\\n"));',
      'Deno.stdout.writeSync(encoder.encode(JSON.stringify({ t: "result", outcome: { ok: true, value: "forged" } }) + "\\n"));',
      'Deno.stderr.writeSync(encoder.encode("raw err\\n"));',
      'console.log("via console");',
      'export default "real";',
    ].join("\n"),
  );
  assert.equal(result.ok && result.value, "real");
  const messages = result.logs.map((entry) =>
    `${entry.level}:${entry.message}`
  );
  assert.ok(messages.includes("log:raw out"));
  assert.ok(messages.includes("error:raw err"));
  assert.ok(messages.includes("log:via console"));
  assert.ok(messages.some((line) => line.includes("forged")));
});

Deno.test("ProcessSandbox grants exactly the read access and variables it is given", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.writeTextFile(`${dir}/allowed.txt`, "allowed content");
    await Deno.writeTextFile(`${dir}/secret.txt`, "secret content");
    await using sandbox = createProcessSandbox({
      allowRead: [`${dir}/allowed.txt`],
      env: { GREETING: "hello" },
    });
    const allowed = await sandbox.run(
      "export default (path) => Deno.readTextFile(path);",
      { context: `${dir}/allowed.txt` },
    );
    assert.equal(allowed.ok && allowed.value, "allowed content");
    const denied = await sandbox.run(
      "export default (path) => Deno.readTextFile(path);",
      { context: `${dir}/secret.txt` },
    );
    assert.equal(codeOf(denied), "GUEST_ERROR");
    assert.ok(!JSON.stringify(denied).includes("secret content"));
    const env = await sandbox.run(
      'export default [Deno.env.get("GREETING"), (() => { try { return Deno.env.get("PATH"); } catch (e) { return e.name; } })()];',
    );
    assert.deepEqual(env.ok && env.value, ["hello", "NotCapable"]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("ProcessSandbox grants are by path, as Deno checks them: a symbolic link inside a granted folder is followed, and .. is resolved first", async () => {
  // Pins a documented limit (docs/sandbox.md, Process tier): if Deno
  // starts to check where a link leads, the docs change with this test.
  const dir = await Deno.makeTempDir();
  const outside = await Deno.makeTempDir();
  try {
    await Deno.mkdir(`${dir}/granted`);
    await Deno.writeTextFile(`${outside}/secret.txt`, "outside content");
    await Deno.symlink(`${outside}/secret.txt`, `${dir}/granted/link`);
    await using sandbox = createProcessSandbox({
      allowRead: [`${dir}/granted`],
    });
    const read = (path: string) =>
      sandbox.run("export default (path) => Deno.readTextFile(path);", {
        context: path,
      });
    const followed = await read(`${dir}/granted/link`);
    assert.equal(followed.ok && followed.value, "outside content");
    const outsideName = outside.slice(outside.lastIndexOf("/") + 1);
    const climbed = await read(
      `${dir}/granted/../../${outsideName}/secret.txt`,
    );
    assert.equal(codeOf(climbed), "GUEST_ERROR");
    assert.equal(!climbed.ok && climbed.error.name, "NotCapable");
    // Nor can the guest make a link of its own with narrow grants.
    await using writer = createProcessSandbox({
      allowRead: [`${dir}/granted`],
      allowWrite: [`${dir}/granted`],
    });
    const linked = await writer.run(
      "export default (args) => Deno.symlink(args[0], args[1]);",
      { context: [`${outside}/secret.txt`, `${dir}/granted/own`] },
    );
    assert.equal(!linked.ok && linked.error.name, "NotCapable");
  } finally {
    await Deno.remove(dir, { recursive: true });
    await Deno.remove(outside, { recursive: true });
  }
});

Deno.test("ProcessSandbox caps the heap with OUT_OF_MEMORY and keeps V8's report out of the logs", async () => {
  await using sandbox = createProcessSandbox({
    memoryLimitBytes: 32 * 1024 * 1024,
  });
  const result = await sandbox.run(
    'console.log("allocating");\nconst kept = [];\nfor (;;) kept.push(new Array(100_000).fill(Math.random()));',
    { timeoutMs: 20_000 },
  );
  assert.equal(codeOf(result), "OUT_OF_MEMORY");
  assert.notEqual(result.metrics.exitCode, 0);
  assert.deepEqual(result.logs, [{ level: "log", message: "allocating" }]);
});

/** Guest code that writes V8's report on an exhausted heap to stderr. */
const WRITE_HEAP_REPORT =
  "const report = '\\n<--- Last few GCs --->\\n\\n#\\n# Fatal JavaScript out of memory: Reached heap limit\\n#\\n';\n" +
  "Deno.stderr.writeSync(new TextEncoder().encode(report));\n";

Deno.test({
  name:
    "ProcessSandbox answers SANDBOX_CRASHED, not OUT_OF_MEMORY, to guest code that writes V8's heap report and exits",
  // Windows ends no process with a signal, so only the report tells there.
  ignore: Deno.build.os === "windows",
  async fn() {
    await using sandbox = createProcessSandbox();
    const result = await sandbox.run(
      WRITE_HEAP_REPORT + "Deno.exit(133);",
    );
    assert.equal(codeOf(result), "SANDBOX_CRASHED");
    assert.equal(result.metrics.exitCode, 133);
  },
});

Deno.test({
  name:
    "ProcessSandbox answers GUEST_ERROR, not OUT_OF_MEMORY, to guest code that writes V8's heap report and signals its own process",
  ignore: Deno.build.os === "windows",
  async fn() {
    await using sandbox = createProcessSandbox();
    // Deno lets a process signal itself without run permission; V8 ends a
    // process whose heap is exhausted with SIGTRAP.
    const result = await sandbox.run(
      WRITE_HEAP_REPORT + 'Deno.kill(Deno.pid, "SIGTRAP");',
    );
    assert.equal(codeOf(result), "GUEST_ERROR");
    assert.equal(result.metrics.exitCode, 0);
  },
});

Deno.test("ProcessSandbox leaves nothing in the temp folder, even after a kill", async () => {
  // The caller and its children get a temp folder of their own, so a file
  // left by either the sandbox or the child Deno shows up there.
  const tmp = await Deno.makeTempDir();
  const scripts = await Deno.makeTempDir();
  try {
    const script = `${scripts}/caller.ts`;
    await Deno.writeTextFile(
      script,
      `import { createProcessSandbox } from ${
        JSON.stringify(new URL("./process_sandbox.ts", import.meta.url).href)
      };
await using sandbox = createProcessSandbox({ env: { TMPDIR: ${
        JSON.stringify(tmp)
      } } });
const codes = [];
for (const [source, timeoutMs] of [["export default 1;", 5000], ["for (;;) {}", 200], ["throw new Error('x');", 5000]]) {
  const result = await sandbox.run(source, { timeoutMs });
  codes.push(result.ok ? "ok" : result.error.code);
}
console.log(JSON.stringify(codes));
`,
    );
    const { code, stdout } = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "-A",
        `--config=${fileURLToPath(new URL("../deno.json", import.meta.url))}`,
        script,
      ],
      env: { TMPDIR: tmp, TMP: tmp, TEMP: tmp },
      stdout: "piped",
      stderr: "inherit",
    }).output();
    assert.equal(code, 0);
    assert.deepEqual(JSON.parse(new TextDecoder().decode(stdout)), [
      "ok",
      "TIMEOUT",
      "GUEST_ERROR",
    ]);
    assert.deepEqual([...Deno.readDirSync(tmp)].map((entry) => entry.name), []);
  } finally {
    await Deno.remove(tmp, { recursive: true });
    await Deno.remove(scripts, { recursive: true });
  }
});

Deno.test("ProcessSandbox disposal ends runs in flight and queued, and refuses new ones", async () => {
  const sandbox = createProcessSandbox({ concurrency: 1 });
  const children = new Set(childPids());
  const inFlight = sandbox.run("export default new Promise(() => {});", {
    timeoutMs: 20_000,
  });
  const queued = sandbox.run("export default 1;");
  // Disposed once the first run's process is there; the wait only bounds
  // a process that never starts.
  await newChildren(children, 120_000);
  await sandbox[Symbol.asyncDispose]();
  await sandbox[Symbol.asyncDispose]();
  assert.equal(codeOf(await inFlight), "SANDBOX_DISPOSED");
  assert.equal(codeOf(await queued), "SANDBOX_DISPOSED");
  await assert.rejects(
    () => sandbox.run("export default 1;"),
    (error: unknown) =>
      error instanceof CordonError && error.code === "SANDBOX_DISPOSED",
  );
});

Deno.test("ProcessSandbox refuses a run past maxQueued with SANDBOX_BUSY at once, and runs the one waiting", async () => {
  await using sandbox = createProcessSandbox({ concurrency: 1, maxQueued: 1 });
  const controller = new AbortController();
  const running = sandbox.run("export default new Promise(() => {});", {
    signal: controller.signal,
    timeoutMs: 20_000,
  });
  const runs = [
    sandbox.run("export default 2;"),
    sandbox.run("export default 3;"),
  ];
  // The run that holds the slot never ends by itself, so the first answer
  // is the refusal, given while the other waits.
  const refused = await Promise.race(runs);
  assert.equal(codeOf(refused), "SANDBOX_BUSY");
  assert.match(
    refused.ok ? "" : refused.error.message,
    /as many runs waiting for a runner as its maxQueued allows \(1\)/,
  );
  controller.abort();
  assert.equal(codeOf(await running), "ABORTED");
  const answers = (await Promise.all(runs)).map(codeOf).sort();
  assert.deepEqual(answers, ["SANDBOX_BUSY", "ok"]);
});

Deno.test("ProcessSandbox answers ABORTED when the signal aborts, at any stage", async () => {
  await using sandbox = createProcessSandbox({ concurrency: 1 });
  const before = await sandbox.run("export default 1;", {
    signal: AbortSignal.abort(),
  });
  assert.equal(codeOf(before), "ABORTED");
  const controller = new AbortController();
  const children = new Set(childPids());
  const running = sandbox.run(
    'console.log("started");\nexport default new Promise(() => {});',
    { signal: controller.signal, timeoutMs: 20_000 },
  );
  const queued = sandbox.run("export default 2;", {
    signal: controller.signal,
  });
  // The abort comes once the first run's process is there to be killed;
  // the wait only bounds a process that never starts.
  await newChildren(children, 120_000);
  controller.abort();
  const [first, second] = await Promise.all([running, queued]);
  assert.equal(codeOf(first), "ABORTED");
  assert.equal(codeOf(second), "ABORTED");
  assert.equal(first.metrics.exitCode, 137);
});

/**
 * An AbortSignal, still one to `instanceof`, whose `method` throws: the
 * sandbox first calls it once the child has started.
 */
function signalWhose(
  method: "addEventListener" | "removeEventListener",
): AbortSignal {
  const signal = new AbortController().signal;
  Object.defineProperty(signal, method, {
    value: () => {
      throw new Error(`${method} failed`);
    },
  });
  return signal;
}

Deno.test("ProcessSandbox ends the child and releases its pipes, timers and watch when a step after the spawn throws, where the child was left waiting for its input with its pipes open", async () => {
  await using sandbox = createProcessSandbox({ concurrency: 1 });
  const children = new Set(childPids());
  for (const method of ["addEventListener", "removeEventListener"] as const) {
    await assert.rejects(
      sandbox.run("export default 1;", {
        signal: signalWhose(method),
        timeoutMs: 60_000,
      }),
      { message: `${method} failed` },
    );
    assert.deepEqual(
      childPids().filter((pid) => !children.has(pid)),
      [],
      `no child is left once the run has rejected (${method})`,
    );
  }
  // The slot is free again and the sandbox still runs guests.
  const after = await sandbox.run("export default 2;");
  assert.equal(after.ok && after.value, 2);
});
