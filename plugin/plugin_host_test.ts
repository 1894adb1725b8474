import assert from "node:assert/strict";
import {
  unreadable,
  withPollutedPrototype,
} from "../protocol/_test_hostile_test.ts";
import { CordonError } from "../protocol/cordon_error.ts";
import { ERROR_CODES, type ErrorCode } from "../protocol/error_codes.ts";
import { ProblemSchema } from "../protocol/problem.ts";
import type { SerializedRequest } from "../protocol/bridge_messages.ts";
import { createSandboxedVmPluginModule } from "./host_bridge.ts";
import { createHostPluginModule } from "./host_plugin_module.ts";
import {
  createPluginHost,
  identifyAnonymously,
  identifyByTrustedHeaders,
  type PluginHost,
  type PluginIdentity,
} from "./plugin_host.ts";
import type { PluginModule } from "./plugin_module.ts";
import { createPluginSandbox, PLUGIN_TIERS } from "./plugin_sandbox.ts";
import { createVmSandbox } from "../vm/vm_sandbox.ts";
import { serve } from "./_test_serve_test.ts";
import { unhandledDuring } from "../protocol/_test_unhandled_test.ts";

function notes(id = "notes"): PluginModule {
  return createHostPluginModule({
    manifest: { id, version: "1.0.0", capabilities: ["notes.read"] },
    plugin: {
      routes: () => [
        { method: "GET", path: "/" },
        { method: "GET", path: "/notes/:id" },
        { method: "PUT", path: "/notes/:id" },
      ],
      handleRequest: (req) => ({
        status: 200,
        headers: [["content-type", "application/json"]],
        body: JSON.stringify({
          method: req.method,
          params: req.params,
          principalId: req.principalId,
          tenantId: req.tenantId,
          capabilities: req.capabilities,
        }),
      }),
    },
  });
}

async function problemOf(response: Response) {
  assert.equal(
    response.headers.get("content-type"),
    "application/problem+json",
  );
  const body = ProblemSchema.parse(await response.json());
  assert.equal(body.status, response.status);
  assert.equal(body.type, `urn:cordon:error:${body.code}`);
  return body;
}

Deno.test("createPluginHost() and a host plugin module take no tenant, answer header or header list from a polluted Object.prototype", async () => {
  const seen: SerializedRequest[] = [];
  const polluted = {
    tenantId: "acme",
    answerHeaders: [["x-injected", "1"]],
    redactHeaders: [],
  };
  const headers = await withPollutedPrototype(polluted, async () => {
    await using host = createPluginHost({
      identify: () => ({ principalId: "ada" }) as PluginIdentity,
    });
    await host.installPlugin({
      kind: "host",
      module: createHostPluginModule({
        manifest: { id: "seen", version: "1.0.0" },
        plugin: {
          routes: () => [{ method: "GET", path: "/" }],
          handleRequest: (request) => {
            seen.push(request);
            return { status: 204, headers: [], body: null };
          },
        },
      }),
    });
    const response = await host.fetch(
      new Request("http://127.0.0.1/plugins/seen", {
        headers: { cookie: "sid=1", authorization: "Bearer secret" },
      }),
    );
    await response.body?.cancel();
    return [...response.headers.keys()];
  });
  assert.equal(seen.length, 1);
  assert.equal(seen[0]!.principalId, "ada");
  assert.equal(seen[0]!.tenantId, null);
  assert.deepEqual(
    seen[0]!.headers.filter(([name]) =>
      name === "cookie" || name === "authorization"
    ),
    [],
  );
  assert.ok(!headers.includes("x-injected"), `${headers}`);
});

Deno.test("createPluginHost() dispatches /plugins/<id>/<route> to the plugin with identity and params", async () => {
  await using host = createPluginHost({ identify: identifyByTrustedHeaders });
  const installed = await host.installPlugin({ kind: "host", module: notes() });
  assert.deepEqual(installed.routes, [
    { method: "GET", path: "/plugins/notes" },
    { method: "GET", path: "/plugins/notes/notes/:id" },
    { method: "PUT", path: "/plugins/notes/notes/:id" },
  ]);
  const response = await host.fetch(
    new Request("http://127.0.0.1/plugins/notes/notes/n%201", {
      headers: { "x-cordon-principal": "ada", "x-cordon-tenant": "acme" },
    }),
  );
  assert.equal(response.status, 200);
  assert.deepEqual(await response.json(), {
    method: "GET",
    params: { id: "n 1" },
    principalId: "ada",
    tenantId: "acme",
    capabilities: ["notes.read"],
  });
  const root = await host.fetch(new Request("http://127.0.0.1/plugins/notes"));
  assert.equal(root.status, 200);
  await root.body?.cancel();
});

Deno.test("createPluginHost() answers unknown plugins and routes with 404 PLUGIN_NOT_FOUND", async () => {
  await using host = createPluginHost({ identify: identifyAnonymously });
  await host.installPlugin({ kind: "host", module: notes() });
  for (
    const path of [
      "/plugins/missing/notes/1",
      "/plugins/notes/nothing",
      "/plugins/notes/notes/1/extra",
      "/plugins/notes/notes/a%2Fb",
      "/elsewhere",
      "/plugins",
      // A megabyte of slashes inside the path: read once, not once per
      // slash (that took seconds for 60 KB).
      `/plugins/notes/notes${"/".repeat(1_000_000)}1`,
    ]
  ) {
    const response = await host.fetch(new Request(`http://127.0.0.1${path}`));
    assert.equal(response.status, 404, path);
    assert.equal((await problemOf(response)).code, "PLUGIN_NOT_FOUND");
  }
});

Deno.test("createPluginHost() answers a known path with another method with 405 and an Allow that lists the HEAD a GET route answers", async () => {
  await using host = createPluginHost({ identify: identifyAnonymously });
  await host.installPlugin({ kind: "host", module: notes() });
  const response = await host.fetch(
    new Request("http://127.0.0.1/plugins/notes/notes/1", { method: "DELETE" }),
  );
  assert.equal(response.status, 405);
  assert.equal(response.headers.get("allow"), "GET, HEAD, PUT");
  assert.equal((await problemOf(response)).code, "METHOD_NOT_ALLOWED");
  const head = await host.fetch(
    new Request("http://127.0.0.1/plugins/notes/notes/1", { method: "HEAD" }),
  );
  assert.equal(head.status, 200);
  assert.equal(head.body, null);
});

/** Codes a plugin's request can fail with, which the host answers by code. */
const ANSWERED_BY_CODE: readonly ErrorCode[] = [
  "PERMISSION_DENIED",
  "TIMEOUT",
  "OUT_OF_MEMORY",
  "ABORTED",
  "SANDBOX_CRASHED",
  "SANDBOX_DISPOSED",
  "SANDBOX_UNAVAILABLE",
  "SANDBOX_RESTART_LIMITED",
  "SANDBOX_BUSY",
  "BRIDGE_INVALID_PLUGIN_SURFACE",
  "BRIDGE_MARSHAL_FAILED",
  "BRIDGE_UNMARSHAL_FAILED",
  "BRIDGE_HANDLER_REJECTED",
  "BRIDGE_LIFECYCLE_FAILED",
  "BRIDGE_RESPONSE_HEADER_DENIED",
];

Deno.test("createPluginHost() answers every failure with a status the error registry (and docs/errors.md) lists for its code", async () => {
  await using host = createPluginHost({ identify: identifyAnonymously });
  await host.installPlugin({
    kind: "host",
    module: createHostPluginModule({
      manifest: { id: "fails", version: "1.0.0" },
      plugin: {
        routes: () => [{ method: "GET", path: "/:code" }],
        handleRequest: (req) => {
          const code = req.params.code as ErrorCode;
          throw new CordonError(code, `Failing with ${code}`);
        },
      },
    }),
  });
  const answers: [string, Request][] = [
    ...ANSWERED_BY_CODE.map((code): [string, Request] => [
      code,
      new Request(`http://127.0.0.1/plugins/fails/${code}`),
    ]),
    ["PLUGIN_NOT_FOUND", new Request("http://127.0.0.1/plugins/none/")],
    [
      "METHOD_NOT_ALLOWED",
      new Request("http://127.0.0.1/plugins/fails/x", { method: "PUT" }),
    ],
    [
      "REQUEST_INVALID",
      new Request("http://127.0.0.1/plugins/fails/x", {
        headers: { host: "h/plugins" },
      }),
    ],
  ];
  for (const [expected, request] of answers) {
    const response = await host.fetch(request);
    const { code } = await problemOf(response);
    assert.equal(code, expected);
    assert.ok(
      ERROR_CODES[expected as ErrorCode].httpStatuses.includes(response.status),
      `${code} answered ${response.status}, which ERROR_CODES.${code}.httpStatuses does not list`,
    );
  }
});

