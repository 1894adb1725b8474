import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { createVmSandbox, type VmIsolation } from "./vm_sandbox.ts";

const PLUGIN = `
export const ping = () => "pong";
export function loop() { for (;;) {} }
export function never() { return new Promise(() => {}); }
export async function loopLater() { await null; for (;;) {} }
export function bomb() {
  const hoard = [];
  for (;;) hoard.push(new Array(1e5).fill(hoard.length));
}
`;

/** CPU time (user + system) this process has used, in clock ticks. */
function cpuTicks(): number {
  const stat = Deno.readTextFileSync("/proc/self/stat");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return Number(fields[11]) + Number(fields[12]);
}

function processExists(pid: number): boolean {
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    // A zombie has ended; it only waits to be reaped.
    return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z";
  } catch {
    return false;
  }
}

const hasProc = (() => {
  try {
    Deno.statSync("/proc/self/stat");
    return true;
  } catch {
    return false;
  }
})();

/** The budget of the calls meant to run away, given to each of them. */
const RUNAWAY_MS = 400;

/**
 * The sandboxes' limits.timeoutMs. It also bounds each new realm's module
 * evaluation and every call that checks the realm serves: those are not
 * what these tests time, and on a loaded machine (a load of 7 on two cores)
 * a fresh realm's evaluation of this module took up to 205 ms, half the
 * runaways' budget.
 */
const CALM_TIMEOUT_MS = 10_000;

function sandbox(
  memoryLimitBytes = 64 * 1024 * 1024,
  isolation: VmIsolation = "auto",
) {
  return createVmSandbox({
    pluginId: "budget",
    isolation,
    pluginModule: { kind: "source", source: PLUGIN, identifier: "budget.js" },
    limits: { timeoutMs: CALM_TIMEOUT_MS, memoryLimitBytes },
  });
}

for (const isolation of ["auto", "worker"] as const) {
  Deno.test({
    name:
      `createVmSandbox() with isolation ${isolation} stops an endless loop for real: TIMEOUT, the realm's process gone, no CPU used afterwards, the next call served`,
    ignore: !hasProc,
    async fn() {
      await using box = sandbox(64 * 1024 * 1024, isolation);
      assert.equal((await box.start()).ok, true);
      const pid = box.instruments.realmPid;
      const result = await box.invoke("loop", null, { timeoutMs: RUNAWAY_MS });
      assert.equal(result.ok ? "" : result.error.code, "TIMEOUT");
      // Whatever runs the realm must be gone, not merely forgotten.
      assert.equal(typeof pid, "number");
      assert.equal(processExists(pid!), false);
      const before = cpuTicks();
      await new Promise((resolve) => setTimeout(resolve, 1000));
      const used = cpuTicks() - before;
      // A looping thread left behind would use about 100 ticks per second.
      assert.ok(used < 30, `the host used ${used} CPU ticks after the timeout`);
      const next = await box.invoke("ping");
      assert.equal(next.ok && next.value, "pong");
      assert.equal(box.instruments.timeouts, 1);
      assert.equal(box.instruments.restarts, 1);
    },
  });
}

Deno.test("createVmSandbox() ends a never-settling promise and a loop in a promise job with TIMEOUT", async () => {
  await using box = sandbox();
  for (const name of ["never", "loopLater"]) {
    const result = await box.invoke(name, null, { timeoutMs: RUNAWAY_MS });
    assert.equal(result.ok ? "" : result.error.code, "TIMEOUT", name);
    const next = await box.invoke("ping");
    assert.equal(next.ok && next.value, "pong");
  }
  assert.equal(box.instruments.timeouts, 2);
});

Deno.test("createVmSandbox() ends a memory bomb with OUT_OF_MEMORY and serves the next call", async () => {
  await using box = createVmSandbox({
    pluginId: "bomb",
    pluginModule: { kind: "source", source: PLUGIN, identifier: "bomb.js" },
    limits: { timeoutMs: 20_000, memoryLimitBytes: 48 * 1024 * 1024 },
  });
  const result = await box.invoke("bomb");
  assert.equal(result.ok ? "" : result.error.code, "OUT_OF_MEMORY");
  const next = await box.invoke("ping");
  assert.equal(next.ok && next.value, "pong");
  assert.equal(box.instruments.outOfMemory, 1);
});

