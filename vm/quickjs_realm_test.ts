import assert from "node:assert/strict";
import { CordonError } from "../protocol/cordon_error.ts";
import type { SandboxResult } from "../protocol/sandbox_result.ts";
import { createVmSandbox, type VmSandboxOptions } from "./vm_sandbox.ts";
import { quickjsRealmSpecifier } from "./_realm_transport.ts";
import { serveQuickJSRealm } from "./_quickjs_realm.ts";
import { encodeFrame } from "./_line_codec.ts";
import { registerVmSandboxCases } from "./node_test/vm_sandbox_cases.mjs";
import { until } from "./node_test/until.mjs";

// Every case the vm tier holds to, on a QuickJS realm.
registerVmSandboxCases(
  {
    createVmSandbox,
    isCordonError: (error: unknown) => error instanceof CordonError,
    isolation: "quickjs",
  },
  (name: string, fn: (t: Deno.TestContext) => unknown) =>
    Deno.test(`[quickjs] ${name}`, async (t) => {
      await fn(t);
    }),
);

/**
 * The budget of the calls that check a realm serves, given to each of them:
 * limits.timeoutMs is short here because it is the stretch the realm's
 * interrupt allows, and such a call may wait for that stretch or go to a new
 * realm, which a loaded machine takes a good part of it for.
 */
const CALM_CALL = { timeoutMs: 10_000 };

function quickjsSandbox(
  source: string,
  options: Partial<VmSandboxOptions> = {},
) {
  return createVmSandbox({
    pluginId: "qjs",
    pluginModule: { kind: "source", source, identifier: "qjs.js" },
    limits: { timeoutMs: 3000 },
    ...options,
    isolation: "quickjs",
  });
}

/** A QuickJS plugin realm served in this thread, and the frames it wrote. */
async function inThreadRealm() {
  const frames: string[] = [];
  const receive = await serveQuickJSRealm({
    write: (text) => frames.push(...text.split("\n").filter((line) => line)),
    outOfMemory: () => assert.fail("out of memory"),
  }, 64 * 1024 * 1024);
  return { frames, receive };
}

/** Loads `source` into the realm `receive` feeds; fails unless it loads. */
function load(
  receive: (chunk: string) => void,
  frames: string[],
  source: string,
  { timeoutMs, capabilities }: { timeoutMs: number; capabilities: string[] },
): void {
  const initJson = JSON.stringify({
    pluginId: "p",
    capabilities,
    randomKey: [...crypto.getRandomValues(new Uint32Array(8))],
    maxPayloadBytes: 1 << 20,
  });
  receive(encodeFrame(
    "D",
    0,
    "",
    JSON.stringify({ source, identifier: "p.js", timeoutMs, initJson }),
  ));
  assert.ok(frames.some((frame) => frame.startsWith("O0")), frames.join());
}

function codeOf(result: SandboxResult): string {
  assert.equal(result.ok, false, JSON.stringify(result));
  return result.ok ? "" : result.error.code;
}

function valueOf(result: SandboxResult): unknown {
  assert.equal(result.ok, true, JSON.stringify(result));
  return result.ok ? result.value : undefined;
}

Deno.test("a QuickJS realm runs in a process with every permission denied", async () => {
  await using sandbox = quickjsSandbox("export const ping = () => 'pong';");
  assert.equal(valueOf(await sandbox.invoke("ping")), "pong");
  const { isolation, realmPid, realmPermissions } = sandbox.instruments;
  assert.equal(isolation, "quickjs");
  assert.equal(typeof realmPid, "number");
  assert.deepEqual(realmPermissions, {
    read: "denied",
    write: "denied",
    net: "denied",
    env: "denied",
    run: "denied",
    ffi: "denied",
    sys: "denied",
  });
});

