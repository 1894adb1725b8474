import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { CordonError } from "../protocol/cordon_error.ts";
import type { SandboxResult } from "../protocol/sandbox_result.ts";
import { childPids, ticksDuring, ticksUntil } from "./_proc_stat_test.ts";
import { workerHostUrl } from "./_sources.ts";
import { startHost } from "./_spawn_host_test.ts";
import { createWorkerSandbox } from "./worker_sandbox.ts";

function codeOf(result: SandboxResult): string {
  return result.ok ? "ok" : result.error.code;
}

Deno.test("createWorkerSandbox() rejects options of the wrong type or range", () => {
  assert.throws(
    () => createWorkerSandbox(null as unknown as Record<string, never>),
    TypeError,
  );
  assert.throws(
    () => createWorkerSandbox({ pool: "2" as unknown as number }),
    TypeError,
  );
  assert.throws(() => createWorkerSandbox({ pool: -1 }), RangeError);
  assert.throws(() => createWorkerSandbox({ pool: 1.5 }), RangeError);
  assert.throws(
    () => createWorkerSandbox({ pool: 3, concurrency: 2 }),
    RangeError,
  );
  assert.throws(() => createWorkerSandbox({ timeoutMs: 0 }), RangeError);
  assert.throws(
    () => createWorkerSandbox({ memoryLimitBytes: 1024 }),
    RangeError,
  );
  assert.throws(() => createWorkerSandbox({ maxLogBytes: -1 }), RangeError);
  for (const maxQueued of [-1, 0.5, Number.NaN]) {
    assert.throws(() => createWorkerSandbox({ maxQueued }), {
      name: "RangeError",
      message:
        "Cannot configure the sandbox: maxQueued must be an integer from 0 to 1000000000",
    });
  }
  assert.throws(
    () => createWorkerSandbox({ maxQueued: "9" as unknown as number }),
    TypeError,
  );
});

Deno.test("WorkerSandbox.run() rejects a wrong context or option, and answers a wrong declaration", async () => {
  await using sandbox = createWorkerSandbox();
  const wrong = await sandbox.run(42 as unknown as string);
  assert.equal(wrong.ok ? "ok" : wrong.error.code, "DECLARATION_INVALID");
  await assert.rejects(
    () => sandbox.run("export default 1", { context: { f: () => 1 } as never }),
    TypeError,
  );
  await assert.rejects(
    () => sandbox.run("export default 1", { context: 1n as never }),
    TypeError,
  );
  await assert.rejects(
    () => sandbox.run("export default 1", { timeoutMs: -5 }),
    RangeError,
  );
  await assert.rejects(
    () =>
      sandbox.run("export default 1", {
        signal: "stop" as unknown as AbortSignal,
      }),
    TypeError,
  );
});

Deno.test("createWorkerSandbox() and run() refuse a misspelt option, naming the closest one", async () => {
  assert.throws(() => createWorkerSandbox({ timeoutMS: 100 } as never), {
    name: "TypeError",
    message:
      "Cannot create the worker sandbox: unknown option timeoutMS; did you mean timeoutMs?",
  });
  await using sandbox = createWorkerSandbox();
  await assert.rejects(
    () => sandbox.run("export default 1", { maxLogByte: 10 } as never),
    {
      name: "TypeError",
      message:
        "Cannot run the guest: unknown option maxLogByte; did you mean maxLogBytes?",
    },
  );
});

Deno.test("WorkerSandbox.run() takes a declaration without packs like a source, and answers one with packs DECLARATION_INVALID", async () => {
  await using sandbox = createWorkerSandbox();
  const source = "export default (n) => n * 2;";
  const plain = await sandbox.run(source, { context: 21 });
  const bare = await sandbox.run({ source }, { context: 21 });
  const empty = await sandbox.run({ source, packages: [] }, { context: 21 });
  assert.deepEqual(
    [plain, bare, empty].map((result) => result.ok && result.value),
    [42, 42, 42],
  );
  const withPacks = await sandbox.run({
    source: 'import { add } from "@acme/math"; export default add(1, 2);',
    packages: ["@acme/math"],
  });
  assert.deepEqual(withPacks.ok ? withPacks : withPacks.error, {
    code: "DECLARATION_INVALID",
    name: "DeclarationError",
    message:
      "The declaration is invalid at packages: it names a pack, but the worker sandbox runs guest code without packs; pass no packages, or run it on the QuickJS tier",
  });
  const wrong = await sandbox.run({ source: 42 } as unknown as string);
  assert.equal(wrong.ok ? "ok" : wrong.error.code, "DECLARATION_INVALID");
  // Without packages, a bare import fails as before, with its own code.
  const imported = await sandbox.run({
    source: 'import { add } from "@acme/math"; export default add(1, 2);',
  });
  assert.equal(codeOf(imported), "IMPORT_UNDECLARED");
});

