import assert from "node:assert/strict";
import {
  countListeners,
  withPollutedPrototype,
} from "../protocol/_test_hostile_test.ts";
import { fileURLToPath } from "node:url";
import { CordonError } from "../protocol/cordon_error.ts";
import { MAX_NESTING_DEPTH } from "../protocol/nesting.ts";
import type { SandboxResult } from "../protocol/sandbox_result.ts";
import { unhandledDuring } from "../protocol/_test_unhandled_test.ts";
import {
  CLOCK_READINGS,
  MILLISECOND_CLOCKS,
} from "../sandbox/_clock_readings_test.ts";
import { createVmSandbox, type VmSandboxOptions } from "./vm_sandbox.ts";
import type { PermissionDecision } from "./vm_policy.ts";
import { registerVmSandboxCases } from "./node_test/vm_sandbox_cases.mjs";

// The cases that hold on every runtime live in one file, which the Node leg
// (vm/node_test/vm_sandbox.test.mjs) registers too.
registerVmSandboxCases(
  {
    createVmSandbox,
    isCordonError: (error: unknown) => error instanceof CordonError,
  },
  (name: string, fn: (t: Deno.TestContext) => unknown) =>
    Deno.test(name, async (t) => {
      await fn(t);
    }),
);

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

Deno.test("createVmSandbox() drops what an async onLog rejects with, and the plugin's call answers as without it", async () => {
  const lines: string[] = [];
  await using sandbox = sandboxOf(
    `export const go = () => { console.log("one"); console.log("two"); return 1; };`,
    {
      onLog: (entry) => {
        lines.push(entry.message);
        return Promise.reject(new Error("log store down")) as never;
      },
    },
  );
  let result: SandboxResult | undefined;
  const unhandled = await unhandledDuring(async () => {
    result = await sandbox.invoke("go");
  });
  assert.deepEqual(unhandled, []);
  assert.equal(valueOf(result!), 1);
  assert.deepEqual(lines, ["one", "two"]);
});

Deno.test("createVmSandbox() grants a plugin nothing that a polluted Object.prototype names, with or without a policy", async () => {
  const grants = { capabilities: ["secret.read"], fs: { read: ["/"] } };
  const polluted = {
    ...grants,
    read: ["/"],
    policy: grants,
  };
  const source = `import { capabilities, fs } from "cordon:host";
    export const secret = () => capabilities.call("secret.read", {});
    export const file = () => fs.readTextFile("/etc/hostname");`;
  const proxies = { capabilities: { "secret.read": () => "secret" } };
  for (const options of [{ proxies }, { proxies, policy: {} }]) {
    await using sandbox = await withPollutedPrototype(
      polluted,
      () => sandboxOf(source, options),
    );
    assert.equal(
      codeOf(await sandbox.invoke("secret", null)),
      "PERMISSION_DENIED",
    );
    assert.equal(
      codeOf(await sandbox.invoke("file", null)),
      "PERMISSION_DENIED",
    );
  }
});

Deno.test("createVmSandbox() refuses a call whose checker answers an object without allowed, when a polluted Object.prototype holds allowed: true", async () => {
  await using sandbox = sandboxOf(
    `import { capabilities } from "cordon:host";
    export const secret = () => capabilities.call("secret.read", {});`,
    {
      policy: { capabilities: ["secret.read"] },
      proxies: { capabilities: { "secret.read": () => "secret" } },
      checker: () => ({}) as PermissionDecision,
    },
  );
  const result = await withPollutedPrototype(
    { allowed: true },
    () => sandbox.invoke("secret", null),
  );
  assert.equal(codeOf(result), "PERMISSION_DENIED");
});

// Deno.serve stands for the upstream here; the Node leg has no copy of it.
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

// The host sends the calls of one pass of its event loop in one write, and
// the realm answers a chunk in one write: each answer must still find its
// call, whether the plugin answers at once or after a promise job.
Deno.test("createVmSandbox() gives each of 64 calls started together its own answer, on every isolation", async (t) => {
  for (const isolation of ["process", "worker", "quickjs"] as const) {
    await t.step(isolation, async () => {
      await using sandbox = sandboxOf(
        "export const twice = (n) => n * 2;\n" +
          "export const negate = async (n) => { await null; return -n; };",
        { isolation },
      );
      valueOf(await sandbox.start());
      const calls = Array.from(
        { length: 64 },
        (_, i) => sandbox.invoke(i % 2 === 0 ? "twice" : "negate", i),
      );
      assert.deepEqual(
        (await Promise.all(calls)).map(valueOf),
        Array.from({ length: 64 }, (_, i) => i % 2 === 0 ? i * 2 : -i),
      );
    });
  }
});