// Each fills a gigabyte or more outside V8's heap in one built-in call,
// which the heap cap does not count: a realm process is held by its
// resident memory instead. QuickJS has no WebAssembly, and its own memory
// holds a typed array's or a Blob's bytes.
const OFF_HEAP = `
export const ping = () => "pong";
export const typedArray = () => new Uint8Array(2 ** 30).fill(1).length;
export function wasmMemory() {
  const wasm = globalThis.WebAssembly;
  if (wasm === undefined) return "no WebAssembly";
  const memory = new wasm.Memory({ initial: 1, maximum: 65536 });
  memory.grow(65535);
  return new Uint8Array(memory.buffer).fill(1).length;
}
export function blob() {
  const part = new Uint8Array(1 << 20).fill(1);
  return new Blob(Array(1024).fill(part)).size;
}
`;

for (const isolation of ["auto", "worker", "quickjs"] as const) {
  Deno.test({
    name:
      `createVmSandbox() with isolation ${isolation} ends a plugin that fills a gigabyte outside V8's heap in one call (a typed array, WebAssembly memory, a Blob) with OUT_OF_MEMORY, and serves the next call`,
    // The bound of a realm process reads its resident memory from /proc.
    ignore: !hasProc && isolation !== "quickjs",
    async fn() {
      await using box = createVmSandbox({
        pluginId: "off-heap",
        isolation,
        pluginModule: {
          kind: "source",
          source: OFF_HEAP,
          identifier: "off_heap.js",
        },
        limits: {
          timeoutMs: CALM_TIMEOUT_MS * 2,
          memoryLimitBytes: 32 * 1024 * 1024,
        },
      });
      for (const name of ["typedArray", "wasmMemory", "blob"]) {
        const result = await box.invoke(name);
        const expected = isolation === "quickjs" && name === "wasmMemory"
          ? "no WebAssembly"
          : "OUT_OF_MEMORY";
        assert.equal(
          result.ok ? result.value : result.error.code,
          expected,
          name,
        );
        const next = await box.invoke("ping");
        assert.equal(next.ok && next.value, "pong", name);
      }
    },
  });
}

// Large blocks (8 MB each on V8) reach the cap in a few steps; each
// isolation must answer the cap's code when its deadline leaves room,
// whatever the tier's collector or allocator does at the cap.
const BLOCKS = `
export const ping = () => "pong";
export function fill() { const keep = []; for (;;) keep.push(new Array(1e6).fill(1)); }
`;

for (const isolation of ["auto", "worker", "quickjs"] as const) {
  Deno.test(`createVmSandbox() with isolation ${isolation} ends a plugin that fills large arrays under a 64 MiB cap with OUT_OF_MEMORY`, async () => {
    await using box = createVmSandbox({
      pluginId: "blocks",
      isolation,
      pluginModule: { kind: "source", source: BLOCKS, identifier: "blocks.js" },
      limits: {
        timeoutMs: CALM_TIMEOUT_MS * 2,
        memoryLimitBytes: 64 * 1024 * 1024,
      },
    });
    const result = await box.invoke("fill");
    assert.equal(result.ok ? "" : result.error.code, "OUT_OF_MEMORY");
    assert.equal(box.instruments.outOfMemory, 1);
    const next = await box.invoke("ping");
    assert.equal(next.ok && next.value, "pong");
  });
}

Deno.test("createVmSandbox() fails every call in flight with OUT_OF_MEMORY when the realm runs out of memory, on V8 and on QuickJS", async () => {
  // Memory is the realm's, not one call's: the host cannot tell which
  // call spent it, so the calls that waited get the same answer, where a
  // timeout is one call's and the others get SANDBOX_CRASHED.
  for (const isolation of [undefined, "quickjs"] as const) {
    await using box = createVmSandbox({
      pluginId: "bomb",
      pluginModule: { kind: "source", source: PLUGIN, identifier: "bomb.js" },
      limits: { timeoutMs: 20_000, memoryLimitBytes: 48 * 1024 * 1024 },
      ...(isolation === undefined ? {} : { isolation }),
    });
    assert.equal((await box.start()).ok, true);
    const waiting = box.invoke("never");
    const bomb = await box.invoke("bomb");
    assert.equal(bomb.ok ? "" : bomb.error.code, "OUT_OF_MEMORY", isolation);
    const waited = await waiting;
    assert.equal(
      waited.ok ? "" : waited.error.code,
      "OUT_OF_MEMORY",
      isolation,
    );
    const next = await box.invoke("ping");
    assert.equal(next.ok && next.value, "pong");
  }
});