Deno.test("a QuickJS plugin's fetch, fs and capability calls outside its policy are PERMISSION_DENIED", async () => {
  let reached = 0;
  await using sandbox = quickjsSandbox(
    `import { fetch, fs, capabilities } from "cordon:host";
    export const tryFetch = () => fetch("http://127.0.0.1:9/x");
    export const tryRead = () => fs.readTextFile("/etc/passwd");
    export const tryWrite = () => fs.writeTextFile("/tmp/cordon-qjs", "x");
    export const tryCapability = () => capabilities.call("secrets.read", {});`,
    {
      proxies: {
        capabilities: {
          "secrets.read": () => {
            reached++;
            return "the secret";
          },
        },
      },
    },
  );
  for (const name of ["tryFetch", "tryRead", "tryWrite", "tryCapability"]) {
    assert.equal(codeOf(await sandbox.invoke(name)), "PERMISSION_DENIED", name);
  }
  assert.equal(reached, 0);
});

Deno.test("a QuickJS plugin's top-level endless loop is ended by timeoutMs, not startupTimeoutMs", async () => {
  await using sandbox = quickjsSandbox("for (;;) {}\nexport const x = 1;", {
    limits: { timeoutMs: 300, startupTimeoutMs: 120_000 },
  });
  const started = performance.now();
  const result = await sandbox.start();
  assert.equal(codeOf(result), "TIMEOUT");
  assert.match(
    result.ok ? "" : result.error.message,
    /module evaluation .* 300 ms/,
  );
  // Evaluation on top of startupTimeoutMs would take two minutes, far past
  // any start of a loaded machine: the bound catches that alone.
  assert.ok(performance.now() - started < 120_000);
});

Deno.test("a QuickJS realm interrupts a loop no call waits for, and the host replaces it", async () => {
  await using sandbox = quickjsSandbox(
    `export function spin() {
      Promise.resolve().then(() => { for (;;) {} });
      return "started";
    }
    export const ping = () => "pong";`,
    { limits: { timeoutMs: 500 } },
  );
  assert.equal(valueOf(await sandbox.invoke("spin")), "started");
  const spun = sandbox.instruments.realmPid;
  // Past the stretch the interrupt allows, the realm says that plugin code
  // no call waited for ran over, and is ended. The wait only bounds a
  // realm that never says so.
  await until(
    () => sandbox.instruments.realmPid === null,
    "the looping realm's end",
    30_000,
  );
  assert.equal(valueOf(await sandbox.invoke("ping", null, CALM_CALL)), "pong");
  assert.equal(sandbox.instruments.realmsStarted, 2);
  assert.notEqual(sandbox.instruments.realmPid, spun);
});

Deno.test("a QuickJS realm ends a stretch of promise jobs that each queue their successor, and the host replaces it", async () => {
  // Each job queues the next before it loops: QuickJS ends the loop as
  // the job's rejection, and the next job starts at once.
  await using sandbox = quickjsSandbox(
    `export function spin() {
      const renew = () => { Promise.resolve().then(renew); for (;;) {} };
      Promise.resolve().then(renew);
      return "started";
    }`,
    { limits: { timeoutMs: 500 } },
  );
  assert.equal(valueOf(await sandbox.invoke("spin")), "started");
  // No call follows: only the realm's own end of the stretch can tell the
  // host, which then ends it. A realm that never ends the stretch keeps
  // its core busy and its pid; the wait only bounds that.
  await until(
    () => sandbox.instruments.realmPid === null,
    "the looping realm's end",
    120_000,
  );
  assert.equal(sandbox.instruments.timeouts, 1);
});