Deno.test("createVmSandbox() gives a plugin no clock finer than Date.now()'s millisecond, on every V8 isolation", async (t) => {
  for (const isolation of ["process", "worker"] as const) {
    await t.step(isolation, async () => {
      await using sandbox = sandboxOf(
        `export function read() {${CLOCK_READINGS}}`,
        { isolation },
      );
      assert.deepEqual(
        valueOf(await sandbox.invoke("read")),
        MILLISECOND_CLOCKS,
      );
    });
  }
});

Deno.test("createVmSandbox() refuses a fetched body read as JSON that nests deeper than any engine's stack, alike on every isolation", async (t) => {
  // Far past the cap: V8 parses it whole, QuickJS's parser runs out of
  // stack; both are refused for the cap.
  const levels = 100_000;
  await using server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    () => new Response("[".repeat(levels) + "]".repeat(levels)),
  );
  const url = `http://127.0.0.1:${server.addr.port}/deep`;
  for (const isolation of ["process", "worker", "quickjs"] as const) {
    await t.step(isolation, async () => {
      await using sandbox = sandboxOf(
        `
        import { fetch } from "cordon:host";
        export async function read(url) {
          return (await fetch(url)).json().then(() => "read", (e) => e.code + ": " + e.message);
        }`,
        {
          isolation,
          policy: { fetch: [`127.0.0.1:${server.addr.port}`] },
        },
      );
      assert.equal(
        valueOf(await sandbox.invoke("read", url)),
        `RESULT_NOT_SERIALIZABLE: Cannot read the response of "${url}" as JSON: it is nested deeper than ${MAX_NESTING_DEPTH} levels; read it with text() and parse the part you need`,
      );
    });
  }
});