Deno.test("createVmSandbox() fails every call in flight when one of them times out, then recovers", async () => {
  await using box = sandbox();
  const [looping, waiting] = await Promise.all([
    box.invoke("loopLater", null, { timeoutMs: RUNAWAY_MS }),
    box.invoke("never", null, { timeoutMs: CALM_TIMEOUT_MS }),
  ]);
  assert.equal(looping.ok ? "" : looping.error.code, "TIMEOUT");
  assert.equal(waiting.ok ? "" : waiting.error.code, "SANDBOX_CRASHED");
  const next = await box.invoke("ping");
  assert.equal(next.ok && next.value, "pong");
});

Deno.test("createVmSandbox() times out a call whose deadline comes before one already running", async () => {
  await using box = sandbox();
  assert.equal((await box.start()).ok, true);
  const waiting = box.invoke("never", null, { timeoutMs: 600_000 });
  const looping = box.invoke("loopLater", null, { timeoutMs: 300 });
  const [late, early] = await Promise.all([waiting, looping]);
  assert.equal(early.ok ? "" : early.error.code, "TIMEOUT");
  assert.match(early.ok ? "" : early.error.message, /300 ms/);
  // Not a speed check: a deadline watched only at the later call's time
  // would end it after ten minutes, far past any delay of a loaded machine.
  assert.ok(early.metrics.durationMs < 120_000);
  assert.equal(late.ok ? "" : late.error.code, "SANDBOX_CRASHED");
  const next = await box.invoke("ping");
  assert.equal(next.ok && next.value, "pong");
});

Deno.test("createVmSandbox() still times out a call that starts after quicker calls finished", async () => {
  await using box = sandbox();
  for (let i = 0; i < 20; i++) {
    const quick = await box.invoke("ping");
    assert.equal(quick.ok && quick.value, "pong");
  }
  await new Promise((resolve) => setTimeout(resolve, 150));
  const result = await box.invoke("never", null, { timeoutMs: RUNAWAY_MS });
  assert.equal(result.ok ? "" : result.error.code, "TIMEOUT");
  assert.equal(box.instruments.timeouts, 1);
});

Deno.test("createVmSandbox() times out a module whose top level never finishes", async () => {
  await using box = createVmSandbox({
    pluginId: "stuck",
    pluginModule: {
      kind: "source",
      source: "for (;;) {}\nexport const x = 1;",
      identifier: "stuck.js",
    },
    limits: { timeoutMs: 300, startupTimeoutMs: 2000 },
  });
  const started = await box.start();
  assert.equal(started.ok ? "" : started.error.code, "TIMEOUT");
});

Deno.test("createVmSandbox() on Deno runs the realm in a child process without permissions", async () => {
  await using box = sandbox();
  assert.equal((await box.start()).ok, true);
  const { isolation, realmPid, realmPermissions } = box.instruments;
  assert.equal(isolation, "process");
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

/** The files a process holds open, as their links read. */
function openFiles(pid: number): string[] {
  return [...Deno.readDirSync(`/proc/${pid}/fd`)].flatMap((entry) => {
    try {
      return [Deno.readLinkSync(`/proc/${pid}/fd/${entry.name}`)];
    } catch {
      return [];
    }
  });
}

/** The folder of Deno's caches, which a realm process of Deno keeps open. */
async function denoDir(): Promise<string> {
  const { stdout } = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json"],
    stdout: "piped",
    stderr: "null",
  }).output();
  const { denoDir } = JSON.parse(new TextDecoder().decode(stdout));
  assert.equal(typeof denoDir, "string", "deno info names no cache folder");
  return denoDir.endsWith("/") ? denoDir : `${denoDir}/`;
}