Deno.test("createPluginHost() answers a plugin paused for a while with its Retry-After, and one that never restarts with none and says not to retry", async () => {
  await using host = createPluginHost({ identify: identifyAnonymously });
  await host.installPlugin({
    kind: "host",
    module: createHostPluginModule({
      manifest: { id: "paused", version: "1.0.0" },
      plugin: {
        routes: () => [{ method: "GET", path: "/:waitMs" }],
        handleRequest: (req) => {
          const waitMs = Number(req.params.waitMs);
          throw new CordonError("SANDBOX_RESTART_LIMITED", "paused", {
            cause: { restartAvailableInMs: waitMs },
          });
        },
      },
    }),
  });
  const paused = await host.fetch(
    new Request("http://127.0.0.1/plugins/paused/2500"),
  );
  assert.equal(paused.status, 503);
  assert.equal(paused.headers.get("retry-after"), "3");
  await paused.body?.cancel();
  const stopped = await host.fetch(
    new Request("http://127.0.0.1/plugins/paused/Infinity"),
  );
  assert.equal(stopped.status, 503);
  assert.equal(stopped.headers.get("retry-after"), null);
  const problem = await problemOf(stopped);
  assert.equal(problem.code, "SANDBOX_RESTART_LIMITED");
  assert.match(String(problem.detail), /stays stopped.*do not retry/);
});

Deno.test("createPluginHost() answers a body over the plugin's limits with 413, on the host and a sandbox tier", async () => {
  await using host = createPluginHost({ identify: identifyAnonymously });
  const plugin = {
    routes: () => [{ method: "POST" as const, path: "/in" }],
    handleRequest: () => ({ status: 204, headers: [], body: null }),
  };
  await host.installPlugin({
    kind: "host",
    module: createHostPluginModule({
      manifest: { id: "small", version: "1.0.0" },
      plugin,
      maxBodyBytes: 16,
    }),
  });
  await host.installPlugin({
    kind: "vm",
    module: createSandboxedVmPluginModule({
      manifest: { id: "tight", version: "1.0.0" },
      sandbox: createVmSandbox({
        pluginId: "tight",
        pluginModule: {
          kind: "source",
          source:
            `export const routes = () => [{ method: "POST", path: "/in" }];
export const handleRequest = () => ({ status: 204, headers: [], body: null });`,
          identifier: "tight.js",
        },
        limits: { maxPayloadBytes: 4096 },
      }),
    }),
  });
  const post = (id: string, bytes: number) =>
    host.fetch(
      new Request(`http://h/plugins/${id}/in`, {
        method: "POST",
        body: "x".repeat(bytes),
      }),
    );
  const fits = await post("small", 16);
  assert.equal(fits.status, 204);
  await fits.body?.cancel();
  for (const [id, bytes] of [["small", 17], ["tight", 8192]] as const) {
    const response = await post(id, bytes);
    assert.equal(response.status, 413, id);
    const body = await problemOf(response);
    assert.equal(body.code, "BRIDGE_MARSHAL_FAILED", id);
    assert.match(body.detail, /cannot receive a body this large/, id);
  }
});

Deno.test("createPluginHost() uses identify() and capabilitiesFor() when given", async () => {
  await using host = createPluginHost({
    identify: (request) => {
      if (request.headers.get("authorization") !== "Bearer ok") {
        throw new CordonError("PERMISSION_DENIED", "Bad token");
      }
      return { principalId: "svc", tenantId: "t9" };
    },
    capabilitiesFor: (_manifest, identity) => [`tenant:${identity.tenantId}`],
  });
  await host.installPlugin({ kind: "host", module: notes() });
  const ok = await host.fetch(
    new Request("http://127.0.0.1/plugins/notes/notes/1", {
      headers: { authorization: "Bearer ok" },
    }),
  );
  const seen = await ok.json();
  assert.equal(seen.principalId, "svc");
  assert.deepEqual(seen.capabilities, ["tenant:t9"]);
  const refused = await host.fetch(
    new Request("http://127.0.0.1/plugins/notes/notes/1"),
  );
  assert.equal(refused.status, 403);
  assert.equal((await problemOf(refused)).code, "PERMISSION_DENIED");
});

Deno.test("createPluginHost() gives capabilitiesFor() the identity as it read it once, where it gave identify()'s object, whose getter could answer the plugin one tenant and capabilitiesFor() another", async () => {
  let reads = 0;
  const seen: PluginIdentity[] = [];
  await using host = createPluginHost({
    identify: () => ({
      principalId: "p",
      get tenantId() {
        return ++reads === 1 ? "t1" : "admin";
      },
    }),
    capabilitiesFor: (_manifest, identity) => {
      seen.push(identity);
      return [`tenant:${identity.tenantId}`];
    },
  });
  await host.installPlugin({ kind: "host", module: notes() });
  const response = await host.fetch(
    new Request("http://127.0.0.1/plugins/notes/notes/1"),
  );
  const answer = await response.json();
  assert.equal(answer.tenantId, "t1");
  assert.deepEqual(answer.capabilities, ["tenant:t1"]);
  assert.equal(reads, 1);
  assert.deepEqual(seen, [{ principalId: "p", tenantId: "t1" }]);
  assert.ok(Object.isFrozen(seen[0]));
});

Deno.test("createPluginHost() installs each id once and uninstalls by id", async () => {
  await using host = createPluginHost({ identify: identifyAnonymously });
  await host.installPlugin({ kind: "host", module: notes() });
  const second = notes();
  await assert.rejects(
    host.installPlugin({ kind: "host", module: second }),
    TypeError,
  );
  await second.dispose();
  const mismatch = notes("other");
  await assert.rejects(
    host.installPlugin({
      kind: "host",
      module: mismatch,
      manifest: { id: "notes2", version: "1" },
    }),
    TypeError,
  );
  await mismatch.dispose();
  assert.deepEqual(host.plugins().map((p) => p.id), ["notes"]);
  assert.equal(await host.uninstallPlugin("notes"), true);
  assert.equal(await host.uninstallPlugin("notes"), false);
  const gone = await host.fetch(
    new Request("http://127.0.0.1/plugins/notes/notes/1"),
  );
  assert.equal(gone.status, 404);
  await gone.body?.cancel();
});

Deno.test("createPluginHost() names a module's mismatched manifest id escaped, whatever it is", async () => {
  await using host = createPluginHost({ identify: identifyAnonymously });
  const base = notes();
  const named = (id: unknown) =>
    Object.create(base, { manifest: { value: { id, version: "1" } } });
  const cases: [unknown, string][] = [
    ["evil\nINFO forged", 'names "evil\\nINFO forged"'],
    [Symbol("s"), "names no id (a symbol)"],
    [{
      toString: () => {
        throw new Error("boom");
      },
    }, "names no id (an object)"],
    [undefined, "names no id (undefined)"],
    [null, "names no id (null)"],
  ];
  for (const [id, expected] of cases) {
    await assert.rejects(
      host.installPlugin({
        kind: "host",
        module: named(id),
        manifest: { id: "notes", version: "1" },
      }),
      (error: unknown) => {
        assert.ok(error instanceof TypeError);
        assert.ok(!error.message.includes("\n"), error.message);
        assert.ok(error.message.endsWith(expected), error.message);
        return true;
      },
    );
  }
  await base.dispose();
});

Deno.test("createPluginHost() turns vm plugin failures into problem documents without causes or paths", async () => {
  const errors: unknown[] = [];
  await using host = createPluginHost({
    identify: identifyAnonymously,
    onError: (error) => errors.push(error),
  });
  const source = `
    import { capabilities } from "cordon:host";
    export const routes = () => [
      { method: "GET", path: "/throw" },
      { method: "GET", path: "/slow" },
      { method: "GET", path: "/denied" },
      { method: "GET", path: "/garbage" },
    ];
    export async function handleRequest(req) {
      if (req.url.endsWith("/throw")) throw new Error("secret detail at /srv/app/x.js");
      if (req.url.endsWith("/slow")) return new Promise(() => {});
      if (req.url.endsWith("/denied")) await capabilities.call("admin");
      return { status: "nope" };
    }`;
  await host.installPlugin({
    kind: "vm",
    module: createSandboxedVmPluginModule({
      manifest: { id: "faulty", version: "1.0.0" },
      sandbox: createVmSandbox({
        pluginId: "faulty",
        pluginModule: { kind: "source", source, identifier: "faulty.js" },
        limits: { timeoutMs: 300 },
      }),
    }),
  });
  const expected: [string, number, string][] = [
    ["/throw", 502, "BRIDGE_HANDLER_REJECTED"],
    ["/slow", 504, "TIMEOUT"],
    ["/denied", 403, "PERMISSION_DENIED"],
    ["/garbage", 502, "BRIDGE_UNMARSHAL_FAILED"],
  ];
  for (const [path, status, code] of expected) {
    const response = await host.fetch(
      new Request(`http://127.0.0.1/plugins/faulty${path}`),
    );
    assert.equal(response.status, status, path);
    const problem = await problemOf(response);
    assert.equal(problem.code, code);
    assert.doesNotMatch(problem.detail, /secret|\/srv\/|\bat\b .*:\d+/);
  }
  assert.equal(errors.length, 4);
  assert.equal(
    ((errors[0] as CordonError).cause as { message: string }).message,
    "secret detail at /srv/app/x.js",
  );
});

Deno.test("createPluginHost() disposes a plugin whose start fails and keeps serving the others", async () => {
  await using host = createPluginHost({ identify: identifyAnonymously });
  await host.installPlugin({ kind: "host", module: notes() });
  const broken = createSandboxedVmPluginModule({
    manifest: { id: "broken", version: "1.0.0" },
    sandbox: createVmSandbox({
      pluginId: "broken",
      pluginModule: {
        kind: "source",
        source: "export const routes = () => [];",
        identifier: "broken.js",
      },
    }),
  });
  await assert.rejects(
    host.installPlugin({ kind: "vm", module: broken }),
    (error) =>
      error instanceof CordonError &&
      error.code === "BRIDGE_INVALID_PLUGIN_SURFACE",
  );
  assert.equal(broken.metrics().state, "disposed");
  assert.deepEqual(host.plugins().map((p) => p.id), ["notes"]);
});