Deno.test("a QuickJS realm whose left-over jobs run on while calls keep coming is replaced once no call waits", async () => {
  // Each call arrives while the jobs hold the realm, so the realm's word
  // that they ran over comes with a call pending: the host answers it,
  // then replaces the realm.
  await using sandbox = quickjsSandbox(
    `export function spin() {
      const renew = () => { Promise.resolve().then(renew); for (;;) {} };
      Promise.resolve().then(renew);
      return "started";
    }
    export const ping = () => "pong";`,
    { limits: { timeoutMs: 500 } },
  );
  assert.equal(valueOf(await sandbox.invoke("spin")), "started");
  const spun = sandbox.instruments.realmPid;
  const answers: string[] = [];
  for (let call = 0; call < 6; call++) {
    await new Promise((resolve) => setTimeout(resolve, 300));
    answers.push(
      String(valueOf(await sandbox.invoke("ping", null, CALM_CALL))),
    );
  }
  assert.deepEqual(answers, Array(6).fill("pong"));
  assert.ok(sandbox.instruments.realmsStarted >= 2);
  assert.notEqual(sandbox.instruments.realmPid, spun);
});

Deno.test("a QuickJS realm whose call answers within its stretch is kept, whatever the stretch took", async () => {
  // A call that waits keeps its realm: only code nobody waits for ends it.
  await using sandbox = quickjsSandbox(
    `export async function slow() {
      await null;
      const end = Date.now() + 300;
      while (Date.now() < end) {}
      return "done";
    }`,
    { limits: { timeoutMs: 2000 } },
  );
  assert.equal(valueOf(await sandbox.invoke("slow")), "done");
  assert.equal(valueOf(await sandbox.invoke("slow")), "done");
  assert.equal(sandbox.instruments.realmsStarted, 1);
});

Deno.test("a QuickJS plugin that runs out of memory is OUT_OF_MEMORY, and the next call gets a fresh realm", async () => {
  await using sandbox = quickjsSandbox(
    `let calls = 0;
    export const count = () => ++calls;
    export function hog() {
      const kept = [];
      for (;;) kept.push(new Array(1e5).fill(kept.length));
    }`,
    { limits: { timeoutMs: 30_000, memoryLimitBytes: 32 * 1024 * 1024 } },
  );
  assert.equal(valueOf(await sandbox.invoke("count")), 1);
  assert.equal(codeOf(await sandbox.invoke("hog")), "OUT_OF_MEMORY");
  assert.equal(valueOf(await sandbox.invoke("count")), 1);
  assert.equal(sandbox.instruments.realmsStarted, 2);
});

Deno.test("a QuickJS plugin that throws an error worded as QuickJS's out of memory gets GUEST_ERROR with its own name and message, and keeps its realm", async () => {
  await using sandbox = quickjsSandbox(
    `let calls = 0;
    export const count = () => ++calls;
    export function made() { throw new InternalError("out of memory"); }
    export function compiler() { throw new SyntaxError("out of memory"); }
    export function logged() {
      try {
        console.log({ toJSON() { throw new InternalError("out of memory"); } });
      } catch {}
      return "logged";
    }
    export function huge() { return new ArrayBuffer(1e9).byteLength; }`,
    { limits: { timeoutMs: 30_000, memoryLimitBytes: 32 * 1024 * 1024 } },
  );
  assert.equal(valueOf(await sandbox.invoke("count")), 1);
  const made = await sandbox.invoke("made");
  assert.ok(!made.ok);
  assert.deepEqual(
    [made.error.code, made.error.name, made.error.message],
    ["GUEST_ERROR", "InternalError", "out of memory"],
  );
  const compiler = await sandbox.invoke("compiler");
  assert.ok(!compiler.ok);
  assert.deepEqual(
    [compiler.error.code, compiler.error.name],
    ["GUEST_ERROR", "SyntaxError"],
  );
  assert.equal(valueOf(await sandbox.invoke("logged")), "logged");
  assert.equal(valueOf(await sandbox.invoke("count")), 2);
  assert.equal(sandbox.instruments.realmsStarted, 1);
  // A block larger than the limit is QuickJS's own error: the realm ends.
  assert.equal(codeOf(await sandbox.invoke("huge")), "OUT_OF_MEMORY");
  assert.equal(valueOf(await sandbox.invoke("count")), 1);
  assert.equal(sandbox.instruments.realmsStarted, 2);
});