Deno.test("WorkerSandbox runs each guest in a fresh worker, pooled or not", async (t) => {
  for (const pool of [0, 1]) {
    await t.step(`pool ${pool}`, async () => {
      await using sandbox = createWorkerSandbox({ pool, concurrency: 1 });
      await sandbox.ready();
      const first = await sandbox.run(
        "globalThis.leftover = 'from run 1'; Array.prototype.extra = 1;\nexport default 1;",
      );
      assert.equal(codeOf(first), "ok");
      const second = await sandbox.run(
        "export default [typeof globalThis.leftover, typeof [].extra];",
      );
      assert.deepEqual(second.ok && second.value, ["undefined", "undefined"]);
      assert.equal(second.metrics.tier, "worker");
    });
  }
});

Deno.test("WorkerSandbox.ready() warms the pool, and pooled runs answer", async () => {
  await using sandbox = createWorkerSandbox({ pool: 2, concurrency: 2 });
  await sandbox.ready();
  const results = await Promise.all([
    sandbox.run("export default (n) => n + 1;", { context: 1 }),
    sandbox.run("export default (n) => n + 1;", { context: 2 }),
  ]);
  assert.deepEqual(results.map((result) => result.ok && result.value), [2, 3]);
});

Deno.test("WorkerSandbox answers runs that reach a pooled worker while it still warms up", async () => {
  // Without waiting for ready(), each run after the first goes to the worker
  // its host started right after the previous answer.
  await using sandbox = createWorkerSandbox({ pool: 1, concurrency: 1 });
  for (let n = 0; n < 12; n++) {
    const result = await sandbox.run("export default (n) => n;", {
      context: n,
    });
    assert.equal(result.ok && result.value, n, JSON.stringify(result));
  }
});

Deno.test("WorkerSandbox stops an idle guest that listens to its worker's messages, and keeps its host", async () => {
  await using sandbox = createWorkerSandbox({ concurrency: 1 });
  assert.equal(codeOf(await sandbox.run("export default 1;")), "ok");
  const hosts = childPids();
  const result = await sandbox.run(
    [
      'addEventListener("message", (event) => event.stopImmediatePropagation());',
      "onmessage = () => {};",
      "export default new Promise(() => {});",
    ].join("\n"),
    { timeoutMs: 300 },
  );
  assert.equal(codeOf(result), "TIMEOUT");
  assert.equal(codeOf(await sandbox.run("export default 2;")), "ok");
  // A host whose worker did not confirm the stop would have been replaced.
  assert.deepEqual(childPids(), hosts);
});

Deno.test("WorkerSandbox queues runs beyond its concurrency in order", async () => {
  await using sandbox = createWorkerSandbox({ concurrency: 1 });
  const order: string[] = [];
  const slow = sandbox.run("export default new Promise(() => {});", {
    timeoutMs: 400,
  }).then((result) => {
    order.push("slow");
    return result;
  });
  const quick = sandbox.run("export default 'quick';").then((result) => {
    order.push("quick");
    return result;
  });
  const [first, second] = await Promise.all([slow, quick]);
  assert.equal(codeOf(first), "TIMEOUT");
  assert.equal(second.ok && second.value, "quick");
  assert.deepEqual(order, ["slow", "quick"]);
});

Deno.test("WorkerSandbox answers ABORTED for a queued run whose signal aborts, without running it", async () => {
  await using sandbox = createWorkerSandbox({ concurrency: 1 });
  const blocker = new AbortController();
  const waiting = new AbortController();
  const running = sandbox.run("export default new Promise(() => {});", {
    timeoutMs: 20_000,
    signal: blocker.signal,
  });
  const queued = sandbox.run("console.log('ran'); export default 1;", {
    signal: waiting.signal,
  });
  waiting.abort();
  const queuedResult = await queued;
  assert.equal(codeOf(queuedResult), "ABORTED");
  assert.deepEqual(queuedResult.logs, []);
  blocker.abort();
  assert.equal(codeOf(await running), "ABORTED");
  const already = await sandbox.run("export default 1", {
    signal: AbortSignal.abort(),
  });
  assert.equal(codeOf(already), "ABORTED");
});