Deno.test("createPluginHost() disposes every installed plugin when it is disposed", async () => {
  const host = createPluginHost({ identify: identifyAnonymously });
  const module = notes();
  await host.installPlugin({ kind: "host", module });
  await host.dispose();
  await host.dispose();
  assert.equal(module.metrics().state, "disposed");
  // A server still taking requests while it shuts down tells its clients
  // to retry, not that the plugin does not exist.
  const late = await host.fetch(
    new Request("http://127.0.0.1/plugins/notes/notes"),
  );
  assert.equal(late.status, 503);
  assert.equal((await late.json()).code, "SANDBOX_DISPOSED");
  await assert.rejects(
    host.installPlugin({ kind: "host", module: notes("late") }),
    (error) =>
      error instanceof CordonError && error.code === "SANDBOX_DISPOSED",
  );
});

Deno.test("createPluginHost() disposal ends an install under way at once, and its realm no longer runs", async () => {
  // The module's console line: its realm has begun the loop.
  const looping = Promise.withResolvers<void>();
  const host = createPluginHost({ identify: identifyAnonymously });
  const sandbox = createPluginSandbox("vm", {
    pluginId: "slow",
    pluginModule: {
      kind: "source",
      // Its module would run until the evaluation's deadline.
      source: `console.log("looping");
for (;;) {}
export const routes = () => [{ method: "GET", path: "/" }];
export const handleRequest = () => ({ status: 200, headers: [], body: "ok" });`,
      identifier: "slow.js",
    },
    limits: { timeoutMs: 5000 },
    onLog: () => looping.resolve(),
  });
  const module = createSandboxedVmPluginModule({
    manifest: { id: "slow", version: "1.0.0" },
    sandbox,
  });
  const installing = assert.rejects(
    host.installPlugin({ kind: "vm", module }),
    (error) =>
      error instanceof CordonError &&
      error.code === "BRIDGE_LIFECYCLE_FAILED" &&
      (error.cause as { code?: string }).code === "SANDBOX_DISPOSED",
  );
  // The module is looping in its realm when the host is disposed.
  await looping.promise;
  await host.dispose();
  assert.equal(sandbox.instruments.state, "disposed");
  assert.equal(sandbox.instruments.realmPid, null);
  assert.equal(module.metrics().state, "disposed");
  await installing;
});

Deno.test("createPluginHost() asks how to identify callers: without identify it throws", () => {
  assert.throws(
    // @ts-expect-error: identify is required
    () => createPluginHost({}),
    (error: unknown) =>
      error instanceof TypeError && /pass identify/.test(error.message),
  );
});

Deno.test("createPluginHost() with identifyAnonymously ignores the identity headers a client sends", async () => {
  await using host = createPluginHost({ identify: identifyAnonymously });
  await host.installPlugin({
    kind: "host",
    module: createHostPluginModule({
      manifest: { id: "who", version: "1.0.0" },
      plugin: {
        routes: () => [{ method: "GET", path: "/" }],
        handleRequest: (req) => ({
          status: 200,
          headers: [],
          body: JSON.stringify([req.principalId, req.tenantId]),
        }),
      },
    }),
  });
  const response = await host.fetch(
    new Request("http://127.0.0.1/plugins/who/", {
      headers: { "x-cordon-principal": "root", "x-cordon-tenant": "victim" },
    }),
  );
  assert.deepEqual(await response.json(), [null, null]);
});

/** A host plugin `who` that counts the requests that reach it. */
function counted(): { module: PluginModule; reached: () => number } {
  let reached = 0;
  const module = createHostPluginModule({
    manifest: { id: "who", version: "1.0.0" },
    plugin: {
      routes: () => [{ method: "GET", path: "/" }],
      handleRequest: () => {
        reached++;
        return { status: 204, headers: [], body: null };
      },
    },
  });
  return { module, reached: () => reached };
}

/**
 * Asks the plugin `who` once per case name (in `x-case`), and asserts
 * each request was refused with 403 `PERMISSION_DENIED`.
 */
async function assertEachRefused(
  host: PluginHost,
  names: string[],
): Promise<void> {
  for (const name of names) {
    const response = await host.fetch(
      new Request("http://127.0.0.1/plugins/who/", {
        headers: { "x-case": name },
      }),
    );
    assert.equal(response.status, 403, name);
    assert.equal((await problemOf(response)).code, "PERMISSION_DENIED", name);
  }
}

Deno.test("createPluginHost() refuses a request with 403 when identify or capabilitiesFor answers the wrong shape, and the plugin never sees it", async () => {
  const errors: unknown[] = [];
  const answers: Record<string, () => unknown> = {
    "identity-null": () => null,
    "identity-undefined": () => undefined,
    "identity-number": () => ({ principalId: 5, tenantId: null }),
    "tenant-object": () => ({ principalId: "ada", tenantId: {} }),
    "capabilities-number": () => ({ principalId: "ada", tenantId: "t1" }),
  };
  await using host = createPluginHost({
    identify: (request) =>
      answers[request.headers.get("x-case")!]!() as PluginIdentity,
    capabilitiesFor: (_manifest, identity) =>
      identity.principalId === "ada" ? [42] as unknown as string[] : [],
    onError: (error) => errors.push(error),
  });
  const { module, reached } = counted();
  await host.installPlugin({ kind: "host", module });
  await assertEachRefused(host, Object.keys(answers));
  assert.equal(reached(), 0);
  assert.equal(errors.length, Object.keys(answers).length);
  assert.ok(errors.every((error) => error instanceof TypeError));
});

Deno.test("createPluginHost() answers 403 when identify() or capabilitiesFor() throws or rejects with a value whose every read throws", async () => {
  const errors: unknown[] = [];
  const hooks: Record<string, [() => unknown, () => unknown]> = {
    "identify-throws": [() => {
      throw unreadable();
    }, () => []],
    "identify-rejects": [() => Promise.reject(unreadable()), () => []],
    "capabilities-throw": [() => ({ principalId: "ada" }), () => {
      throw unreadable();
    }],
  };
  await using host = createPluginHost({
    identify: (request) =>
      hooks[request.headers.get("x-case")!]![0]() as PluginIdentity,
    capabilitiesFor: (_manifest, identity) =>
      (identity.principalId === "ada"
        ? hooks["capabilities-throw"]![1]()
        : []) as string[],
    onError: (error) => errors.push(error),
  });
  const { module, reached } = counted();
  await host.installPlugin({ kind: "host", module });
  await assertEachRefused(host, Object.keys(hooks));
  assert.equal(reached(), 0);
  assert.equal(errors.length, Object.keys(hooks).length);
});

Deno.test("createPluginHost() refuses with 403 a capabilitiesFor() that answers a promise, and leaves no rejection of it or of an async onError() unhandled", async () => {
  const errors: unknown[] = [];
  let sunk = 0;
  const { module, reached } = counted();
  const unhandled = await unhandledDuring(async () => {
    await using host = createPluginHost({
      identify: identifyAnonymously,
      capabilitiesFor: () =>
        Promise.reject(new Error("grants store down")) as unknown as string[],
      onError: (error) => {
        errors.push(error);
        sunk++;
        return Promise.reject(new Error("log store down"));
      },
    });
    await host.installPlugin({ kind: "host", module });
    const response = await host.fetch(
      new Request("http://127.0.0.1/plugins/who/"),
    );
    assert.equal(response.status, 403);
    assert.equal((await problemOf(response)).code, "PERMISSION_DENIED");
  });
  assert.deepEqual(unhandled, []);
  assert.equal(reached(), 0);
  assert.equal(sunk, 1);
  assert.ok(errors[0] instanceof TypeError);
  assert.match(
    (errors[0] as TypeError).message,
    /capabilitiesFor\(\) must return a list of capability names/,
  );
});

Deno.test("createPluginHost() refuses with 403 a capabilitiesFor() that answers a string, rather than granting it as one capability's name", async () => {
  const errors: unknown[] = [];
  const { module, reached } = counted();
  await using host = createPluginHost({
    identify: identifyAnonymously,
    capabilitiesFor: () => "notes.read" as unknown as string[],
    onError: (error) => errors.push(error),
  });
  await host.installPlugin({ kind: "host", module });
  const response = await host.fetch(
    new Request("http://127.0.0.1/plugins/who/"),
  );
  assert.equal(response.status, 403);
  assert.equal((await problemOf(response)).code, "PERMISSION_DENIED");
  assert.equal(reached(), 0);
  assert.ok(errors[0] instanceof TypeError);
  assert.match(
    (errors[0] as TypeError).message,
    /capabilitiesFor\(\) must return a list of capability names/,
  );
});