Deno.test({
  name:
    "createVmSandbox() on Deno speaks to a realm process through its pipes alone: it holds no shared file open",
  ignore: !hasProc,
  async fn() {
    await using box = sandbox();
    assert.equal((await box.start()).ok, true);
    for (let i = 0; i < 20; i++) {
      const result = await box.invoke("ping");
      assert.equal(result.ok && result.value, "pong");
    }
    // Deno's own caches aside, only pipes, sockets and devices: no file,
    // wherever the project or the temporary folder lies.
    const caches = await denoDir();
    const files = openFiles(box.instruments.realmPid!).filter((link) =>
      link.startsWith("/") && !link.startsWith("/dev/") &&
      !link.startsWith(caches)
    );
    assert.deepEqual(files, []);
  },
});

for (const isolation of ["process", "worker", "quickjs"] as const) {
  Deno.test({
    name:
      `createVmSandbox() with isolation ${isolation} starts its realm process without Deno's V8 code cache, a file of the cache folder every realm would share and hold open`,
    ignore: !hasProc,
    async fn() {
      await using box = sandbox(64 * 1024 * 1024, isolation);
      assert.equal((await box.start()).ok, true);
      const result = await box.invoke("ping");
      assert.equal(result.ok && result.value, "pong");
      const pid = box.instruments.realmPid;
      assert.equal(typeof pid, "number");
      const open = openFiles(pid!);
      assert.ok(open.length > 0, "the realm process holds no descriptor");
      assert.deepEqual(
        open.filter((link) => link.includes("v8_code_cache")),
        [],
      );
    },
  });
}