Deno.test("WorkerSandbox disposal ends runs in flight and refuses new ones", async () => {
  const sandbox = createWorkerSandbox();
  const inFlight = sandbox.run("export default new Promise(() => {});", {
    timeoutMs: 20_000,
  });
  // Let the run reach its host before disposing.
  await sandbox.run("export default 0;").catch(() => {});
  await sandbox[Symbol.asyncDispose]();
  await sandbox[Symbol.asyncDispose]();
  assert.equal(codeOf(await inFlight), "SANDBOX_DISPOSED");
  await assert.rejects(
    () => sandbox.run("export default 1;"),
    (error: unknown) =>
      error instanceof CordonError && error.code === "SANDBOX_DISPOSED",
  );
  await assert.rejects(
    () => sandbox.ready(),
    (error: unknown) =>
      error instanceof CordonError && error.code === "SANDBOX_DISPOSED",
  );
});

Deno.test("WorkerSandbox answers a run stopped for one reason with that reason when another ends it after: aborted, then disposed, is ABORTED, as on the process tier", async () => {
  const sandbox = createWorkerSandbox();
  const controller = new AbortController();
  const inFlight = sandbox.run("export default new Promise(() => {});", {
    timeoutMs: 20_000,
    signal: controller.signal,
  });
  // Let the run reach its host before stopping it.
  await sandbox.run("export default 0;").catch(() => {});
  controller.abort();
  // While the host is asked to stop the run, within its grace.
  await sandbox[Symbol.asyncDispose]();
  assert.equal(codeOf(await inFlight), "ABORTED");
});

Deno.test("WorkerSandbox.ready() rejects with SANDBOX_DISPOSED when a disposal overtakes it, rather than saying a pool is warm that is gone", async () => {
  const sandbox = createWorkerSandbox({ pool: 2 });
  const ready = sandbox.ready();
  await sandbox[Symbol.asyncDispose]();
  await assert.rejects(
    ready,
    (error: unknown) =>
      error instanceof CordonError && error.code === "SANDBOX_DISPOSED",
  );
});

Deno.test("WorkerSandbox stops a timed-out guest stuck in a loop: its CPU use drops to nothing", async () => {
  await using sandbox = createWorkerSandbox({ concurrency: 1 });
  assert.equal(codeOf(await sandbox.run("export default 1;")), "ok");
  const hosts = childPids();
  assert.ok(hosts.length >= 1, "the worker host runs as a child process");

  // The measurement sees a spinning guest while it runs: it spans the
  // whole run, so a start slowed by the machine's load stays inside it...
  const spinning = sandbox.run("for (;;) {}", { timeoutMs: 3_000 });
  const whileSpinning = await ticksUntil(hosts, spinning);
  const result = await spinning;
  assert.equal(codeOf(result), "TIMEOUT");

  // ...and nothing after its timeout answered, once the pool has warmed
  // the worker that replaces it (that start is the host's own work).
  await sandbox.ready();
  const afterTimeout = await ticksDuring(hosts, 1_500);
  assert.ok(
    afterTimeout <= 10,
    `a timed-out guest must stop using CPU, used ${afterTimeout} ticks in 1.5 s`,
  );
  // How much the spinning guest shows depends on the machine's load: the
  // measure after its timeout, side by side, is the yardstick.
  assert.ok(
    whileSpinning > afterTimeout,
    `a spinning guest shows up as CPU use (${whileSpinning} ticks in its run, ${afterTimeout} in 1.5 s after)`,
  );
  assert.equal(codeOf(await sandbox.run("export default 2;")), "ok");
});

Deno.test("WorkerSandbox ends a guest's timers with its answer: nothing runs on after it", async () => {
  await using sandbox = createWorkerSandbox({ concurrency: 1 });
  const result = await sandbox.run(
    "setTimeout(() => { for (;;) {} }, 0);\nsetInterval(() => {}, 1);\nexport default 'answered';",
  );
  assert.equal(result.ok && result.value, "answered");
  const hosts = childPids();
  assert.ok(hosts.length >= 1);
  // The host starts and warms its next worker right after an answer: that
  // is its own work, so the measure starts once it is done.
  await sandbox.ready();
  const after = await ticksDuring(hosts, 1_500);
  assert.ok(after <= 10, `used ${after} ticks after its answer`);
});