Deno.test("createPluginHost() installs a plugin under each sandbox tier as its kind, and refuses an unknown kind", async () => {
  await using host = createPluginHost({ identify: identifyAnonymously });
  const source = `
export const routes = () => [{ method: "GET", path: "/" }];
export const handleRequest = () => ({ status: 200, headers: [], body: "ok" });`;
  for (const tier of PLUGIN_TIERS) {
    const installed = await host.installPlugin({
      kind: tier,
      module: createSandboxedVmPluginModule({
        manifest: { id: `on-${tier}`, version: "1.0.0" },
        sandbox: createPluginSandbox(tier, {
          pluginId: `on-${tier}`,
          pluginModule: { kind: "source", source, identifier: "t.js" },
        }),
      }),
    });
    assert.equal(installed.kind, tier);
    const response = await host.fetch(
      new Request(`http://127.0.0.1/plugins/on-${tier}/`),
    );
    assert.equal(await response.text(), "ok");
  }
  await assert.rejects(
    host.installPlugin({
      // @ts-expect-error: not a kind
      kind: "wasm",
      module: createHostPluginModule({
        manifest: { id: "q", version: "1.0.0" },
        plugin: { routes: () => [], handleRequest: () => null as never },
      }),
    }),
    TypeError,
  );
});

/** A host plugin whose answers wait until the test lets them go. */
function gated(id = "gated") {
  // Permits let answers go whether the request reached the plugin already
  // or is still on its way there.
  let permits = 0;
  const waiting: (() => void)[] = [];
  let failNext = false;
  const module = createHostPluginModule({
    manifest: { id, version: "1.0.0" },
    plugin: {
      routes: () => [{ method: "GET", path: "/" }],
      handleRequest: async () => {
        if (failNext) {
          failNext = false;
          throw new Error("the plugin failed");
        }
        if (permits > 0) permits--;
        else await new Promise<void>((resolve) => waiting.push(resolve));
        return { status: 200, headers: [], body: "done" };
      },
    },
  });
  return {
    module,
    release(count = 1) {
      for (let i = 0; i < count; i++) {
        const next = waiting.shift();
        if (next === undefined) permits++;
        else next();
      }
    },
    failOnce() {
      failNext = true;
    },
  };
}

Deno.test("createPluginHost() answers 503 PLUGIN_BUSY with Retry-After past maxConcurrentRequests, per plugin", async () => {
  await using host = createPluginHost({
    identify: identifyAnonymously,
    maxConcurrentRequests: 2,
  });
  const slow = gated("slow");
  await host.installPlugin({ kind: "host", module: slow.module });
  await host.installPlugin({ kind: "host", module: notes() });
  const url = "http://127.0.0.1/plugins/slow/";
  const held = [host.fetch(new Request(url)), host.fetch(new Request(url))];
  const busy = await host.fetch(new Request(url));
  assert.equal(busy.status, 503);
  assert.equal(busy.headers.get("retry-after"), "1");
  assert.equal((await problemOf(busy)).code, "PLUGIN_BUSY");
  // Another plugin has its own allowance.
  const other = await host.fetch(
    new Request("http://127.0.0.1/plugins/notes/"),
  );
  assert.equal(other.status, 200);
  await other.body?.cancel();
  slow.release(2);
  for (const response of await Promise.all(held)) {
    assert.equal(await response.text(), "done");
  }
  const after = host.fetch(new Request(url));
  slow.release();
  assert.equal((await after).status, 200);
  await (await after).body?.cancel();
});

Deno.test("createPluginHost() frees a request's place when the plugin fails or the route is unknown", async () => {
  await using host = createPluginHost({
    identify: identifyAnonymously,
    maxConcurrentRequests: 1,
  });
  const slow = gated();
  await host.installPlugin({ kind: "host", module: slow.module });
  slow.failOnce();
  const failed = await host.fetch(
    new Request("http://127.0.0.1/plugins/gated/"),
  );
  assert.equal(failed.status, 502);
  await failed.body?.cancel();
  const missing = await host.fetch(
    new Request("http://127.0.0.1/plugins/gated/nope"),
  );
  assert.equal(missing.status, 404);
  await missing.body?.cancel();
  const next = host.fetch(new Request("http://127.0.0.1/plugins/gated/"));
  slow.release();
  assert.equal((await next).status, 200);
  await (await next).body?.cancel();
});

/**
 * An identify() that never settles while `state.outage` is on, as during an
 * identity backend's outage, and answers anonymously once it is off.
 */
function flakyIdentity() {
  const state = { outage: true, calls: 0 };
  const waiters: { count: number; resolve: () => void }[] = [];
  return {
    state,
    identify: (request: Request): PluginIdentity | Promise<PluginIdentity> => {
      if (!state.outage) return identifyAnonymously(request);
      state.calls++;
      for (const waiter of waiters) {
        if (waiter.count <= state.calls) waiter.resolve();
      }
      return new Promise<PluginIdentity>(() => {});
    },
    /** Resolves once identify() was called `count` times in the outage. */
    calledTimes(count: number): Promise<void> {
      if (state.calls >= count) return Promise.resolve();
      return new Promise((resolve) => waiters.push({ count, resolve }));
    },
  };
}

/** Ends the outage and has two requests answered at once, as a host of two places does. */
async function assertBothPlacesFree(
  host: PluginHost,
  url: string,
  identity: ReturnType<typeof flakyIdentity>,
): Promise<void> {
  identity.state.outage = false;
  const answers = await Promise.all([
    host.fetch(new Request(url)),
    host.fetch(new Request(url)),
  ]);
  for (const response of answers) {
    assert.equal(response.status, 200);
    assert.equal((await response.json()).principalId, null);
  }
}

Deno.test("createPluginHost() answers 504 TIMEOUT when identify() does not settle within identifyTimeoutMs, tells onError, and frees the request's place", async () => {
  const errors: { error: unknown; pluginId: string | null }[] = [];
  const identity = flakyIdentity();
  await using host = createPluginHost({
    identify: identity.identify,
    identifyTimeoutMs: 1,
    maxConcurrentRequests: 2,
    onError: (error, { pluginId }) => errors.push({ error, pluginId }),
  });
  await host.installPlugin({ kind: "host", module: notes() });
  const url = "http://127.0.0.1/plugins/notes/";
  const late = await Promise.all([
    host.fetch(new Request(url)),
    host.fetch(new Request(url)),
  ]);
  for (const response of late) {
    assert.equal(response.status, 504);
    const body = await problemOf(response);
    assert.equal(body.code, "TIMEOUT");
    assert.equal(
      body.detail,
      "The request's identity could not be established in time: retry later",
    );
    assert.ok(ERROR_CODES.TIMEOUT.httpStatuses.includes(response.status));
  }
  assert.equal(identity.state.calls, 2);
  assert.equal(errors.length, 2);
  for (const { error, pluginId } of errors) {
    assert.equal(pluginId, "notes");
    assert.ok(error instanceof CordonError);
    assert.equal(error.code, "TIMEOUT");
    assert.equal(
      error.message,
      "Cannot identify the request: identify() did not settle within 1 ms; make it answer sooner or raise identifyTimeoutMs",
    );
  }
  // The identity backend is back: both places are free again.
  await assertBothPlacesFree(host, url, identity);
});

Deno.test("createPluginHost() still answers 403 when identify() itself throws a TIMEOUT, as for any other throw", async () => {
  await using host = createPluginHost({
    identify: () => {
      throw new CordonError("TIMEOUT", "The session store did not answer");
    },
  });
  await host.installPlugin({ kind: "host", module: notes() });
  const response = await host.fetch(
    new Request("http://127.0.0.1/plugins/notes/"),
  );
  assert.equal(response.status, 403);
  assert.equal((await problemOf(response)).code, "PERMISSION_DENIED");
});

Deno.test("createPluginHost() stops waiting for identify() when the client leaves, and frees the request's place at once", async () => {
  const errors: unknown[] = [];
  const identity = flakyIdentity();
  await using host = createPluginHost({
    identify: identity.identify,
    // Only the client's leaving can end these waits.
    identifyTimeoutMs: 3_600_000,
    maxConcurrentRequests: 2,
    onError: (error) => errors.push(error),
  });
  await host.installPlugin({ kind: "host", module: notes() });
  const url = "http://127.0.0.1/plugins/notes/";
  const clients = [new AbortController(), new AbortController()];
  const left = clients.map(({ signal }) =>
    host.fetch(new Request(url, { signal }))
  );
  await identity.calledTimes(2);
  // Both places are held while identify() is under way.
  const busy = await host.fetch(new Request(url));
  assert.equal(busy.status, 503);
  assert.equal((await problemOf(busy)).code, "PLUGIN_BUSY");
  for (const client of clients) client.abort();
  for (const response of await Promise.all(left)) {
    assert.equal(response.status, 502);
    const body = await problemOf(response);
    assert.equal(body.code, "ABORTED");
    assert.equal(
      body.detail,
      "The request's client left before its identity was established: send it again",
    );
  }
  // A client that left before identify() was called is not waited for.
  const gone = new AbortController();
  gone.abort();
  const early = await host.fetch(new Request(url, { signal: gone.signal }));
  assert.equal((await problemOf(early)).code, "ABORTED");
  assert.equal(identity.state.calls, 3);
  assert.equal(errors.length, 3);
  for (const error of errors) {
    assert.ok(error instanceof CordonError);
    assert.equal(error.code, "ABORTED");
  }
  // Still in the outage's identify() calls, yet both places are free.
  await assertBothPlacesFree(host, url, identity);
});