Deno.test("createVmSandbox() on Deno serves a host that may not write files", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const script = `${dir}/host.ts`;
    await Deno.writeTextFile(
      script,
      `import { createVmSandbox } from ${
        JSON.stringify(new URL("./mod.ts", import.meta.url).href)
      };
const box = createVmSandbox({ pluginId: "p", pluginModule: { kind: "source", identifier: "p.js", source: ${
        JSON.stringify(PLUGIN)
      } } });
const results = [];
for (let i = 0; i < 20; i++) results.push(await box.invoke("ping"));
results.push(await box.invoke("loop", null, { timeoutMs: 300 }));
results.push(await box.invoke("ping"));
let mayWrite = true;
try { Deno.makeTempDirSync(); } catch { mayWrite = false; }
console.log(JSON.stringify([mayWrite, ...results.map((r) => r.ok ? r.value : r.error.code)]));
await box.dispose();
`,
    );
    const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--quiet",
        "--no-prompt",
        `--config=${fileURLToPath(new URL("../deno.json", import.meta.url))}`,
        "--allow-read",
        "--allow-run",
        "--allow-env",
        "--deny-write",
        script,
      ],
      stdout: "piped",
      stderr: "piped",
    }).output();
    assert.equal(code, 0, new TextDecoder().decode(stderr));
    assert.deepEqual(JSON.parse(new TextDecoder().decode(stdout)), [
      false,
      ...Array(20).fill("pong"),
      "TIMEOUT",
      "pong",
    ]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("createVmSandbox() with limits.maxRestarts 0 refuses to start a realm that could not start again, saying that waiting does not help and stop() does", async () => {
  await using box = createVmSandbox({
    pluginId: "broken",
    pluginModule: {
      kind: "source",
      source:
        'throw new Error("cannot load");\nexport const ping = () => "pong";',
      identifier: "broken.js",
    },
    limits: { maxRestarts: 0, restartWindowMs: 1 },
  });
  const first = await box.invoke("ping");
  assert.equal(first.ok ? "" : first.error.code, "GUEST_ERROR");
  const refused = await box.invoke("ping");
  assert.equal(refused.ok ? "" : refused.error.code, "SANDBOX_RESTART_LIMITED");
  const { message } = refused.ok ? { message: "" } : refused.error;
  assert.match(message, /limits\.maxRestarts 0 never starts it again/);
  assert.match(message, /stop\(\) the sandbox/);
  assert.doesNotMatch(message, /retry later/);
  assert.equal(box.instruments.restartAvailableInMs, Infinity);
  await box.stop();
  const afresh = await box.invoke("ping");
  assert.equal(afresh.ok ? "" : afresh.error.code, "GUEST_ERROR");
});

/**
 * A plugin that sends host calls and then never reads their answers: the
 * host performs every call in flight (up to maxConcurrentProxyCalls) and
 * queues each answer for the realm.
 */
const HOARDER = `
import { fetch } from "cordon:host";
export async function hoard(count) {
  const answers = [];
  for (let i = 0; i < count; i++) {
    answers.push(fetch("http://cordon.test/").then(() => {}, () => {}));
  }
  await null;
  for (;;) {}
}
export const ping = () => "pong";
`;

for (const isolation of ["auto", "worker", "quickjs"] as const) {
  Deno.test(`createVmSandbox() with isolation ${isolation} ends a realm that leaves more of its host calls' answers unread than its memory limit allows as OUT_OF_MEMORY, where the host held every answer until the realm's deadline`, async () => {
    const memoryLimitBytes = 32 * 1024 * 1024;
    const body = new Uint8Array(1024 * 1024).fill(65);
    await using box = createVmSandbox({
      pluginId: "hoarder",
      isolation,
      pluginModule: { kind: "source", source: HOARDER, identifier: "h.js" },
      policy: { fetch: ["cordon.test"] },
      proxies: { fetch: () => Promise.resolve(new Response(body)) },
      // The deadline is a hang guard: the bound must come first. The
      // answers in flight may add up to all 200: the bound of those the
      // realm leaves unread is the one under test.
      limits: {
        timeoutMs: 60_000,
        memoryLimitBytes,
        maxProxyAnswerBytesInFlight: 256 * 1024 * 1024,
      },
    });
    // 200 answers of 1 MiB each are about 270 MiB once in base64, more
    // than the realm's limit plus what the host may queue for it.
    const result = await box.invoke("hoard", 200);
    assert.equal(result.ok ? "" : result.error.code, "OUT_OF_MEMORY");
    const next = await box.invoke("ping");
    assert.equal(next.ok && next.value, "pong");
  });
}

const MIB = 1024 * 1024;

/** A plugin that fetches `count` URLs at once, or one after another. */
const FETCHER = `
import { fetch } from "cordon:host";
const outcome = (call) => call.then(
  async (response) => (await response.bytes()).byteLength,
  (error) => ({ code: error.code, message: error.message }),
);
export const atOnce = ({ origin, count }) =>
  Promise.all(Array.from({ length: count }, (_, i) => outcome(fetch(origin + "/" + i))));
export async function inTurn({ origin, count }) {
  const outcomes = [];
  for (let i = 0; i < count; i++) outcomes.push(await outcome(fetch(origin + "/" + i)));
  return outcomes;
}
`;

/**
 * Serves bodies of `bodyBytes`: the first half at once and the rest once
 * `together` requests have come, so that many calls hold part of an answer
 * at the same time, as they do when a plugin fires its fetches at once.
 */
function serveHalves(bodyBytes: number, together: number) {
  const half = new Uint8Array(bodyBytes / 2).fill(65);
  let arrived = 0;
  let allArrived!: () => void;
  const gate = new Promise<void>((resolve) => allArrived = resolve);
  return Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    () => {
      if (++arrived === together) allArrived();
      const body = new ReadableStream<Uint8Array>({
        async start(controller) {
          controller.enqueue(half);
          await gate;
          controller.enqueue(half);
          controller.close();
        },
      });
      return new Response(body);
    },
  );
}

function fetcher(
  isolation: VmIsolation,
  port: number,
  limits: Record<string, number> = {},
) {
  return createVmSandbox({
    pluginId: "fetcher",
    isolation,
    pluginModule: { kind: "source", source: FETCHER, identifier: "f.js" },
    policy: { fetch: [`127.0.0.1:${port}`] },
    limits: { timeoutMs: 30_000, proxyTimeoutMs: 30_000, ...limits },
  });
}