Deno.test("a QuickJS plugin that asks for one block of 2 GiB or more, too large for its memory to be asked, is OUT_OF_MEMORY, and the next call gets a fresh realm", async () => {
  // The allocator refuses such a block before the memory is asked for
  // more, so no growth is refused: only its own state tells.
  await using sandbox = quickjsSandbox(
    `let calls = 0;
    export const count = () => ++calls;
    export function made() { throw new InternalError("out of memory"); }
    export const buffer = () => new ArrayBuffer(2 ** 31 - 1).byteLength;
    export const text = () => "\u0100".repeat(2 ** 30 - 1).length;
    export function caught() {
      try { new ArrayBuffer(2 ** 31 - 1); } catch {}
      return count();
    }
    export function caughtGrowth() {
      try { new ArrayBuffer(1e9); } catch {}
      return count();
    }`,
    { limits: { timeoutMs: 30_000, memoryLimitBytes: 32 * 1024 * 1024 } },
  );
  assert.equal(valueOf(await sandbox.invoke("count")), 1);
  assert.equal(codeOf(await sandbox.invoke("made")), "GUEST_ERROR");
  // A block past the limit, which the memory refused to grow for, caught
  // in an earlier call: the look-alike is still the plugin's own throw.
  assert.equal(valueOf(await sandbox.invoke("caughtGrowth")), 2);
  assert.equal(codeOf(await sandbox.invoke("made")), "GUEST_ERROR");
  assert.equal(sandbox.instruments.realmsStarted, 1);
  assert.equal(codeOf(await sandbox.invoke("buffer")), "OUT_OF_MEMORY");
  assert.equal(valueOf(await sandbox.invoke("count")), 1);
  assert.equal(sandbox.instruments.realmsStarted, 2);
  // Two bytes a character: a string of 2 GiB.
  assert.equal(codeOf(await sandbox.invoke("text")), "OUT_OF_MEMORY");
  assert.equal(valueOf(await sandbox.invoke("count")), 1);
  assert.equal(sandbox.instruments.realmsStarted, 3);
  // A failure the plugin catches keeps its realm.
  assert.equal(valueOf(await sandbox.invoke("caught")), 2);
  assert.equal(sandbox.instruments.realmsStarted, 3);
});

Deno.test("a QuickJS plugin whose module runs out of memory in small blocks while it loads is OUT_OF_MEMORY", async () => {
  // QuickJS cannot even make its error once small blocks no longer fit,
  // and describing what it threw needs memory too.
  for (
    const hog of [
      "const kept = []; for (;;) kept.push({ n: kept.length });",
      "let f = () => 0; for (;;) { const g = f; f = () => g() + 1; }",
    ]
  ) {
    await using sandbox = quickjsSandbox(
      `${hog}\nexport const count = () => 1;`,
      { limits: { timeoutMs: 30_000, memoryLimitBytes: 16 * 1024 * 1024 } },
    );
    assert.equal(codeOf(await sandbox.invoke("count")), "OUT_OF_MEMORY", hog);
  }
});

Deno.test("a QuickJS plugin whose regular expression compiles past its memory limit is OUT_OF_MEMORY, and the next call gets a fresh realm", async () => {
  // QuickJS's regular expression compiler throws a SyntaxError with the
  // message "out of memory" when the compiled code does not fit.
  await using sandbox = quickjsSandbox(
    `let calls = 0;
    export const count = () => ++calls;
    export const compile = () => new RegExp("(?:a|b)".repeat(8e5)).test("c");`,
    { limits: { timeoutMs: 30_000, memoryLimitBytes: 16 * 1024 * 1024 } },
  );
  assert.equal(valueOf(await sandbox.invoke("count")), 1);
  assert.equal(codeOf(await sandbox.invoke("compile")), "OUT_OF_MEMORY");
  assert.equal(valueOf(await sandbox.invoke("count")), 1);
  assert.equal(sandbox.instruments.realmsStarted, 2);
});