Deno.test("createPluginHost() frees the place of a client that left Deno.serve during identify()", async () => {
  const identity = flakyIdentity();
  await using host = createPluginHost({
    identify: identity.identify,
    identifyTimeoutMs: 3_600_000,
    maxConcurrentRequests: 1,
  });
  await host.installPlugin({ kind: "host", module: notes() });
  // The host's first answer, as the server got it to send.
  const first = Promise.withResolvers<Response>();
  const server = serve(async (request) => {
    const response = await host.fetch(request);
    first.resolve(response.clone());
    return response;
  });
  try {
    const url = `http://127.0.0.1:${server.port}/plugins/notes/`;
    const client = new AbortController();
    const sent = fetch(url, { signal: client.signal }).catch((error) => error);
    await identity.calledTimes(1);
    client.abort();
    assert.equal((await sent as Error).name, "AbortError");
    const abandoned = await first.promise;
    assert.equal((await problemOf(abandoned)).code, "ABORTED");
    identity.state.outage = false;
    const next = await fetch(url);
    assert.equal(next.status, 200);
    await next.body?.cancel();
  } finally {
    await server.close();
  }
});

Deno.test("createPluginHost() refuses an identifyTimeoutMs that is not a whole number of milliseconds from 1", () => {
  for (const value of [0, -1, 1.5, Number.NaN, Infinity, 2 ** 31]) {
    assert.throws(
      () =>
        createPluginHost({
          identify: identifyAnonymously,
          identifyTimeoutMs: value,
        }),
      {
        name: "RangeError",
        message:
          "Cannot create a plugin host: identifyTimeoutMs must be an integer from 1 to 2147483647 milliseconds",
      },
    );
  }
  assert.throws(
    () =>
      createPluginHost({
        identify: identifyAnonymously,
        identifyTimeoutMs: "100" as never,
      }),
    {
      name: "TypeError",
      message:
        "Cannot create a plugin host: identifyTimeoutMs must be a number of milliseconds",
    },
  );
});

Deno.test("createPluginHost() refuses a maxConcurrentRequests that is not a whole number of at least 1", () => {
  for (const value of [0, -1, 1.5, Number.NaN, Infinity, 1e300]) {
    assert.throws(
      () =>
        createPluginHost({
          identify: identifyAnonymously,
          maxConcurrentRequests: value,
        }),
      RangeError,
    );
  }
  // A string is the wrong type, as for every other integer option.
  assert.throws(
    () =>
      createPluginHost({
        identify: identifyAnonymously,
        maxConcurrentRequests: "4" as never,
      }),
    TypeError,
  );
});

Deno.test("createPluginHost() refuses a maxConcurrentRequestsPerCaller that is not a whole number of at least 1, as maxConcurrentRequests", () => {
  for (const value of [0, -1, 1.5, Number.NaN, Infinity, 1e300]) {
    assert.throws(
      () =>
        createPluginHost({
          identify: identifyAnonymously,
          maxConcurrentRequestsPerCaller: value,
        }),
      {
        name: "RangeError",
        message:
          "Cannot create a plugin host: maxConcurrentRequestsPerCaller must be an integer from 1 to 1000000",
      },
    );
  }
  assert.throws(
    () =>
      createPluginHost({
        identify: identifyAnonymously,
        maxConcurrentRequestsPerCaller: "4" as never,
      }),
    {
      name: "TypeError",
      message:
        "Cannot create a plugin host: maxConcurrentRequestsPerCaller must be a number",
    },
  );
  assert.throws(
    () =>
      createPluginHost({
        identify: identifyAnonymously,
        maxConcurrentRequestPerCaller: 2,
      } as never),
    {
      name: "TypeError",
      message:
        "Cannot create a plugin host: unknown option maxConcurrentRequestPerCaller; did you mean maxConcurrentRequestsPerCaller?",
    },
  );
});

Deno.test("createHostPluginModule() and createSandboxedVmPluginModule() refuse a bodyTimeoutMs that is not a whole number from 1", async () => {
  for (const bodyTimeoutMs of [0, -5, 2.5, Number.POSITIVE_INFINITY]) {
    assert.throws(
      () =>
        createHostPluginModule({
          manifest: { id: "p", version: "1.0.0" },
          bodyTimeoutMs,
          plugin: {
            routes: () => [],
            handleRequest: () => ({ status: 204, headers: [], body: null }),
          },
        }),
      RangeError,
    );
    const sandbox = createVmSandbox({
      pluginId: "p",
      pluginModule: {
        kind: "source",
        source: "export const routes = () => [];",
        identifier: "p.js",
      },
    });
    try {
      assert.throws(
        () =>
          createSandboxedVmPluginModule({
            sandbox,
            manifest: { id: "p", version: "1.0.0" },
            bodyTimeoutMs,
          }),
        RangeError,
      );
    } finally {
      await sandbox.dispose();
    }
  }
});

Deno.test("a host plugin's answer that is not data, or whose getter throws, gets the code a sandboxed plugin's does", async () => {
  await using host = createPluginHost({ identify: identifyAnonymously });
  const answers: Record<string, () => unknown> = {
    bigint: () => ({ status: 200, headers: [], body: 10n }),
    getter: () => ({
      status: 200,
      headers: [],
      get body() {
        throw new Error("getter");
      },
    }),
    // Told by identity, not by the code a plugin's own throw carries.
    "fake-refusal": () => ({
      status: 200,
      headers: [],
      get body() {
        throw { code: "RESULT_NOT_SERIALIZABLE", message: "fake" };
      },
    }),
  };
  await host.installPlugin({
    kind: "host",
    module: createHostPluginModule({
      manifest: { id: "odd", version: "1.0.0" },
      plugin: {
        routes: () => [{ method: "GET", path: "/:name" }],
        // Answers no typed plugin could give, as plain JavaScript can.
        handleRequest: (req) => answers[req.params.name!]!() as never,
      },
    }),
  });
  const codes: Record<string, [number, string]> = {};
  for (const name of Object.keys(answers)) {
    const response = await host.fetch(
      new Request(`http://h/plugins/odd/${name}`),
    );
    codes[name] = [response.status, (await problemOf(response)).code];
  }
  assert.deepEqual(codes, {
    bigint: [502, "BRIDGE_UNMARSHAL_FAILED"],
    getter: [502, "BRIDGE_HANDLER_REJECTED"],
    "fake-refusal": [502, "BRIDGE_HANDLER_REJECTED"],
  });
});

Deno.test("a host plugin answers a body of 6 MiB of bytes whole, as bodyBase64", async () => {
  await using host = createPluginHost({ identify: identifyAnonymously });
  const bytes = Uint8Array.from({ length: 6 * 1024 * 1024 }, (_, i) => i % 251);
  const bodyBase64 = btoa(
    Array.from(bytes, (byte) => String.fromCharCode(byte)).join(""),
  );
  await host.installPlugin({
    kind: "host",
    module: createHostPluginModule({
      manifest: { id: "bulk", version: "1.0.0" },
      plugin: {
        routes: () => [{ method: "GET", path: "/" }],
        handleRequest: () => ({ status: 200, headers: [], bodyBase64 }),
      },
    }),
  });
  const response = await host.fetch(new Request("http://h/plugins/bulk/"));
  assert.equal(response.status, 200);
  assert.deepEqual(new Uint8Array(await response.arrayBuffer()), bytes);
});

Deno.test("createPluginSandbox() refuses a tier that is no tier name, a symbol or an object among them, with a TypeError naming it", () => {
  for (
    const [tier, named] of [
      ["thread", '"thread"'],
      [Symbol("vm"), "a symbol"],
      [Object.create(null), "an object"],
    ] as const
  ) {
    assert.throws(
      () =>
        createPluginSandbox(tier as never, {
          pluginId: "typo",
          pluginModule: { kind: "source", source: "", identifier: "t.js" },
        }),
      {
        name: "TypeError",
        message:
          `Cannot create a plugin sandbox on tier ${named}: use vm, worker, process, quickjs`,
      },
      named,
    );
  }
});

Deno.test("the plugin host, installPlugin, the plugin modules and createPluginSandbox refuse a misspelt option, naming the closest one", async () => {
  const manifest = { id: "typo", version: "1.0.0" };
  const plugin = {
    routes: () => [],
    handleRequest: () => ({ status: 200, headers: [], body: "" }),
  } as never;
  assert.throws(
    () =>
      createPluginHost({
        identify: identifyAnonymously,
        maxConcurrentRequest: 2,
      } as never),
    {
      name: "TypeError",
      message:
        "Cannot create a plugin host: unknown option maxConcurrentRequest; did you mean maxConcurrentRequests?",
    },
  );
  assert.throws(
    () =>
      createPluginHost({
        identify: identifyAnonymously,
        maxConcurrentRequests: "2" as never,
      }),
    {
      name: "TypeError",
      message:
        "Cannot create a plugin host: maxConcurrentRequests must be a number",
    },
  );
  assert.throws(
    () =>
      createHostPluginModule({
        manifest,
        plugin,
        maxBodyByte: 10,
      } as never),
    {
      name: "TypeError",
      message:
        "Cannot create a plugin module: unknown option maxBodyByte; did you mean maxBodyBytes?",
    },
  );
  assert.throws(
    () =>
      createHostPluginModule({
        manifest,
        plugin,
        responseHeaders: [] as never,
      }),
    {
      name: "TypeError",
      message:
        'Cannot create plugin "typo": responseHeaders must be a function',
    },
  );
  assert.throws(
    () =>
      createSandboxedVmPluginModule({
        manifest,
        sandbox: createPluginSandbox("vm", {
          pluginId: "typo",
          pluginModule: { kind: "source", source: "", identifier: "t.js" },
        }),
        redactHeader: ["x-secret"],
      } as never),
    {
      name: "TypeError",
      message:
        "Cannot create a plugin module: unknown option redactHeader; did you mean redactHeaders?",
    },
  );
  assert.throws(
    () =>
      createPluginSandbox("vm", {
        pluginId: "typo",
        pluginModule: { kind: "source", source: "", identifier: "t.js" },
        isolation: "thread",
      } as never),
    {
      name: "TypeError",
      message: "Cannot create a plugin sandbox: unknown option isolation",
    },
  );
  await using host = createPluginHost({ identify: identifyAnonymously });
  await assert.rejects(
    host.installPlugin({
      kind: "host",
      module: createHostPluginModule({ manifest, plugin }),
      manfest: manifest,
    } as never),
    {
      name: "TypeError",
      message:
        "Cannot install the plugin: unknown option manfest; did you mean manifest?",
    },
  );
});