for (const isolation of ["auto", "worker", "process", "quickjs"] as const) {
  Deno.test(`createVmSandbox() with isolation ${isolation} fails the fetches at once whose answers would make the host hold more than limits.maxProxyAnswerBytesInFlight with PROXY_LIMIT_EXCEEDED, where the host held every answer in flight`, async () => {
    const count = 24;
    await using server = serveHalves(MIB, count);
    const limit = 4 * MIB;
    await using box = fetcher(isolation, server.addr.port, {
      maxProxyAnswerBytesInFlight: limit,
    });
    const origin = `http://127.0.0.1:${server.addr.port}`;
    const result = await box.invoke("atOnce", { origin, count });
    assert.ok(result.ok, JSON.stringify(result));
    const outcomes = result
      .value as (number | { code: string; message: string })[];
    const read = outcomes.filter((outcome) => outcome === MIB);
    const refused = outcomes.filter((outcome) => typeof outcome === "object");
    // Half a body each, 8 of them fill the bound before any body is whole.
    assert.ok(
      refused.length >= count - limit / (MIB / 2),
      JSON.stringify(outcomes),
    );
    assert.ok(read.length >= 1, JSON.stringify(outcomes));
    assert.equal(read.length + refused.length, count);
    for (const failure of refused) {
      assert.equal(
        typeof failure === "object" && failure.code,
        "PROXY_LIMIT_EXCEEDED",
      );
      assert.match(
        typeof failure === "object" ? failure.message : "",
        /more than 4194304 bytes of answers on the host; make fewer large calls at once or raise limits\.maxProxyAnswerBytesInFlight/,
      );
    }
    const { proxyAnswerBytes, proxyAnswerBytesPeak } = box.instruments;
    assert.ok(proxyAnswerBytesPeak > limit / 2, `${proxyAnswerBytesPeak}`);
    assert.ok(proxyAnswerBytesPeak <= limit, `${proxyAnswerBytesPeak}`);
    assert.equal(proxyAnswerBytes, 0);
  });

  Deno.test(`createVmSandbox() with isolation ${isolation} reads large answers one after another within the default limits.maxProxyAnswerBytesInFlight`, async () => {
    const body = new Uint8Array(4 * MIB).fill(66);
    await using server = Deno.serve(
      { hostname: "127.0.0.1", port: 0, onListen: () => {} },
      () => new Response(body),
    );
    await using box = fetcher(isolation, server.addr.port, {
      memoryLimitBytes: 256 * MIB,
    });
    const origin = `http://127.0.0.1:${server.addr.port}`;
    const result = await box.invoke("inTurn", { origin, count: 3 });
    assert.deepEqual(result.ok && result.value, [4 * MIB, 4 * MIB, 4 * MIB]);
    assert.equal(box.instruments.proxyAnswerBytesPeak, 4 * MIB);
    assert.equal(box.instruments.proxyAnswerBytes, 0);
  });
}

Deno.test("createVmSandbox() lets limits.maxProxyAnswerBytesInFlight left unset follow a raised limits.maxFetchResponseBytes, where one answer larger than 16 MiB failed, and whose realm decoded a body into an array of numbers, some 24 bytes of heap a byte", async () => {
  const body = new Uint8Array(18 * MIB).fill(67);
  await using server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    () => new Response(body),
  );
  await using box = fetcher("worker", server.addr.port, {
    memoryLimitBytes: 128 * MIB,
    maxFetchResponseBytes: 20 * MIB,
  });
  const origin = `http://127.0.0.1:${server.addr.port}`;
  const result = await box.invoke("inTurn", { origin, count: 1 });
  assert.deepEqual(
    result.ok && result.value,
    [18 * MIB],
    JSON.stringify(result),
  );
  assert.equal(box.instruments.proxyAnswerBytesPeak, 18 * MIB);
});

const SENDER = `
import { fetch } from "cordon:host";
export async function send({ url, bytes }) {
  const response = await fetch(url, { method: "POST", body: new Uint8Array(bytes).fill(7) });
  return response.text();
}
`;

Deno.test("createVmSandbox() sends a 16 MiB request body from a realm with a 192 MiB memory limit, where encoding it as base64 held a string per three bytes", async () => {
  await using server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    async (request) => new Response(String((await request.bytes()).length)),
  );
  await using box = createVmSandbox({
    pluginId: "sender",
    isolation: "worker",
    pluginModule: { kind: "source", source: SENDER, identifier: "s.js" },
    policy: { fetch: [`127.0.0.1:${server.addr.port}`] },
    limits: {
      timeoutMs: 60_000,
      memoryLimitBytes: 192 * MIB,
      maxPayloadBytes: 32 * MIB,
    },
  });
  const url = `http://127.0.0.1:${server.addr.port}/`;
  const result = await box.invoke("send", { url, bytes: 16 * MIB });
  assert.deepEqual(
    result.ok && result.value,
    String(16 * MIB),
    JSON.stringify(result),
  );
});
