import assert from "node:assert/strict";
import { test } from "node:test";
import fs from "node:fs";
import http from "node:http";
import { fileURLToPath } from "node:url";
import { cpuTicks, hasProc, sleep, vm } from "./_helpers.mjs";
import { registerVmSandboxCases } from "./vm_sandbox_cases.mjs";

const { createVmSandbox } = vm;

// The cases that hold on every runtime, shared with vm/vm_sandbox_test.ts.
// The Node build does not export CordonError, so its name stands for it.
registerVmSandboxCases(
  {
    createVmSandbox,
    isCordonError: (error) =>
      error instanceof Error && error.name === "CordonError",
  },
  (name, fn) => test(name, (t) => fn({ step: (n, f) => t.test(n, f) })),
);

// The rest is Node's own: the worker thread it can isolate with, the host's
// CPU time after a timeout and the files a realm process holds.

/**
 * The budget of the calls meant to run away, given to each of them: the
 * sandboxes keep a calm limits.timeoutMs, which also bounds a new realm's
 * module evaluation and the call that checks the realm serves again, and
 * which a loaded machine can take a good part of 400 ms for.
 */
const RUNAWAY_MS = 400;

function sandboxOf(source, options = {}) {
  return createVmSandbox({
    pluginId: "node-test",
    pluginModule: { kind: "source", source, identifier: "node_test.js" },
    limits: { timeoutMs: 3000 },
    ...options,
  });
}

for (const [isolation, runsOn] of [["auto", "process"], ["thread", "thread"]]) {
  test(`createVmSandbox() on Node runs the realm of isolation ${isolation} on ${runsOn} and returns JSON values`, async () => {
    const sandbox = sandboxOf("export const add = ({ a, b }) => a + b;", {
      isolation,
    });
    try {
      const result = await sandbox.invoke("add", { a: 2, b: 40 });
      assert.equal(result.ok, true);
      assert.equal(result.value, 42);
      assert.equal(sandbox.instruments.isolation, runsOn);
      assert.equal(result.metrics.tier, "vm");
    } finally {
      await sandbox.dispose();
    }
  });
}