Deno.test("a QuickJS plugin cannot reach its realm's memory past a buffer: SharedArrayBuffer's grow() refuses, and with() copies nothing past a shrunk buffer", async () => {
  // QuickJS's own grow() kept the first allocation, and its with() copied
  // the length it took before a valueOf shrank the buffer: both let the
  // plugin read (grow() also write) the engine's memory.
  await using sandbox = quickjsSandbox(
    `export function grow() {
      const buffer = new SharedArrayBuffer(16, { maxByteLength: 1 << 20 });
      try {
        buffer.grow(1 << 20);
      } catch (error) {
        return [error.name, buffer.byteLength];
      }
      return ["grew", buffer.byteLength];
    }
    export function copy() {
      const buffer = new ArrayBuffer(4096, { maxByteLength: 4096 });
      const bytes = new Uint8Array(buffer).fill(0x41);
      const kept = [];
      const copied = bytes.with(0, { valueOf() {
        buffer.resize(8);
        for (let i = 0; i < 500; i++) kept.push("Z".repeat(40) + i);
        return 1;
      } });
      let beyond = 0;
      for (let i = 8; i < copied.length; i++) if (copied[i] !== 0) beyond++;
      return [copied.length, beyond];
    }`,
  );
  assert.deepEqual(valueOf(await sandbox.invoke("grow")), ["TypeError", 16]);
  assert.deepEqual(valueOf(await sandbox.invoke("copy")), [4096, 0]);
});

Deno.test("a QuickJS plugin's BigInt.asUintN answers no negative number, and its iterator helpers close an array's iterator", async () => {
  // QuickJS's own asUintN kept the top bit of its result as the sign, and
  // its helpers' return() called the array iterator's return method, which
  // it has none of.
  await using sandbox = quickjsSandbox(
    `export function unsigned() {
      return [BigInt.asUintN(64, -1n), BigInt.asUintN(32, 2n ** 64n - 1n)].map(String);
    }
    export function first() {
      const [value] = [1, 2, 3].values().map((n) => n * 2);
      return value;
    }`,
  );
  assert.deepEqual(valueOf(await sandbox.invoke("unsigned")), [
    String(2n ** 64n - 1n),
    String(2n ** 32n - 1n),
  ]);
  assert.equal(valueOf(await sandbox.invoke("first")), 2);
});

Deno.test("a QuickJS plugin that catches out of memory and asks again for blocks larger than what is left is OUT_OF_MEMORY", async () => {
  // Each block fails before the memory reaches its cap, so the cap alone
  // never ended the realm: the call ran to its deadline as TIMEOUT.
  await using sandbox = quickjsSandbox(
    `export function hog() {
      const kept = [];
      for (;;) { try { kept.push("x".repeat(3e7) + kept.length); } catch {} }
    }`,
    { limits: { timeoutMs: 20_000, memoryLimitBytes: 64 * 1024 * 1024 } },
  );
  assert.equal(codeOf(await sandbox.invoke("hog")), "OUT_OF_MEMORY");
});

Deno.test("a QuickJS plugin whose memory is full when the host copies a call's payload in is OUT_OF_MEMORY, not a write at address 0", async () => {
  // quickjs-emscripten copies the payload's text into a block from the
  // module's allocator and did not check for the 0 a full memory answers:
  // the text landed over the engine's own state and the realm crashed.
  await using sandbox = quickjsSandbox(
    `const kept = [];
    export function fill() {
      try { for (;;) kept.push(new Uint8Array(16384)); } catch { return kept.length; }
    }
    export const size = (text) => text.length;`,
    { limits: { timeoutMs: 10_000, memoryLimitBytes: 8 * 1024 * 1024 } },
  );
  assert.equal(typeof valueOf(await sandbox.invoke("fill")), "number");
  const result = await sandbox.invoke("size", "x".repeat(64 * 1024));
  assert.equal(codeOf(result), "OUT_OF_MEMORY");
  assert.equal(valueOf(await sandbox.invoke("size", "xyz")), 3);
});