Deno.test("a host plugin whose stop() never settles is uninstalled after stopTimeoutMs, with BRIDGE_LIFECYCLE_FAILED", async () => {
  await using host = createPluginHost({ identify: identifyAnonymously });
  await host.installPlugin({
    kind: "host",
    module: createHostPluginModule({
      manifest: { id: "stuck", version: "1.0.0" },
      plugin: {
        routes: () => [{ method: "GET", path: "/" }],
        handleRequest: () => ({ status: 200, headers: [], body: "" }),
        stop: () => new Promise<void>(() => {}),
      },
      stopTimeoutMs: 50,
    }),
  });
  await assert.rejects(host.uninstallPlugin("stuck"), {
    code: "BRIDGE_LIFECYCLE_FAILED",
    message:
      'Cannot stop plugin "stuck": its stop() did not finish within 50 ms',
  });
  assert.deepEqual(host.plugins(), []);
  assert.equal(await host.uninstallPlugin("stuck"), false);
});

Deno.test("disposing the host ends the install of a host plugin whose start() or routes() never settles, and the plugin never runs", async () => {
  for (const stuck of ["start", "routes"] as const) {
    const host = createPluginHost({ identify: identifyAnonymously });
    let called!: () => void;
    const reached = new Promise<void>((resolve) => called = resolve);
    const never = () => {
      called();
      return new Promise<never>(() => {});
    };
    const module = createHostPluginModule({
      manifest: { id: "stuck", version: "1.0.0" },
      plugin: {
        routes: stuck === "routes"
          ? never
          : () => [{ method: "GET", path: "/" }],
        handleRequest: () => ({ status: 200, headers: [], body: "" }),
        ...(stuck === "start" ? { start: never } : {}),
      },
    });
    const installing = host.installPlugin({ kind: "host", module });
    await reached;
    await host.dispose();
    await assert.rejects(installing, { code: "SANDBOX_DISPOSED" }, stuck);
    assert.equal(module.metrics().state, "disposed", stuck);
    assert.deepEqual(host.plugins(), [], stuck);
  }
});

Deno.test("uninstalling a plugin whose start() never settles ends its install, and the id can be installed again", async () => {
  const host = createPluginHost({ identify: identifyAnonymously });
  let called!: () => void;
  const reached = new Promise<void>((resolve) => called = resolve);
  const stuck = createHostPluginModule({
    manifest: { id: "stuck", version: "1.0.0" },
    plugin: {
      routes: () => [{ method: "GET", path: "/" }],
      handleRequest: () => ({ status: 200, headers: [], body: "" }),
      start: () => {
        called();
        return new Promise<never>(() => {});
      },
    },
  });
  const installing = host.installPlugin({ kind: "host", module: stuck });
  await reached;
  assert.equal(await host.uninstallPlugin("stuck"), true);
  await assert.rejects(installing, { code: "SANDBOX_DISPOSED" });
  assert.equal(stuck.metrics().state, "disposed");
  assert.deepEqual(host.plugins(), []);
  assert.equal(await host.uninstallPlugin("stuck"), false);
  const again = notes("stuck");
  await host.installPlugin({ kind: "host", module: again });
  assert.deepEqual(host.plugins().map((plugin) => plugin.id), ["stuck"]);
  await host.dispose();
});

Deno.test("an install that an uninstall ends installs nothing, even when its module's start() resolves after disposal", async () => {
  const host = createPluginHost({ identify: identifyAnonymously });
  const inner = notes("late");
  let release!: () => void;
  const released = new Promise<void>((resolve) => release = resolve);
  // A module of the operator's own whose start() ignores its disposal:
  // it resolves after it, where a module that starts its inner one would
  // reject (that one is disposed) and prove nothing of the host's own check.
  const module: PluginModule = {
    manifest: inner.manifest,
    get routes() {
      return inner.routes;
    },
    start: async () => {
      await released;
    },
    stop: () => inner.stop(),
    metrics: () => inner.metrics(),
    dispose: () => {
      disposals++;
      return inner.dispose();
    },
    [Symbol.asyncDispose]: () => inner.dispose(),
  };
  let disposals = 0;
  const installing = host.installPlugin({ kind: "host", module });
  const uninstalling = host.uninstallPlugin("late");
  release();
  assert.equal(await uninstalling, true);
  await assert.rejects(installing, {
    code: "SANDBOX_DISPOSED",
    message: /it was uninstalled while it started/,
  });
  assert.deepEqual(host.plugins(), []);
  // Once by the uninstall, and again for what the late start() took.
  assert.equal(disposals, 2);
  await host.dispose();
});

Deno.test("an uninstall that ends an install leaves alone the plugin installed under that id after the ended install failed", async () => {
  const host = createPluginHost({ identify: identifyAnonymously });
  const inner = notes("x");
  let reached!: () => void;
  const atStart = new Promise<void>((resolve) => reached = resolve);
  let endStart!: (error: unknown) => void;
  let release!: () => void;
  const released = new Promise<void>((resolve) => release = resolve);
  // An operator's module whose disposal ends its start at once and then
  // takes a while to let go of what it holds; disposing it again while
  // that goes on returns at once.
  let disposals = 0;
  const slow: PluginModule = {
    manifest: inner.manifest,
    get routes() {
      return inner.routes;
    },
    start: () =>
      new Promise<void>((_, reject) => {
        endStart = reject;
        reached();
      }),
    stop: () => inner.stop(),
    metrics: () => inner.metrics(),
    dispose: async () => {
      if (disposals++ > 0) return;
      endStart(new CordonError("SANDBOX_DISPOSED", "disposed"));
      await released;
    },
    [Symbol.asyncDispose]: () => inner.dispose(),
  };
  const first = host.installPlugin({ kind: "host", module: slow });
  await atStart;
  const uninstalling = host.uninstallPlugin("x");
  await assert.rejects(first, { code: "SANDBOX_DISPOSED" });
  // The operator installs the id again before the uninstall returns.
  const next = notes("x");
  await host.installPlugin({ kind: "host", module: next });
  release();
  assert.equal(await uninstalling, true);
  assert.deepEqual(host.plugins().map((plugin) => plugin.id), ["x"]);
  assert.equal(next.metrics().state, "running");
  await host.dispose();
});

Deno.test("a host plugin whose handleRequest() never settles answers 504 TIMEOUT after timeoutMs and gives its place back", async () => {
  const errors: unknown[] = [];
  await using host = createPluginHost({
    identify: identifyAnonymously,
    maxConcurrentRequests: 1,
    onError: (error) => errors.push(error),
  });
  let hung = true;
  const module = createHostPluginModule({
    manifest: { id: "hangs", version: "1.0.0" },
    plugin: {
      routes: () => [{ method: "GET", path: "/" }],
      handleRequest: () =>
        hung
          ? new Promise<never>(() => {})
          : { status: 200, headers: [], body: "back" },
    },
    timeoutMs: 1,
  });
  await host.installPlugin({ kind: "host", module });
  const url = "http://127.0.0.1/plugins/hangs/";
  const late = await host.fetch(new Request(url));
  assert.equal(late.status, 504);
  const body = await problemOf(late);
  assert.equal(body.code, "TIMEOUT");
  assert.equal(
    body.detail,
    'Plugin "hangs" did not answer within its time limit: retry later',
  );
  assert.equal(errors.length, 1);
  assert.ok(errors[0] instanceof CordonError);
  assert.equal(errors[0].code, "TIMEOUT");
  assert.equal(
    errors[0].message,
    'Plugin "hangs" did not answer within 1 ms: make handleRequest() answer sooner or raise timeoutMs',
  );
  hung = false;
  const next = await host.fetch(new Request(url));
  assert.equal(await next.text(), "back");
  const { timeouts, failures, requests } = module.metrics();
  assert.deepEqual({ timeouts, failures, requests }, {
    timeouts: 1,
    failures: 1,
    requests: 2,
  });
});

Deno.test("createHostPluginModule() refuses a timeoutMs that is not a whole number of milliseconds from 1", () => {
  const options = {
    manifest: { id: "hello", version: "1.0.0" },
    plugin: {
      routes: () => [],
      handleRequest: () => ({ status: 204, headers: [], body: null }),
    },
  };
  for (const value of [0, -1, 1.5, Number.NaN, Infinity, 2 ** 31]) {
    assert.throws(
      () => createHostPluginModule({ ...options, timeoutMs: value }),
      {
        name: "RangeError",
        message:
          "Cannot create a plugin module: timeoutMs must be an integer from 1 to 2147483647 milliseconds",
      },
    );
  }
  assert.throws(
    () => createHostPluginModule({ ...options, timeoutMs: "5" as never }),
    {
      name: "TypeError",
      message:
        "Cannot create a plugin module: timeoutMs must be a number of milliseconds",
    },
  );
});