for (const isolation of ["auto", "thread"]) {
  test(
    `createVmSandbox() on Node with isolation ${isolation} stops an endless loop for real and serves the next call`,
    {
      skip: !hasProc(),
    },
    async () => {
      const sandbox = sandboxOf(
        "export function loop() { for (;;) {} }\nexport const ping = () => 'pong';",
        { isolation },
      );
      try {
        assert.equal((await sandbox.start()).ok, true);
        const result = await sandbox.invoke("loop", null, {
          timeoutMs: RUNAWAY_MS,
        });
        assert.equal(result.error?.code, "TIMEOUT");
        const before = cpuTicks();
        await sleep(1000);
        const used = cpuTicks() - before;
        assert.ok(
          used < 30,
          `the host used ${used} CPU ticks after the timeout`,
        );
        const next = await sandbox.invoke("ping");
        assert.equal(next.value, "pong");
        assert.equal(sandbox.instruments.restarts, 1);
      } finally {
        await sandbox.dispose();
      }
    },
  );

  test(`createVmSandbox() on Node with isolation ${isolation} ends a never-settling promise and a memory bomb with codes`, async () => {
    const sandbox = sandboxOf(
      `export const never = () => new Promise(() => {});
     export function bomb() { const a = []; for (;;) a.push(new Array(1e5).fill(a.length)); }
     export const ping = () => "pong";`,
      {
        isolation,
        limits: { timeoutMs: 5000, memoryLimitBytes: 48 * 1024 * 1024 },
      },
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
}

test("createVmSandbox() on Node ends a realm process that leaves more of its host calls' answers unread than its memory limit allows as OUT_OF_MEMORY", async () => {
  const body = new Uint8Array(1024 * 1024).fill(65);
  const sandbox = sandboxOf(
    `import { fetch } from "cordon:host";
     export async function hoard(count) {
       for (let i = 0; i < count; i++) fetch("http://cordon.test/").catch(() => {});
       await null;
       for (;;) {}
     }
     export const ping = () => "pong";`,
    {
      policy: { fetch: ["cordon.test"] },
      proxies: { fetch: () => Promise.resolve(new Response(body)) },
      // The deadline is a hang guard: the bound must come first. The
      // answers in flight may add up to all 200: the bound of those the
      // realm leaves unread is the one under test.
      limits: {
        timeoutMs: 60_000,
        memoryLimitBytes: 32 * 1024 * 1024,
        maxProxyAnswerBytesInFlight: 256 * 1024 * 1024,
      },
    },
  );
  try {
    // About 270 MiB of answers in base64, which the realm never reads.
    const result = await sandbox.invoke("hoard", 200);
    assert.equal(result.error?.code, "OUT_OF_MEMORY");
    assert.equal((await sandbox.invoke("ping")).value, "pong");
  } finally {
    await sandbox.dispose();
  }
});

test("createVmSandbox() on Node fails the fetches at once whose answers would make the host hold more than limits.maxProxyAnswerBytesInFlight with PROXY_LIMIT_EXCEEDED", async () => {
  const count = 24;
  const half = Buffer.alloc(512 * 1024, 65);
  // Half of each body at once and the rest once every request came, so
  // that many calls hold part of an answer at the same time.
  let arrived = 0;
  let allArrived;
  const gate = new Promise((resolve) => allArrived = resolve);
  const server = http.createServer((_request, response) => {
    if (++arrived === count) allArrived();
    response.write(half);
    gate.then(() => response.end(half));
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address();
  const limit = 4 * 1024 * 1024;
  const sandbox = sandboxOf(
    `import { fetch } from "cordon:host";
     export const atOnce = (count) => Promise.all(Array.from({ length: count }, (_, i) =>
       fetch("http://127.0.0.1:${port}/" + i).then(
         async (response) => (await response.bytes()).byteLength,
         (error) => error.code,
       )));`,
    {
      policy: { fetch: [`127.0.0.1:${port}`] },
      limits: {
        timeoutMs: 30_000,
        proxyTimeoutMs: 30_000,
        maxProxyAnswerBytesInFlight: limit,
      },
    },
  );
  try {
    const result = await sandbox.invoke("atOnce", count);
    assert.ok(result.ok, JSON.stringify(result));
    const read = result.value.filter((outcome) => outcome === 1024 * 1024);
    const refused = result.value.filter((outcome) =>
      outcome === "PROXY_LIMIT_EXCEEDED"
    );
    // Half a body each, 8 of them fill the bound before any body is whole.
    assert.ok(refused.length >= count - 8, JSON.stringify(result.value));
    assert.ok(read.length >= 1, JSON.stringify(result.value));
    assert.equal(read.length + refused.length, count);
    const { proxyAnswerBytes, proxyAnswerBytesPeak } = sandbox.instruments;
    assert.ok(proxyAnswerBytesPeak > limit / 2, `${proxyAnswerBytesPeak}`);
    assert.ok(proxyAnswerBytesPeak <= limit, `${proxyAnswerBytesPeak}`);
    assert.equal(proxyAnswerBytes, 0);
  } finally {
    await sandbox.dispose();
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

test("createVmSandbox() on Node can host the realm in a child process too", async () => {
  const sandbox = sandboxOf(
    "export const ping = () => 'pong';\nexport function loop() { for (;;) {} }",
    { isolation: "process" },
  );
  try {
    for (let i = 0; i < 20; i++) {
      assert.equal((await sandbox.invoke("ping")).value, "pong");
    }
    assert.equal(sandbox.instruments.isolation, "process");
    assert.equal(typeof sandbox.instruments.realmPid, "number");
    if (fs.existsSync("/proc/self/fd")) {
      // The realm shares no file with the host: it speaks through its pipes.
      const pid = sandbox.instruments.realmPid;
      const files = fs.readdirSync(`/proc/${pid}/fd`)
        .map((fd) => {
          try {
            return fs.readlinkSync(`/proc/${pid}/fd/${fd}`);
          } catch {
            return "";
          }
        })
        .filter((link) => link.startsWith("/") && !link.startsWith("/dev/"));
      assert.deepEqual(files, []);
    }
    const loop = await sandbox.invoke("loop", null, { timeoutMs: RUNAWAY_MS });
    assert.equal(loop.error?.code, "TIMEOUT");
    assert.equal((await sandbox.invoke("ping")).value, "pong");
  } finally {
    await sandbox.dispose();
  }
});

test(
  "createVmSandbox() on Node starts its realm process under Node's permission model with nothing granted",
  { skip: !hasProc() },
  async () => {
    const { spawnSync } = await import("node:child_process");
    const sandbox = sandboxOf("export const ping = () => 'pong';");
    let realmFlags;
    try {
      assert.equal((await sandbox.invoke("ping")).value, "pong");
      const argv = fs.readFileSync(
        `/proc/${sandbox.instruments.realmPid}/cmdline`,
        "utf8",
      ).split("\0");
      realmFlags = argv.slice(1, argv.indexOf("-e"));
    } finally {
      await sandbox.dispose();
    }
    // The realm's own flags, given to a program that tries what a plugin
    // escaping node:vm would: read a file and start a process.
    const attempt = `
      const tries = { read: () => require("node:fs").readFileSync("/etc/hostname"),
        spawn: () => require("node:child_process").spawnSync("true") };
      const denied = Object.entries(tries).filter(([, f]) => {
        try { f(); return false; } catch (error) { return error.code === "ERR_ACCESS_DENIED"; }
      });
      console.log(JSON.stringify(denied.map(([name]) => name)));`;
    const { stdout, status, stderr } = spawnSync(
      process.execPath,
      [...realmFlags, "-e", attempt],
      { encoding: "utf8" },
    );
    assert.equal(status, 0, stderr);
    assert.deepEqual(JSON.parse(stdout), ["read", "spawn"]);
  },
);

test("createVmSandbox() on Node without --experimental-vm-modules runs a realm process, and on a thread says which flag the host needs, with VM_MODULES_UNAVAILABLE", async () => {
  const { spawnSync } = await import("node:child_process");
  const entry = new URL("../../dist/node/vm/mod.js", import.meta.url).href;
  const script = `
    const { createVmSandbox } = await import(${JSON.stringify(entry)});
    const outcomes = [];
    for (const isolation of ["auto", "thread"]) {
      const box = createVmSandbox({ pluginId: "p", isolation, pluginModule: { kind: "source", source: "export const x = () => 1;", identifier: "p.js" } });
      const result = await box.invoke("x");
      await box.dispose();
      outcomes.push(result.ok ? result.value : result.error);
    }
    console.log(JSON.stringify(outcomes));`;
  const { stdout, status, stderr } = spawnSync(
    process.execPath,
    ["--input-type=module", "-e", script],
    { encoding: "utf8" },
  );
  assert.equal(status, 0, stderr);
  const [inProcess, onThread] = JSON.parse(stdout);
  assert.equal(inProcess, 1);
  assert.equal(onThread.code, "VM_MODULES_UNAVAILABLE");
  assert.match(onThread.message, /--experimental-vm-modules/);
});

test("createVmSandbox() on Node runs a thread realm for a host given --experimental-vm-modules in NODE_OPTIONS", async () => {
  const { spawnSync } = await import("node:child_process");
  const entry = new URL("../../dist/node/vm/mod.js", import.meta.url).href;
  const script = `
    const { createVmSandbox } = await import(${JSON.stringify(entry)});
    const box = createVmSandbox({ pluginId: "p", isolation: "thread", pluginModule: { kind: "source", source: "export const x = () => 1;", identifier: "p.js" } });
    const result = await box.invoke("x");
    await box.dispose();
    console.log(JSON.stringify(result.ok ? result.value : result.error));`;
  const { stdout, status, stderr } = spawnSync(
    process.execPath,
    ["--input-type=module", "-e", script],
    {
      encoding: "utf8",
      env: {
        ...process.env,
        NODE_OPTIONS: "--experimental-vm-modules --no-warnings",
      },
    },
  );
  assert.equal(status, 0, stderr);
  assert.deepEqual(JSON.parse(stdout), 1);
});

test("createVmSandbox() on Node serves a host started with V8 flags, which a worker thread may not be given", async () => {
  const { spawnSync } = await import("node:child_process");
  const entry = new URL("../../dist/node/vm/mod.js", import.meta.url).href;
  const script = `
    const { createVmSandbox } = await import(${JSON.stringify(entry)});
    const box = createVmSandbox({ pluginId: "p", pluginModule: { kind: "source", source: "export const f = () => 1;", identifier: "p.js" } });
    const result = await box.invoke("f").catch((error) => ({ ok: false, error: { code: String(error.code) } }));
    await box.dispose();
    console.log(JSON.stringify(result.ok ? result.value : result.error.code));`;
  for (
    const flags of [
      ["--max-old-space-size=256"],
      ["--expose-gc", "--stack-size=900"],
    ]
  ) {
    const { stdout, status, stderr } = spawnSync(
      process.execPath,
      [
        ...flags,
        "--experimental-vm-modules",
        "--no-warnings",
        "--input-type=module",
        "-e",
        script,
      ],
      { encoding: "utf8" },
    );
    assert.equal(status, 0, stderr);
    assert.equal(JSON.parse(stdout), 1, flags.join(" "));
  }
});

/** Each plugin function of huge_text_host.mjs and its outcome. */
const HUGE_TEXT_OUTCOMES = {
  logLine: "logged",
  logArray: "logged",
  answer: "RESULT_NOT_SERIALIZABLE",
  answerToJson: "RESULT_NOT_SERIALIZABLE",
  answerParts: "RESULT_NOT_SERIALIZABLE",
  capabilityArgs: "PROXY_LIMIT_EXCEEDED",
  capabilityName: "PROXY_LIMIT_EXCEEDED",
  fetchMethod: "PROXY_LIMIT_EXCEEDED",
  fetchBody: "PROXY_LIMIT_EXCEEDED",
  fetchBytes: "PROXY_LIMIT_EXCEEDED",
};

// V8 copies a string into JSON text in one step it cannot stop at a heap
// limit: on a worker thread that is a fatal error Node turns into the end of
// the host, so only a realm process (the default) survives the plugin's own.
const HUGE_TEXT_OUTCOMES_IN_PROCESS = {
  ...HUGE_TEXT_OUTCOMES,
  selfStringify: "OUT_OF_MEMORY",
};

for (
  const [isolation, outcomesOf] of [
    ["thread", HUGE_TEXT_OUTCOMES],
    ["auto", HUGE_TEXT_OUTCOMES_IN_PROCESS],
  ]
) {
  test(`createVmSandbox() on Node keeps its host process alive when a plugin on the ${isolation} isolation writes text far over its heap`, async () => {
    const { spawnSync } = await import("node:child_process");
    const names = Object.keys(outcomesOf);
    const { stdout, status, stderr } = spawnSync(
      process.execPath,
      [
        "--experimental-vm-modules",
        "--no-warnings",
        fileURLToPath(new URL("./huge_text_host.mjs", import.meta.url)),
        isolation,
        ...names,
      ],
      { encoding: "utf8" },
    );
    assert.equal(status, 0, stderr.slice(0, 2000));
    const outcomes = JSON.parse(stdout);
    for (const name of names) {
      assert.deepEqual(
        outcomes[name],
        [outcomesOf[name], "pong"],
        name,
      );
    }
  });
}