Deno.test("a QuickJS plugin that calls the host in a loop it never leaves gets no more answers queued than the host bounds, and the next call gets a fresh realm", async () => {
  let performed = 0;
  await using sandbox = quickjsSandbox(
    `import { capabilities } from "cordon:host";
    export const ping = () => "pong";
    export async function flood() {
      for (;;) {
        capabilities.call("page", null).catch(() => {});
        await null;
      }
    }`,
    {
      limits: { timeoutMs: 2000 },
      policy: { capabilities: ["page"] },
      proxies: {
        capabilities: {
          page: () => {
            performed++;
            return "x".repeat(4096);
          },
        },
      },
    },
  );
  assert.notEqual(codeOf(await sandbox.invoke("flood")), undefined);
  // The realm reads none of the answers while it loops: past 16 MiB of
  // them the host stops reading its calls, so at most about 4,100 answers
  // of 4 KiB, plus the calls of the frames read before that, are made.
  assert.ok(performed < 8192, `the host made ${performed} calls`);
  assert.equal(valueOf(await sandbox.invoke("ping")), "pong");
});

Deno.test("a QuickJS plugin whose memoryLimitBytes is above the 2 GiB WebAssembly holds starts and answers, up to the largest limit", async () => {
  // Its memory's maximum was the limit's, which the module refused to
  // link: every call answered SANDBOX_CRASHED. From 4 GiB on, QuickJS's own
  // limit (a 32-bit size) wrapped: 4 GiB became 0 and no realm started,
  // 4 GiB + 1 MiB refused a string of 2 MB.
  for (
    const memoryLimitBytes of [
      3 * 1024 ** 3,
      4 * 1024 ** 3,
      4 * 1024 ** 3 + 1024 ** 2,
      64 * 1024 ** 3,
    ]
  ) {
    await using sandbox = quickjsSandbox(
      "export const text = () => 'x'.repeat(2e6).length;",
      { limits: { timeoutMs: 30_000, memoryLimitBytes } },
    );
    assert.equal(
      valueOf(await sandbox.invoke("text")),
      2e6,
      String(memoryLimitBytes),
    );
    assert.equal(sandbox.instruments.realmsStarted, 1);
  }
});

Deno.test("the QuickJS realm runs by its jsr: export when the package came from JSR, and by its file otherwise", () => {
  assert.equal(
    quickjsRealmSpecifier(
      new URL("https://jsr.io/@cordon/cordon/0.2.0/vm/_quickjs_realm.ts"),
    ),
    "jsr:@cordon/cordon@0.2.0/vm/quickjs-realm",
  );
  const local = new URL("file:///srv/app/vm/_quickjs_realm.ts");
  assert.equal(quickjsRealmSpecifier(local), local.href);
});

Deno.test("a QuickJS realm sends console lines in batches, each before the proxy call or answer that follows it", async () => {
  const { frames, receive } = await inThreadRealm();
  const source = `import { capabilities } from "cordon:host";
    export function flood(n) {
      for (let i = 0; i < n; i++) console.log(i);
      return "flooded";
    }
    export async function chat() {
      console.info("before");
      await capabilities.call("mark", null);
      console.warn("after");
      return "chatted";
    }`;
  load(receive, frames, source, { timeoutMs: 5000, capabilities: ["mark"] });
  const kinds = (from: number) => frames.slice(from).map((frame) => frame[0]);

  // Far fewer crossings than lines show only in time; the order shows here.
  let from = frames.length;
  receive(encodeFrame("I", 1, "flood", "3000"));
  assert.deepEqual(kinds(from), [...Array(3000).fill("L"), "R"]);
  assert.equal(frames[from], 'L0\tlog\t"0"');
  assert.equal(frames[from + 2999], 'L0\tlog\t"2999"');

  from = frames.length;
  receive(encodeFrame("I", 2, "chat", "null"));
  assert.deepEqual(frames.slice(from), [
    'L0\tinfo\t"before"',
    "C1\tcapability\t" + JSON.stringify({ name: "mark", args: null }),
  ]);
  from = frames.length;
  receive(encodeFrame("S", 1, "", "null"));
  assert.deepEqual(frames.slice(from), [
    'L0\twarn\t"after"',
    'R2\t\t"chatted"',
  ]);
});