Deno.test("createHostPluginModule() refuses a start or stop that is not a function", () => {
  for (const hook of ["start", "stop"]) {
    assert.throws(
      () =>
        createHostPluginModule({
          manifest: { id: "hello", version: "1.0.0" },
          plugin: {
            routes: () => [],
            handleRequest: () => ({ status: 204, headers: [], body: null }),
            [hook]: 5,
          },
        }),
      {
        name: "TypeError",
        message:
          `Cannot create plugin "hello": plugin.${hook} must be a function, or left out`,
      },
    );
  }
});

Deno.test("a host plugin module started twice at once runs its start() and routes() once", async () => {
  const calls: string[] = [];
  let finish!: () => void;
  const started = new Promise<void>((resolve) => finish = resolve);
  await using module = createHostPluginModule({
    manifest: { id: "twice", version: "1.0.0" },
    plugin: {
      start: () => {
        calls.push("start");
        return started;
      },
      routes: () => {
        calls.push("routes");
        return [{ method: "GET", path: "/" }];
      },
      handleRequest: () => ({ status: 204, headers: [], body: null }),
    },
  });
  const both = Promise.all([module.start(), module.start()]);
  finish();
  await both;
  assert.deepEqual(calls, ["start", "routes"]);
  assert.equal(module.metrics().state, "running");
});

Deno.test("a host plugin whose routes() throws fails its install with BRIDGE_INVALID_PLUGIN_SURFACE, as a sandboxed plugin's does", async () => {
  await using host = createPluginHost({ identify: identifyAnonymously });
  await assert.rejects(
    host.installPlugin({
      kind: "host",
      module: createHostPluginModule({
        manifest: { id: "broken", version: "1.0.0" },
        plugin: {
          routes: () => {
            throw new RangeError("no routes today");
          },
          handleRequest: () => ({ status: 204, headers: [], body: null }),
        },
      }),
    }),
    (error: unknown) =>
      error instanceof CordonError &&
      error.code === "BRIDGE_INVALID_PLUGIN_SURFACE" &&
      error.message ===
        'Cannot read the routes of plugin "broken": routes() failed; see the cause' &&
      (error.cause as { message?: string }).message === "no routes today",
  );
  assert.deepEqual(host.plugins(), []);
});

/** Sends `head` to 127.0.0.1:`port` as it is and reads until the server closes. */
async function rawExchange(port: number, head: string): Promise<string> {
  using connection = await Deno.connect({ hostname: "127.0.0.1", port });
  await connection.write(new TextEncoder().encode(head));
  const answer = await new Response(connection.readable).text();
  return answer;
}

Deno.test("createPluginHost() answers 400 BRIDGE_MARSHAL_FAILED to a request whose body a framework already read, also when Deno.serve kept its URL as sent", async () => {
  const errors: unknown[] = [];
  await using host = createPluginHost({
    identify: identifyAnonymously,
    onError: (error) => errors.push(error),
  });
  await host.installPlugin({ kind: "host", module: notes() });
  // A body parser ahead of the host, as a framework's middleware reads it.
  const server = serve(async (request) => {
    await request.text();
    return host.fetch(request);
  });
  try {
    // Deno keeps a Host in capitals as sent, so the host rewrites the URL
    // into the form plugins see; the body it no longer has must not end
    // the request with a rejection (a framework's bare 500).
    for (const hostHeader of ["127.0.0.1", "LOCALHOST"]) {
      const answer = await rawExchange(
        server.port,
        `PUT /plugins/notes/notes/n1 HTTP/1.1\r\nHost: ${hostHeader}\r\n` +
          "content-type: application/json\r\ncontent-length: 7\r\n" +
          'connection: close\r\n\r\n{"a":1}',
      );
      assert.match(answer, /^HTTP\/1\.1 400 /, hostHeader);
      assert.match(answer, /content-type: application\/problem\+json/i);
      assert.match(answer, /"code":"BRIDGE_MARSHAL_FAILED"/);
    }
  } finally {
    await server.close();
  }
  assert.equal(errors.length, 2);
  for (const error of errors) {
    assert.match(String((error as Error).message), /already read/);
  }
});

Deno.test("createPluginHost() sends a sandboxed plugin's answer headers on the problems it answers for it, and none for a host plugin", async () => {
  const source = `
export const routes = () => [
  { method: "GET", path: "/page" },
  { method: "GET", path: "/throw" },
];
export function handleRequest(req) {
  if (req.url.endsWith("/throw")) throw new Error("broke");
  return { status: 200, headers: [["content-type", "text/html"]], body: "<script>1</script>" };
}`;
  await using host = createPluginHost({ identify: identifyAnonymously });
  await host.installPlugin({
    kind: "vm",
    module: createSandboxedVmPluginModule({
      manifest: { id: "html", version: "1.0.0" },
      sandbox: createVmSandbox({
        pluginId: "html",
        pluginModule: { kind: "source", source, identifier: "html.js" },
        limits: { timeoutMs: 2000 },
      }),
    }),
  });
  await host.installPlugin({ kind: "host", module: notes() });
  const get = async (path: string) => {
    const response = await host.fetch(new Request(`http://127.0.0.1${path}`));
    await response.body?.cancel();
    return response;
  };
  for (
    const [path, status] of [
      ["/plugins/html/page", 200],
      ["/plugins/html/throw", 502],
      ["/plugins/html/nowhere", 404],
    ] as const
  ) {
    const response = await get(path);
    assert.equal(response.status, status, path);
    assert.equal(
      response.headers.get("content-security-policy"),
      "sandbox",
      path,
    );
    assert.equal(response.headers.get("x-content-type-options"), "nosniff");
  }
  const head = await host.fetch(
    new Request("http://127.0.0.1/plugins/html/page", { method: "HEAD" }),
  );
  assert.equal(head.headers.get("content-security-policy"), "sandbox");
  for (const path of ["/plugins/notes/", "/plugins/notes/nowhere"]) {
    const response = await get(path);
    assert.equal(response.headers.get("content-security-policy"), null, path);
  }
});

Deno.test("createPluginHost() refuses a module whose answerHeaders are no list of well-formed headers, and names them when reading the list or a pair throws", async () => {
  await using host = createPluginHost({ identify: identifyAnonymously });
  const trapped = (list: unknown[], index: string) =>
    new Proxy(list, {
      get(target, key, receiver) {
        if (key === index) throw new Error("trap refused");
        return Reflect.get(target, key, receiver);
      },
    });
  const malformed =
    "must be a list of [name, value] pairs of well-formed headers";
  const unreadable = "could not be read: trap refused";
  for (
    const [answerHeaders, why] of [
      ["sandbox", malformed],
      [[["content-security-policy"]], malformed],
      [[["bad name", "x"]], malformed],
      [[["x-a", "b\r\nset-cookie: c=d"]], malformed],
      [trapped([["x-a", "b"]], "0"), unreadable],
      [[trapped(["x-a", "b"], "1")], unreadable],
    ] as const
  ) {
    const module = notes();
    Object.defineProperty(module, "answerHeaders", { value: answerHeaders });
    await assert.rejects(
      host.installPlugin({ kind: "host", module }),
      {
        name: "TypeError",
        message:
          `Cannot install plugin "notes": its module's answerHeaders ${why}`,
      },
    );
    await module.dispose();
  }
});

Deno.test("createPluginHost() reads each of a module's answerHeaders once and adds the pair it checked, where a value's getter answered the check and again, unchecked, for the answer", async () => {
  await using host = createPluginHost({ identify: identifyAnonymously });
  const module = notes();
  let reads = 0;
  const pair = ["x-a", ""];
  Object.defineProperty(pair, "1", {
    get: () => ++reads <= 2 ? "b" : "b\r\nset-cookie: c=d",
  });
  Object.defineProperty(module, "answerHeaders", { value: [pair] });
  await host.installPlugin({ kind: "host", module });
  const response = await host.fetch(
    new Request("http://127.0.0.1/plugins/notes/notes/1"),
  );
  await response.body?.cancel();
  assert.equal(response.headers.get("x-a"), "b");
  assert.equal(reads, 1);
});

/** A module that answers every route with `answer()` and lists a CSP among its answerHeaders. */
function sandboxLike(id: string, answer: () => Response): PluginModule {
  const inner = notes(id);
  return {
    manifest: inner.manifest,
    get routes() {
      return inner.routes.map((route) => ({
        ...route,
        handler: () => Promise.resolve(answer()),
      }));
    },
    answerHeaders: [["content-security-policy", "sandbox"]],
    start: () => inner.start(),
    stop: () => inner.stop(),
    dispose: () => inner.dispose(),
    metrics: () => inner.metrics(),
    [Symbol.asyncDispose]: () => inner.dispose(),
  };
}