Deno.test({
  name:
    "createVmSandbox() keeps a file's old text when the host ends while fs.writeTextFile replaces it",
  // prlimit sets the host's largest file size once the sandbox answers; the
  // kernel then ends it (SIGXFSZ) part way through the new text.
  ignore: Deno.build.os !== "linux",
  async fn() {
    const dir = await Deno.makeTempDir();
    try {
      await Deno.writeTextFile(`${dir}/keep.txt`, "the old text");
      const code = `
        import { createVmSandbox } from "./vm/vm_sandbox.ts";
        const dir = Deno.args[0];
        const sandbox = createVmSandbox({
          pluginId: "test",
          pluginModule: {
            kind: "source",
            identifier: "test.js",
            source: \`import { fs } from "cordon:host";
              export const write = ({ path, text }) => fs.writeTextFile(path, text);\`,
          },
          policy: { fs: { write: [dir] } },
        });
        await sandbox.invoke("write", { path: dir + "/warm.txt", text: "x" });
        const limit = await new Deno.Command("prlimit", {
          args: ["--fsize=65536", "--pid", String(Deno.pid)],
        }).output();
        if (!limit.success) Deno.exit(3);
        await sandbox.invoke("write", {
          path: dir + "/keep.txt",
          text: "y".repeat(100_000),
        });`;
      const run = await new Deno.Command(Deno.execPath(), {
        args: ["eval", code, dir],
        cwd: new URL("../", import.meta.url),
        env: { NO_COLOR: "1" },
        stdout: "null",
        stderr: "null",
      }).output();
      assert.equal(run.signal, "SIGXFSZ");
      const kept = await Deno.readTextFile(`${dir}/keep.txt`);
      assert.equal(kept.slice(0, 40), "the old text");
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

/**
 * Runs `code` (which may import `./vm/vm_sandbox.ts`) in a `deno run` child
 * started from the checkout with `permissions` and `args`, the first of
 * them a folder it may write, and gives back what it printed.
 */
async function runOnHost(
  code: string,
  permissions: string[],
  args: string[],
): Promise<string> {
  const [dir] = args;
  const script = `${dir}/host.ts`;
  const root = new URL("../", import.meta.url);
  await Deno.writeTextFile(
    script,
    code.replace("./vm/vm_sandbox.ts", new URL("vm/vm_sandbox.ts", root).href),
  );
  const run = await new Deno.Command(Deno.execPath(), {
    // The project's import map: the script sits outside the project.
    args: [
      "run",
      "--no-prompt",
      `--config=${fileURLToPath(new URL("deno.json", root))}`,
      ...permissions,
      script,
      ...args,
    ],
    cwd: root,
    env: { NO_COLOR: "1" },
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder();
  assert.equal(run.code, 0, text.decode(run.stderr));
  return text.decode(run.stdout).trim();
}

/**
 * A host that tries policy.fs and prints what it came to, code or text;
 * given "revoke", it gives up a permission between its install and its
 * read.
 */
const FILE_HOST = `
  import { createVmSandbox } from "./vm/vm_sandbox.ts";
  const dir = Deno.args[0];
  await Deno.writeTextFile(dir + "/data/a.txt", "alpha");
  let sandbox;
  try {
    sandbox = createVmSandbox({
      pluginId: "files",
      pluginModule: {
        kind: "source",
        identifier: "files.js",
        source: \`import { fs } from "cordon:host";
          export const read = (path) => fs.readTextFile(path);\`,
      },
      policy: { fs: { read: [dir + "/data"] } },
    });
  } catch (error) {
    console.log("created: " + error.code);
    Deno.exit(0);
  }
  if (Deno.args[1] === "revoke") {
    await Deno.permissions.revoke({ name: "ffi" });
  }
  const result = await sandbox.invoke("read", dir + "/data/a.txt");
  console.log("read: " + (result.ok ? result.value : result.error.code));
  await sandbox.dispose();`;

Deno.test({
  name:
    "createVmSandbox() on a Linux Deno host without every permission refuses policy.fs with PROXY_FS_UNAVAILABLE, where each file call failed as the host call failed",
  // Such a host may not read /proc/self/fd, where the default file proxy
  // checks what it opened, and opens links despite O_NOFOLLOW.
  ignore: Deno.build.os !== "linux",
  async fn() {
    const dir = await Deno.makeTempDir();
    try {
      await Deno.mkdir(`${dir}/data`);
      const execPath = Deno.execPath();
      const narrow = [
        `--allow-read=${dir}`,
        `--allow-write=${dir}`,
        `--allow-run=${execPath},/usr/bin/setpriv`,
        "--allow-env=NODE_V8_COVERAGE",
      ];
      assert.equal(
        await runOnHost(FILE_HOST, narrow, [dir]),
        "created: PROXY_FS_UNAVAILABLE",
      );
      assert.equal(await runOnHost(FILE_HOST, ["-A"], [dir]), "read: alpha");
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name:
    "createVmSandbox() refuses a file call with PROXY_FS_UNAVAILABLE once its Deno host gave up a permission, where it failed as the host call failed",
  ignore: Deno.build.os !== "linux",
  async fn() {
    const dir = await Deno.makeTempDir();
    try {
      await Deno.mkdir(`${dir}/data`);
      assert.equal(
        await runOnHost(FILE_HOST, ["-A"], [dir, "revoke"]),
        "read: PROXY_FS_UNAVAILABLE",
      );
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test("createVmSandbox() listens once on a signal that many waiting calls share, and each of them ends ABORTED", async () => {
  await using sandbox = sandboxOf(
    "export const wait = () => new Promise(() => {});",
  );
  assert.equal((await sandbox.start()).ok, true);
  const controller = new AbortController();
  const { signal } = controller;
  const mostListening = countListeners(signal);
  const calls = Array.from(
    { length: 50 },
    () => sandbox.invoke("wait", null, { signal }),
  );
  controller.abort();
  const codes = (await Promise.all(calls)).map(codeOf);
  assert.deepEqual(new Set(codes), new Set(["ABORTED"]));
  assert.ok(mostListening() <= 2, `${mostListening()} listeners at once`);
});

Deno.test("invoke() sends a payload of maxPayloadBytes and refuses one byte more, and stops reading a large payload once past the bound", async () => {
  await using sandbox = sandboxOf(
    "export const size = (payload) => JSON.stringify(payload).length;",
    { limits: { timeoutMs: 3000, maxPayloadBytes: 1024 } },
  );
  // ["é…"] is the string's length and 4 more characters, é two bytes.
  assert.equal(
    valueOf(await sandbox.invoke("size", [`é${"x".repeat(1018)}`])),
    1023,
  );
  await assert.rejects(
    () => sandbox.invoke("size", [`é${"x".repeat(1019)}`]),
    new RangeError(
      "Cannot send 1025 bytes to size(): the limit is 1024; raise limits.maxPayloadBytes",
    ),
  );
  await assert.rejects(
    () => sandbox.invoke("size", ["x".repeat(1021)]),
    new RangeError(
      "Cannot send at least 1025 bytes to size(): the limit is 1024; raise limits.maxPayloadBytes",
    ),
  );
  let reads = 0;
  const payload = Array.from({ length: 10_000 }, () => ({
    get value() {
      reads++;
      return 1;
    },
  }));
  await assert.rejects(
    () => sandbox.invoke("size", payload as never),
    /^RangeError: Cannot send at least 10\d\d bytes to size\(\): the limit is 1024; raise limits.maxPayloadBytes$/,
  );
  assert.ok(reads < 200, `read ${reads} values`);
  let doubled: unknown = 0;
  for (let i = 0; i < 40; i++) doubled = [doubled, doubled];
  await assert.rejects(
    () => sandbox.invoke("size", doubled as never),
    /Cannot send at least \d+ bytes to size\(\)/,
  );
});

Deno.test("invoke() runs a payload's getters and Proxy traps once, and writes what they answered then", async () => {
  await using sandbox = sandboxOf(
    "export const echo = (payload) => payload;",
    { limits: { timeoutMs: 3000, maxPayloadBytes: 1024 } },
  );
  // Read twice before the writing, such a getter answered plain data to
  // the checks and a far larger value to JSON.stringify, which wrote it
  // whole past any bound.
  let reads = 0;
  const flips = {
    get value() {
      return ++reads <= 2 ? 1 : "x".repeat(2000);
    },
  };
  assert.deepEqual(valueOf(await sandbox.invoke("echo", flips as never)), {
    value: 1,
  });
  assert.equal(reads, 1);
  const asked: string[] = [];
  const proxy = new Proxy({ a: 1 }, {
    get(target, key, receiver) {
      asked.push(String(key));
      return Reflect.get(target, key, receiver);
    },
  });
  assert.deepEqual(valueOf(await sandbox.invoke("echo", [proxy] as never)), [
    { a: 1 },
  ]);
  assert.deepEqual(asked, ["toJSON", "a"]);
});

Deno.test("invoke() refuses at the bound a payload whose text the count before writing cannot walk: typed arrays, String objects, toJSON answers, a getter's answer", async () => {
  await using sandbox = sandboxOf(
    "export const size = (payload) => JSON.stringify(payload).length;",
    { limits: { timeoutMs: 3000, maxPayloadBytes: 1024 } },
  );
  const doubled = () => {
    let value: unknown = 0;
    for (let i = 0; i < 60; i++) value = [value, value];
    return value;
  };
  // Each would take the caller's thread for ever, or a heap, if written
  // whole: 2**60 entries, or a billion keys listed before the first.
  const atLeast =
    /^RangeError: Cannot send at least \d+ bytes to size\(\): the limit is 1024; raise limits.maxPayloadBytes$/;
  const moreThan =
    /^RangeError: Cannot send more than 1024 bytes to size\(\): the limit is 1024; raise limits.maxPayloadBytes$/;
  await assert.rejects(
    () => sandbox.invoke("size", new Uint8Array(1e9) as never),
    atLeast,
  );
  await assert.rejects(
    () => sandbox.invoke("size", new String("x".repeat(1e8)) as never),
    atLeast,
  );
  await assert.rejects(
    () => sandbox.invoke("size", { toJSON: doubled } as never),
    moreThan,
  );
  const withToJSON = Object.assign(doubled() as unknown[], { toJSON: () => 1 });
  assert.equal(valueOf(await sandbox.invoke("size", withToJSON as never)), 1);
  let reads = 0;
  const large = {
    get value() {
      reads++;
      return doubled();
    },
  };
  await assert.rejects(() => sandbox.invoke("size", large as never), moreThan);
  assert.equal(reads, 1);
  assert.equal(
    valueOf(await sandbox.invoke("size", new Uint8Array(100) as never)),
    JSON.stringify(new Uint8Array(100)).length,
  );
});

Deno.test("invoke(), a plugin's answer and a capability's result refuse at their bound a typed array held by a Proxy, a class instance or an Array subclass, before its entries are listed", async () => {
  // Longer than any engine lists as keys: listed first, each failed as
  // data that is not JSON, or as memory that ran out.
  const LENGTH = 2 ** 28;
  class Holder {
    a = new Float64Array(LENGTH);
  }
  class Items extends Array {}
  await using sandbox = sandboxOf(
    `import { capabilities } from "cordon:host";
    export const size = (payload) => JSON.stringify(payload).length;
    export const answer = (n) => new Proxy({ a: new Uint8Array(n) }, {});
    export const result = () => capabilities.call("big", {});`,
    {
      policy: { capabilities: ["big"] },
      proxies: {
        capabilities: {
          big: () => Items.from([new Int8Array(LENGTH)]) as never,
        },
      },
      limits: {
        timeoutMs: 10000,
        maxPayloadBytes: 1024,
        maxCapabilityResultBytes: 1024,
      },
    },
  );
  for (
    const payload of [
      new Proxy({ a: new Uint8Array(LENGTH) }, {}),
      new Holder(),
      Items.from([new Uint8Array(LENGTH)]),
      new Proxy({ a: new String("x".repeat(2 ** 27 + 64)) }, {}),
    ]
  ) {
    await assert.rejects(
      () => sandbox.invoke("size", payload as never),
      /^RangeError: Cannot send more than 1024 bytes to size\(\): the limit is 1024; raise limits.maxPayloadBytes$/,
    );
  }
  const answered = await sandbox.invoke("answer", LENGTH);
  assert.equal(codeOf(answered), "RESULT_NOT_SERIALIZABLE");
  assert.match(
    answered.ok ? "" : answered.error.message,
    /^The plugin's answer is larger than 1024 bytes/,
  );
  const result = await sandbox.invoke("result", null);
  assert.equal(codeOf(result), "PROXY_LIMIT_EXCEEDED");
  assert.match(
    result.ok ? "" : result.error.message,
    /it is larger than 1024 bytes; ask for less or raise limits.maxCapabilityResultBytes$/,
  );
});

Deno.test("invoke() refuses a payload that is or holds a Proxy of a typed array as not JSON data before listing its entries, where a Proxy of a million was refused at the bound after 6.4 s", async () => {
  await using sandbox = sandboxOf(
    "export const size = (payload) => JSON.stringify(payload).length;",
    { limits: { timeoutMs: 3000, maxPayloadBytes: 1024 } },
  );
  for (
    const payload of [
      new Proxy(new Uint8Array(100_000), {}),
      { bytes: new Proxy(new Float32Array(2), {}) },
      [new Proxy(new Proxy(new Int16Array(1), {}), {})],
    ]
  ) {
    await assert.rejects(
      () => sandbox.invoke("size", payload as never),
      /^TypeError: Cannot send the payload of size\(\) to the plugin: pass JSON data$/,
    );
  }
  assert.equal(
    valueOf(await sandbox.invoke("size", new Uint8Array(2) as never)),
    JSON.stringify(new Uint8Array(2)).length,
  );
});

Deno.test("createVmSandbox() refuses a file path over 4096 characters and a fetch URL over 32768 with PROXY_LIMIT_EXCEEDED, and quotes a refused capability name as operatorQuote() does, at most 200 characters of it", async () => {
  const checked: string[] = [];
  await using sandbox = sandboxOf(
    `import { capabilities, fetch, fs } from "cordon:host";
    const failure = (call) => call.then(() => "ran", (e) => ({ code: e.code, message: e.message }));
    export const read = (path) => failure(fs.readTextFile(path));
    export const get = (url) => failure(fetch(url));
    export const call = (name) => failure(capabilities.call(name, null));`,
    {
      policy: { fs: { read: ["/srv"] }, fetch: ["127.0.0.1:1"] },
      checker: (request) => {
        checked.push(request.kind);
        return { allowed: false, message: "no" };
      },
      limits: { timeoutMs: 10000 },
    },
  );
  const failureOf = async (name: string, arg: string) =>
    valueOf(await sandbox.invoke(name, arg)) as {
      code: string;
      message: string;
    };
  // At the bounds, the policy and then the checker judge them.
  const path = `/srv/${"a/".repeat(2045)}b`;
  assert.equal(path.length, 4096);
  assert.deepEqual(await failureOf("read", path), {
    code: "PERMISSION_DENIED",
    message: "no",
  });
  const url = `http://127.0.0.2/${"a".repeat(32768 - 17)}`;
  assert.equal(url.length, 32768);
  assert.equal((await failureOf("get", url)).code, "PERMISSION_DENIED");
  assert.deepEqual(checked, ["fs"]);
  // One character over, neither the policy nor the checker sees them.
  assert.deepEqual(await failureOf("read", `${path}c`), {
    code: "PROXY_LIMIT_EXCEEDED",
    message:
      "Cannot read a path of 4097 characters: the host takes paths of at most 4096; pass a shorter one",
  });
  assert.deepEqual(await failureOf("get", `${url}c`), {
    code: "PROXY_LIMIT_EXCEEDED",
    message:
      "Cannot fetch a URL of 32769 characters: the host takes URLs of at most 32768; pass a shorter one",
  });
  assert.deepEqual(checked, ["fs"]);
  const refused = await failureOf("call", "k".repeat(100_000));
  assert.equal(refused.code, "PERMISSION_DENIED");
  assert.match(
    refused.message,
    /^Cannot use capability "k{200}…" from plugin "test": the policy does not grant it/,
  );
  // Quoted as every outside text a message quotes: its own quotes cannot
  // close the quote and name another plugin.
  const forged = await failureOf("call", 'x" from plugin "admin');
  assert.match(
    forged.message,
    /^Cannot use capability "x\\" from plugin \\"admin" from plugin "test": /,
  );
});

Deno.test({
  name:
    "createVmSandbox() answers SANDBOX_UNAVAILABLE, as the sandboxes do, when the system refuses the realm process descriptors, answers again once it has them, and answers SANDBOX_CRASHED for a realm that started and died",
  // The host lowers its own descriptor limit and holds every descriptor
  // left, so the realm's pipes cannot open; it then lets them go.
  ignore: Deno.build.os !== "linux",
  async fn() {
    const dir = await Deno.makeTempDir();
    try {
      const code = `
        import { createVmSandbox } from "./vm/vm_sandbox.ts";
        addEventListener("unhandledrejection", (event) => {
          event.preventDefault();
          console.log("unhandled rejection");
        });
        await using sandbox = createVmSandbox({
          pluginId: "test",
          isolation: "process",
          // The plugin is not at fault: the refusal uses up no restart.
          limits: { maxRestarts: 0 },
          pluginModule: {
            kind: "source",
            identifier: "test.js",
            source: "export const add = ({ a, b }) => a + b;" +
              "export const hang = () => new Promise(() => {});",
          },
        });
        const limit = await new Deno.Command("prlimit", {
          args: ["--nofile=256", "--pid", String(Deno.pid)],
        }).output();
        if (!limit.success) Deno.exit(3);
        const held = [];
        try {
          for (;;) held.push(Deno.openSync("/dev/null"));
        } catch {
          // Every descriptor is taken.
        }
        const refused = await sandbox.invoke("add", { a: 1, b: 2 });
        for (const file of held) file.close();
        const answered = await sandbox.invoke("add", { a: 1, b: 2 });
        const hanging = sandbox.invoke("hang");
        const { realmPid } = sandbox.instruments;
        if (realmPid !== null) Deno.kill(realmPid, "SIGKILL");
        const died = await hanging;
        console.log(JSON.stringify({
          refused: refused.ok ? "answered" : refused.error.code,
          name: refused.ok ? "" : refused.error.name,
          message: refused.ok ? "" : refused.error.message,
          answered: answered.ok ? answered.value : answered.error.code,
          died: died.ok ? "answered" : died.error.code,
        }));`;
      const printed = JSON.parse(await runOnHost(code, ["-A"], [dir]));
      assert.equal(printed.refused, "SANDBOX_UNAVAILABLE", printed.message);
      assert.equal(printed.name, "NotSupportedError");
      // The sandboxes' shape: what could not start, the system's reason,
      // and what to do.
      assert.match(
        printed.message,
        /^Cannot start the plugin's realm: the system refused its Deno subprocess \(Too many open files \(EMFILE\)\); free what the system lacks \(file descriptors, processes, memory\) and call again$/,
      );
      assert.equal(printed.answered, 3);
      assert.equal(printed.died, "SANDBOX_CRASHED");
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});