Deno.test("a QuickJS realm bounds the plugin code it runs with no call waiting by timeoutMs in all, however many host answers renew it", async () => {
  const { frames, receive } = await inThreadRealm();
  // Each answer of the host starts a stretch of 120 ms, under the 200 ms
  // of timeoutMs, that asks the host again.
  const source = `import { capabilities } from "cordon:host";
    const spinThenCall = () => {
      const end = Date.now() + 120;
      while (Date.now() < end) {}
      return capabilities.call("c", null).then(spinThenCall);
    };
    export function go() {
      capabilities.call("c", null).then(spinThenCall);
      return "going";
    }`;
  load(receive, frames, source, { timeoutMs: 200, capabilities: ["c"] });
  receive(encodeFrame("I", 1, "go", "null"));
  assert.ok(frames.includes('R1\t\t"going"'), frames.join());
  // The second stretch after the answer passes 200 ms in all: the realm
  // says it ran over, and the host replaces it. The plugin times its
  // stretches by Date.now() and the realm by performance.now(), and a
  // machine's wall clock may step while the monotonic one does not, so a
  // few more answers are given before the test calls it a failure: were
  // each stretch bounded alone, 120 ms would never be stopped.
  for (let settled = 0; settled < 8; settled++) {
    if (frames.includes("T0\t\t")) break;
    const calls = frames.filter((frame) => frame.startsWith("C"));
    receive(encodeFrame("S", calls.length, "", "null"));
  }
  assert.ok(frames.includes("T0\t\t"), frames.join());
});