Deno.test("createPluginHost() adds a module's answerHeaders to an answer whose headers cannot change", async () => {
  const module = sandboxLike(
    "moved",
    () => Response.redirect("http://a.test/"),
  );
  await using host = createPluginHost({ identify: identifyAnonymously });
  await host.installPlugin({ kind: "host", module });
  const response = await host.fetch(
    new Request("http://127.0.0.1/plugins/moved/"),
  );
  assert.equal(response.status, 302);
  assert.equal(response.headers.get("location"), "http://a.test/");
  assert.equal(response.headers.get("content-security-policy"), "sandbox");
});

Deno.test("createPluginHost() passes a network error on as it is, with no answerHeaders to add", async () => {
  const module = sandboxLike("gone", () => Response.error());
  await using host = createPluginHost({ identify: identifyAnonymously });
  await host.installPlugin({ kind: "host", module });
  const response = await host.fetch(
    new Request("http://127.0.0.1/plugins/gone/"),
  );
  assert.equal(response.type, "error");
});

Deno.test("a request routed to a host plugin that is uninstalled before the plugin answers gets 503 SANDBOX_DISPOSED, where the plugin's stop() under way answered 502 BRIDGE_LIFECYCLE_FAILED", async () => {
  const identified = Promise.withResolvers<PluginIdentity>();
  const stopping = Promise.withResolvers<void>();
  const stopGate = Promise.withResolvers<void>();
  await using host = createPluginHost({ identify: () => identified.promise });
  await host.installPlugin({
    kind: "host",
    module: createHostPluginModule({
      manifest: { id: "leaving", version: "1.0.0" },
      plugin: {
        routes: () => [{ method: "GET", path: "/" }],
        handleRequest: () => ({ status: 200, headers: [], body: "answered" }),
        stop: () => {
          stopping.resolve();
          return stopGate.promise;
        },
      },
    }),
  });
  // Routed to the plugin, then held at identify().
  const answer = host.fetch(new Request("http://127.0.0.1/plugins/leaving/"));
  const uninstalling = host.uninstallPlugin("leaving");
  await stopping.promise;
  identified.resolve({ principalId: null, tenantId: null });
  const response = await answer;
  const body = await response.json();
  assert.equal(response.status, 503);
  assert.equal(body.code, "SANDBOX_DISPOSED");
  stopGate.resolve();
  assert.equal(await uninstalling, true);
});

Deno.test("a host plugin module disposed while its start() runs stays disposed: the start rejects with SANDBOX_DISPOSED and a later start() is refused", async () => {
  const module = createHostPluginModule({
    manifest: { id: "late", version: "1.0.0" },
    plugin: {
      routes: () => [{ method: "GET", path: "/" }],
      handleRequest: () => ({ status: 204, headers: [], body: null }),
    },
  });
  const starting = module.start();
  await module.dispose();
  await assert.rejects(starting, { code: "SANDBOX_DISPOSED" });
  assert.equal(module.metrics().state, "disposed");
  await assert.rejects(module.start(), { code: "SANDBOX_DISPOSED" });
});

Deno.test("a host plugin module disposed by two callers at once settles both once its stop() ended, and only the first reports a stop() that threw", async () => {
  let finish!: () => void;
  const stopping = new Promise<void>((resolve) => finish = resolve);
  let stopped = false;
  const module = createHostPluginModule({
    manifest: { id: "slowstop", version: "1.0.0" },
    plugin: {
      routes: () => [{ method: "GET", path: "/" }],
      handleRequest: () => ({ status: 204, headers: [], body: null }),
      stop: async () => {
        await stopping;
        stopped = true;
        throw new Error("stop failed");
      },
    },
  });
  await module.start();
  const first = module.dispose();
  const second = module.dispose();
  const order: string[] = [];
  const watched = [
    first.then(() => order.push("first"), () => order.push("first rejected")),
    second.then(
      () => order.push("second"),
      () => order.push("second rejected"),
    ),
  ];
  await Promise.resolve();
  await Promise.resolve();
  assert.deepEqual(order, []);
  finish();
  await Promise.all(watched);
  assert.equal(stopped, true);
  assert.deepEqual(order.sort(), ["first rejected", "second"]);
  await module.dispose();
});

Deno.test("createPluginHost() answers a host plugin stopped with stop() while installed 503 SANDBOX_DISPOSED, and 502 BRIDGE_LIFECYCLE_FAILED only once its start() fails", async () => {
  let startThrows = false;
  const module = createHostPluginModule({
    manifest: { id: "stoppable", version: "1.0.0" },
    plugin: {
      start: () => {
        if (startThrows) throw new Error("cannot start");
      },
      routes: () => [{ method: "GET", path: "/ok" }],
      handleRequest: () => ({ status: 200, headers: [], body: "ok" }),
    },
  });
  await using host = createPluginHost({ identify: identifyAnonymously });
  await host.installPlugin({ kind: "host", module });
  const get = async () => {
    const response = await host.fetch(
      new Request("http://127.0.0.1/plugins/stoppable/ok"),
    );
    const text = await response.text();
    return {
      status: response.status,
      retryAfter: response.headers.get("retry-after"),
      text,
    };
  };
  const stopped = {
    status: 503,
    retryAfter: null,
    text: JSON.stringify({
      type: "urn:cordon:error:SANDBOX_DISPOSED",
      title: "Service Unavailable",
      status: 503,
      code: "SANDBOX_DISPOSED",
      detail: 'Plugin "stoppable" is stopped by its operator: retry later',
    }),
  };
  await module.stop();
  assert.deepEqual(await get(), stopped);
  await module.start();
  assert.deepEqual(await get(), { status: 200, retryAfter: null, text: "ok" });
  await module.stop();
  startThrows = true;
  await assert.rejects(module.start());
  const failed = await get();
  assert.equal(failed.status, 502);
  assert.equal(JSON.parse(failed.text).code, "BRIDGE_LIFECYCLE_FAILED");
  // A stop after the failed start is a stop on purpose again.
  await module.stop();
  assert.deepEqual(await get(), stopped);
});

Deno.test("createPluginHost() answers a host plugin whose stop() was asked while a start() that then failed was under way 503 SANDBOX_DISPOSED, as a sandboxed plugin", async () => {
  const startGate = Promise.withResolvers<void>();
  let starts = 0;
  const module = createHostPluginModule({
    manifest: { id: "restopped", version: "1.0.0" },
    plugin: {
      start: async () => {
        if (++starts === 1) return;
        await startGate.promise;
        throw new Error("cannot start");
      },
      routes: () => [{ method: "GET", path: "/ok" }],
      handleRequest: () => ({ status: 200, headers: [], body: "ok" }),
    },
  });
  await using host = createPluginHost({ identify: identifyAnonymously });
  await host.installPlugin({ kind: "host", module });
  await module.stop();
  const starting = module.start();
  // The operator's last word is this stop, asked while the start runs.
  await module.stop();
  startGate.resolve();
  await assert.rejects(starting);
  const response = await host.fetch(
    new Request("http://127.0.0.1/plugins/restopped/ok"),
  );
  assert.equal(response.status, 503);
  assert.equal((await response.json()).code, "SANDBOX_DISPOSED");
});

Deno.test("createPluginHost() answers a host plugin whose stop() was asked while a start() that then succeeded was under way 503 SANDBOX_DISPOSED, and runs its stop(), as a sandboxed plugin", async () => {
  const startGate = Promise.withResolvers<void>();
  let starts = 0;
  let stops = 0;
  const module = createHostPluginModule({
    manifest: { id: "stopped-late", version: "1.0.0" },
    plugin: {
      start: async () => {
        if (++starts === 1) return;
        await startGate.promise;
      },
      stop: () => {
        stops++;
      },
      routes: () => [{ method: "GET", path: "/ok" }],
      handleRequest: () => ({ status: 200, headers: [], body: "ok" }),
    },
  });
  await using host = createPluginHost({ identify: identifyAnonymously });
  await host.installPlugin({ kind: "host", module });
  await module.stop();
  const starting = module.start();
  // The operator's last word is this stop, asked while the start runs.
  await module.stop();
  startGate.resolve();
  await starting;
  assert.equal(module.metrics().state, "stopped");
  assert.equal(stops, 2);
  const response = await host.fetch(
    new Request("http://127.0.0.1/plugins/stopped-late/ok"),
  );
  assert.equal(response.status, 503);
  assert.equal((await response.json()).code, "SANDBOX_DISPOSED");
});

Deno.test("createPluginHost() serves a host plugin whose start() was asked again after a stop() that came while its first start() ran", async () => {
  const startGate = Promise.withResolvers<void>();
  let starts = 0;
  const module = createHostPluginModule({
    manifest: { id: "restarted", version: "1.0.0" },
    plugin: {
      start: async () => {
        if (++starts === 1) return;
        await startGate.promise;
      },
      routes: () => [{ method: "GET", path: "/ok" }],
      handleRequest: () => ({ status: 200, headers: [], body: "ok" }),
    },
  });
  await using host = createPluginHost({ identify: identifyAnonymously });
  await host.installPlugin({ kind: "host", module });
  await module.stop();
  const starting = module.start();
  await module.stop();
  // The operator's last word is this start, which joins the one under way.
  const again = module.start();
  startGate.resolve();
  await Promise.all([starting, again]);
  assert.equal(module.metrics().state, "running");
  const response = await host.fetch(
    new Request("http://127.0.0.1/plugins/restarted/ok"),
  );
  assert.equal(response.status, 200);
  assert.equal(await response.text(), "ok");
});