Deno.test("WorkerSandbox caps a memory bomb with OUT_OF_MEMORY and keeps working", async () => {
  await using sandbox = createWorkerSandbox({
    memoryLimitBytes: 32 * 1024 * 1024,
  });
  const bomb = await sandbox.run(
    "const kept = [];\nfor (;;) kept.push(new Array(100_000).fill(Math.random()));",
    { timeoutMs: 20_000 },
  );
  assert.equal(codeOf(bomb), "OUT_OF_MEMORY");
  assert.equal(
    !bomb.ok && bomb.error.message,
    "The run exceeded its memory limit of 33554432 bytes: use less memory or raise memoryLimitBytes",
  );
  assert.equal(codeOf(await sandbox.run("export default 1;")), "ok");
});

Deno.test("WorkerSandbox gives a run on a reused host the room a fresh host gives it, after a guest left its bytes in the host", async () => {
  // Deno keeps a Blob's bytes in the host process, outside the worker, and
  // frees them when the Blob is collected, which never happens once its
  // worker has ended: each run of this guest leaves 48 MiB in its host. Its
  // peak, twice that while the bytes are copied, fits a fresh host's bound
  // (memoryLimitBytes plus 128 MiB); held over the guest's await, it did not
  // fit on a host that kept the last run's bytes, and every second run
  // answered OUT_OF_MEMORY.
  await using sandbox = createWorkerSandbox({
    pool: 1,
    concurrency: 1,
    memoryLimitBytes: 64 * 1024 * 1024,
  });
  const guest = `const bytes = new Uint8Array(48 * 1024 * 1024).fill(1);
globalThis.kept = new Blob([bytes]);
await new Promise((resolve) => setTimeout(resolve, 300));
export default kept.size;`;
  const answers = [];
  for (let i = 0; i < 4; i++) {
    const result = await sandbox.run(guest, { timeoutMs: 20_000 });
    answers.push(result.ok ? result.value : result.error.code);
  }
  assert.deepEqual(answers, Array(4).fill(48 * 1024 * 1024));
});

Deno.test("WorkerSandbox reports a guest that calls close() as a crash and keeps working", async () => {
  await using sandbox = createWorkerSandbox();
  const closed = await sandbox.run("close();\nexport default 1;");
  assert.equal(codeOf(closed), "SANDBOX_CRASHED");
  assert.equal(codeOf(await sandbox.run("export default 1;")), "ok");
});

Deno.test("a Deno without worker options ends only the worker host, with exit code 70", async () => {
  // The premise of SANDBOX_UNAVAILABLE: without the flag Deno ends the whole
  // process that creates a restricted worker. The sandbox starts its hosts
  // with the flag, so this is the host, never the caller.
  const { child, writer } = await startHost(
    [workerHostUrl(false)],
    '{"t":"run","id":"x","maxLogBytes":1,"source":"export default 1","context":null,"watch":{"timeoutMs":60000,"graceMs":200,"residentBytes":null,"pollMs":50}}\n',
    { stdout: "null", stderr: "piped" },
  );
  await writer.close();
  const { code } = await child.output();
  assert.equal(code, 70);
});

Deno.test("WorkerSandbox keeps nothing of a run once it answered: a pooled host's many runs do not grow the caller's heap", async () => {
  // Measured in a process of its own, whose collector the test may run.
  const dir = await Deno.makeTempDir();
  try {
    const script = `${dir}/runs.ts`;
    await Deno.writeTextFile(
      script,
      `import { createWorkerSandbox } from ${
        JSON.stringify(new URL("./worker_sandbox.ts", import.meta.url).href)
      };
const gc = (globalThis as unknown as { gc(): void }).gc;
const heap = () => { gc(); gc(); return Deno.memoryUsage().heapUsed; };
// A source of 200 KB of its own per run: what a run keeps shows at once.
const padding = "x".repeat(200_000);
const source = (i: number) => \`// \${i} \${padding}\\nexport default \${i};\`;
await using sandbox = createWorkerSandbox({ pool: 1, concurrency: 1 });
for (let i = 0; i < 10; i++) await sandbox.run(source(i));
const before = heap();
for (let i = 0; i < 60; i++) await sandbox.run(source(i));
console.log(heap() - before);
`,
    );
    const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--quiet",
        "--allow-all",
        "--v8-flags=--expose-gc",
        `--config=${fileURLToPath(new URL("../deno.json", import.meta.url))}`,
        script,
      ],
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.equal(code, 0, new TextDecoder().decode(stderr));
    const grown = Number(new TextDecoder().decode(stdout));
    // A run kept alive would hold its 200 KB source: 60 runs, 12 MB.
    assert.ok(grown < 4 * 1024 * 1024, `the heap grew by ${grown} bytes`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