Deno.test("a QuickJS realm gives the plugin code its module left behind all of timeoutMs, however long the realm lived before its load", async () => {
  const { frames, receive } = await inThreadRealm();
  // The realm has lived longer than timeoutMs when the load comes.
  const timeoutMs = 500;
  while (performance.now() <= 2 * timeoutMs) {
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  // The answer's job runs long enough for the realm to look at the time.
  const source = `import { capabilities } from "cordon:host";
    capabilities.call("c", null).then(() => {
      let sum = 0;
      for (let i = 0; i < 200000; i++) sum += i;
      console.log("done " + sum);
    });
    export const f = () => 1;`;
  load(receive, frames, source, { timeoutMs: timeoutMs, capabilities: ["c"] });
  const from = frames.length;
  receive(encodeFrame("S", 1, "", "null"));
  assert.deepEqual(frames.slice(from), ['L0\tlog\t"done 19999900000"']);
});

Deno.test("a QuickJS realm answers STACK_OVERFLOW for plugin source whose parsing runs out of the host's stack", async () => {
  const { frames, receive } = await inThreadRealm();
  // QuickJS's parser recurses on the host's native stack, in WebAssembly,
  // before its own stack check: 20,000 parentheses exhaust any thread's.
  const source = `export const v = ${"(".repeat(20_000)}1${
    ")".repeat(20_000)
  };`;
  const initJson = JSON.stringify({
    pluginId: "p",
    capabilities: [],
    randomKey: [...crypto.getRandomValues(new Uint32Array(8))],
    maxPayloadBytes: 1 << 20,
  });
  receive(encodeFrame(
    "D",
    0,
    "",
    JSON.stringify({ source, identifier: "p.js", timeoutMs: 3000, initJson }),
  ));
  const failure = frames.find((frame) => frame.startsWith("X0"));
  assert.ok(failure !== undefined, frames.join());
  const detail = JSON.parse(failure.slice(failure.lastIndexOf("\t") + 1));
  assert.equal(detail.code, "STACK_OVERFLOW");
  assert.match(detail.message, /plugin source is nested too deep/);
});

Deno.test("a QuickJS plugin whose normalize() runs out of memory without making an error is OUT_OF_MEMORY, and the next call gets a fresh realm", async () => {
  // QuickJS's Unicode normalisation fails an allocation without making an
  // error, and throws its uninitialized marker, no JavaScript value: the
  // call answered GUEST_ERROR ("[unsupported type]") and kept the realm.
  await using sandbox = quickjsSandbox(
    `let calls = 0;
    export const count = () => ++calls;
    export const decompose = () => "\\u00e9".repeat(4e6).normalize("NFD").length;`,
    { limits: { timeoutMs: 30_000, memoryLimitBytes: 32 * 1024 * 1024 } },
  );
  assert.equal(valueOf(await sandbox.invoke("count")), 1);
  assert.equal(codeOf(await sandbox.invoke("decompose")), "OUT_OF_MEMORY");
  assert.equal(valueOf(await sandbox.invoke("count")), 1);
  assert.equal(sandbox.instruments.realmsStarted, 2);
});

Deno.test("a QuickJS plugin whose console argument, answer or thrown value runs out of memory in localeCompare is OUT_OF_MEMORY, and the next call gets a fresh realm", async () => {
  // localeCompare's normalisation fails without making an error, so
  // QuickJS throws its uninitialized marker from a toJSON or a getter the
  // realm runs: the console logged "[unserializable object]" and kept the
  // realm, and an answer or a thrown value answered GUEST_ERROR.
  const lines: string[] = [];
  await using sandbox = quickjsSandbox(
    `let calls = 0;
    const compare = () => 'a'.repeat(6e6).localeCompare('b');
    export const count = () => ++calls;
    export const logs = () => { console.log({ toJSON: compare }); return "logged"; };
    export const answers = () => ({ toJSON: compare });
    export const answersGetter = () => ({ get x() { return compare(); } });
    export const throws = () => { throw { get message() { return compare(); } }; };`,
    {
      limits: { timeoutMs: 30_000, memoryLimitBytes: 32 * 1024 * 1024 },
      onLog: (entry) => lines.push(entry.message),
    },
  );
  const names = ["logs", "answers", "answersGetter", "throws"];
  for (const [i, name] of names.entries()) {
    assert.equal(valueOf(await sandbox.invoke("count")), 1, name);
    assert.equal(sandbox.instruments.realmsStarted, i + 1, name);
    assert.equal(codeOf(await sandbox.invoke(name)), "OUT_OF_MEMORY", name);
  }
  assert.equal(valueOf(await sandbox.invoke("count")), 1);
  assert.equal(sandbox.instruments.realmsStarted, names.length + 1);
  assert.deepEqual(lines, []);
});

Deno.test("a QuickJS plugin's structuredClone() lets go of what it copied when it answers, so the same realm's later calls clone as much again", async () => {
  // The clone's own functions hold one another, and with them the graph
  // and its copy, in a cycle QuickJS frees only when its collector runs:
  // a deep graph of proxies cloned in each call ran the realm out of
  // memory on the third call, where the other isolations answered each.
  await using sandbox = quickjsSandbox(
    `export function cloneDeep() {
      let graph = {};
      for (let i = 0; i < 1e5; i++) graph = new Proxy({ graph }, {});
      structuredClone(graph);
      return "cloned";
    }`,
    { limits: { timeoutMs: 30_000, memoryLimitBytes: 64 * 1024 * 1024 } },
  );
  for (let call = 1; call <= 4; call++) {
    const result = await sandbox.invoke("cloneDeep");
    assert.equal(valueOf(result), "cloned", `call ${call}`);
  }
  assert.equal(sandbox.instruments.realmsStarted, 1);
});
