import assert from "node:assert/strict";
import { CordonError } from "../protocol/cordon_error.ts";
import { createSandboxedVmPluginModule } from "./host_bridge.ts";
import type { PluginModule, PluginRequestContext } from "./plugin_module.ts";
import { createVmSandbox, type VmSandboxOptions } from "../vm/vm_sandbox.ts";
import { createPluginSandbox, PLUGIN_TIERS } from "./plugin_sandbox.ts";
import { runScript } from "../tools/_script_run_test.ts";

const PLUGIN = `
import { base64, bodyText, capabilities, utf8 } from "cordon:host";
export function routes() {
  return [
    { method: "POST", path: "/echo/:name" },
    { method: "GET", path: "/answer/:kind" },
  ];
}
export async function handleRequest(req) {
  if (req.params.kind === undefined) {
    return {
      status: 200,
      headers: [["content-type", "application/json"]],
      body: JSON.stringify({ ...req, bodyText: bodyText(req), url: req.url }),
    };
  }
  switch (req.params.kind) {
    case "bytes": return { status: 200, headers: [], bodyBase64: base64.encode(new Uint8Array([0, 1, 254, 255])) };
    case "throw": throw new RangeError("handler broke");
    case "status": return { status: 99, headers: [] };
    case "both": return { status: 200, headers: [], body: "a", bodyBase64: "YQ==" };
    case "base64": return { status: 200, headers: [], bodyBase64: "not base64!" };
    case "header": return { status: 200, headers: [["bad header", "x"]], body: "" };
    case "nobody": return { status: 204, headers: [], body: "not allowed" };
    case "function": return { status: 200, headers: [], body: () => 1 };
    case "bytes-body": return { status: 200, headers: [], body: new Uint8Array([1, 2]) };
    case "object-body": return { status: 200, headers: [], body: { ok: true } };
    case "headers-object": return { status: 200, headers: { "content-type": "text/plain" }, body: "x" };
    case "status-text": return { status: "200", headers: [], body: "x" };
    case "nothing": return;
    case "no-status": return { headers: [], body: "x" };
    case "status-text-field": return { status: 200, statusText: "OK", headers: [], body: "x" };
    case "denied": return { status: 200, headers: [], body: String(await capabilities.call("secret")) };
    case "loop": for (;;) {}
  }
  return { status: 404, headers: [], body: utf8.decode(utf8.encode("no")) };
}`;

function moduleOf(
  source: string,
  options: Partial<VmSandboxOptions> = {},
): PluginModule {
  return createSandboxedVmPluginModule({
    manifest: { id: "bridge-test", version: "1.0.0" },
    sandbox: createVmSandbox({
      pluginId: "bridge-test",
      pluginModule: { kind: "source", source, identifier: "bridge_test.js" },
      limits: { timeoutMs: 1000 },
      ...options,
    }),
  });
}

function ctx(
  request: Request,
  params: Record<string, string>,
): PluginRequestContext {
  return {
    request,
    principalId: "ada",
    tenantId: "acme",
    capabilities: ["notes.read"],
    params,
  };
}

async function rejectsWith(
  promise: Promise<unknown>,
  code: string,
): Promise<CordonError> {
  let caught: unknown;
  try {
    await promise;
  } catch (error) {
    caught = error;
  }
  assert.ok(caught instanceof CordonError, `expected a CordonError ${code}`);
  assert.equal(caught.code, code, caught.message);
  return caught;
}

Deno.test("createSandboxedVmPluginModule() serves the plugin's routes with requests and responses as data", async (t) => {
  await using plugin = moduleOf(PLUGIN);
  assert.deepEqual(plugin.routes, []);
  await plugin.start();
  const route = (method: string, path: string) =>
    plugin.routes.find((r) => r.method === method && r.path === path)!;

  await t.step("routes come from the plugin's routes()", () => {
    assert.deepEqual(plugin.routes.map((r) => `${r.method} ${r.path}`), [
      "POST /echo/:name",
      "GET /answer/:kind",
    ]);
  });

  await t.step(
    "the request context reaches the plugin as a SerializedRequest",
    async () => {
      const response = await route("POST", "/echo/:name").handler(ctx(
        new Request("http://127.0.0.1/plugins/bridge-test/echo/zoë?q=1", {
          method: "POST",
          headers: {
            "x-one": "1",
            authorization: "Bearer secret",
            cookie: "sid=1",
          },
          body: "héllo",
        }),
        { name: "zoë" },
      ));
      assert.equal(response.status, 200);
      const seen = await response.json();
      assert.equal(
        seen.url,
        "http://127.0.0.1/plugins/bridge-test/echo/zo%C3%AB?q=1",
      );
      assert.equal(seen.method, "POST");
      assert.equal(seen.bodyText, "héllo");
      assert.equal(seen.principalId, "ada");
      assert.equal(seen.tenantId, "acme");
      assert.deepEqual(seen.capabilities, ["notes.read"]);
      assert.deepEqual(seen.params, { name: "zoë" });
      const names = seen.headers.map(([name]: [string]) => name);
      assert.ok(names.includes("x-one"));
      assert.ok(!names.includes("authorization"), "credentials are redacted");
      assert.ok(!names.includes("cookie"), "cookies are redacted");
    },
  );

  await t.step("a base64 body comes back as bytes", async () => {
    const response = await route("GET", "/answer/:kind").handler(
      ctx(new Request("http://127.0.0.1/x"), { kind: "bytes" }),
    );
    assert.deepEqual(
      new Uint8Array(await response.arrayBuffer()),
      new Uint8Array([0, 1, 254, 255]),
    );
  });

  await t.step(
    "a throwing handler rejects with BRIDGE_HANDLER_REJECTED and the sandbox error as cause",
    async () => {
      const error = await rejectsWith(
        route("GET", "/answer/:kind").handler(
          ctx(new Request("http://127.0.0.1/x"), { kind: "throw" }),
        ),
        "BRIDGE_HANDLER_REJECTED",
      );
      assert.deepEqual(error.cause, {
        code: "GUEST_ERROR",
        name: "RangeError",
        message: "handler broke",
      });
    },
  );

  await t.step(
    "answers that are not SerializedResponses reject with BRIDGE_UNMARSHAL_FAILED",
    async () => {
      for (
        const kind of [
          "status",
          "both",
          "base64",
          "header",
          "nobody",
          "function",
        ]
      ) {
        await rejectsWith(
          route("GET", "/answer/:kind").handler(
            ctx(new Request("http://127.0.0.1/x"), { kind }),
          ),
          "BRIDGE_UNMARSHAL_FAILED",
        );
      }
    },
  );

  await t.step(
    "an answer of the wrong shape is refused with what to return instead",
    async () => {
      const remedies: [string, RegExp][] = [
        ["bytes-body", /body must be a string or null.*bodyBase64/],
        ["object-body", /body must be a string or null.*JSON\.stringify\(\)/],
        ["headers-object", /headers must be a list of \[name, value\] pairs/],
        ["status-text", /status must be a whole number from 200 to 599/],
        ["status", /status must be a whole number from 200 to 599/],
        ["nothing", /handleRequest\(\) returned no answer/],
        [
          "no-status",
          /not a SerializedResponse; return \{ status, headers, body \}/,
        ],
        ["both", /sets both body and bodyBase64; set one/],
        ["status-text-field", /only status, headers and body or bodyBase64/],
      ];
      for (const [kind, remedy] of remedies) {
        const error = await rejectsWith(
          route("GET", "/answer/:kind").handler(
            ctx(new Request("http://127.0.0.1/x"), { kind }),
          ),
          "BRIDGE_UNMARSHAL_FAILED",
        );
        assert.match(error.message, remedy, kind);
        assert.equal((error.cause as { reason: string }).reason, "schema");
      }
    },
  );

  await t.step(
    "a denied capability rejects with PERMISSION_DENIED",
    async () => {
      const error = await rejectsWith(
        route("GET", "/answer/:kind").handler(
          ctx(new Request("http://127.0.0.1/x"), { kind: "denied" }),
        ),
        "PERMISSION_DENIED",
      );
      assert.equal(
        (error.cause as { code: string }).code,
        "PERMISSION_DENIED",
      );
    },
  );

  await t.step(
    "requests that cannot be marshalled reject with BRIDGE_MARSHAL_FAILED",
    async () => {
      const used = new Request("http://127.0.0.1/x", {
        method: "POST",
        body: "x",
      });
      await used.text();
      await rejectsWith(
        route("POST", "/echo/:name").handler(ctx(used, { name: "x" })),
        "BRIDGE_MARSHAL_FAILED",
      );
      await rejectsWith(
        route("POST", "/echo/:name").handler(ctx(
          new Request("http://127.0.0.1/x", {
            method: "POST",
            body: new Uint8Array(2 * 1024 * 1024),
          }),
          { name: "x" },
        )),
        "BRIDGE_MARSHAL_FAILED",
      );
    },
  );

  await t.step(
    "a handler over its time limit rejects with TIMEOUT and the next request is served",
    async () => {
      await rejectsWith(
        route("GET", "/answer/:kind").handler(
          ctx(new Request("http://127.0.0.1/x"), { kind: "loop" }),
        ),
        "TIMEOUT",
      );
      const response = await route("GET", "/answer/:kind").handler(
        ctx(new Request("http://127.0.0.1/x"), { kind: "other" }),
      );
      assert.equal(await response.text(), "no");
    },
  );

  await t.step(
    "metrics() counts requests, failures, timeouts and restarts",
    async () => {
      await Promise.resolve();
      const metrics = plugin.metrics();
      assert.equal(metrics.state, "running");
      assert.equal(metrics.requests, 23);
      assert.equal(metrics.failures, 20);
      assert.equal(metrics.timeouts, 1);
      assert.equal(metrics.restarts, 1);
      assert.equal(metrics.denials, 1);
      assert.ok(metrics.maxDurationMs >= metrics.meanDurationMs);
    },
  );
});

Deno.test("createSandboxedVmPluginModule() refuses a plugin without routes() and handleRequest()", async () => {
  await using plugin = moduleOf("export function routes() { return []; }");
  const error = await rejectsWith(
    plugin.start(),
    "BRIDGE_INVALID_PLUGIN_SURFACE",
  );
  assert.match(error.message, /handleRequest\(\)/);
});

Deno.test("createSandboxedVmPluginModule() refuses malformed routes", async () => {
  for (
    const routes of [
      "null",
      '[{ method: "FETCH", path: "/x" }]',
      '[{ method: "GET", path: "x" }]',
      '[{ method: "GET", path: "/a/:id/:id" }]',
      '[{ method: "GET", path: "/x" }, { method: "GET", path: "/x" }]',
      // The same route but for its parameter's name: the second could
      // never answer, as the first takes every request it matches.
      '[{ method: "GET", path: "/a/:x" }, { method: "GET", path: "/a/:y" }]',
    ]
  ) {
    await using plugin = moduleOf(
      `export const routes = () => ${routes}; export const handleRequest = () => ({ status: 200, headers: [] });`,
    );
    await rejectsWith(plugin.start(), "BRIDGE_INVALID_PLUGIN_SURFACE");
  }
});

Deno.test("createSandboxedVmPluginModule() reports a plugin that cannot load as BRIDGE_LIFECYCLE_FAILED with its cause", async () => {
  await using plugin = moduleOf(
    'import fs from "node:fs"; export const routes = () => [];',
  );
  const error = await rejectsWith(plugin.start(), "BRIDGE_LIFECYCLE_FAILED");
  assert.equal((error.cause as { code: string }).code, "IMPORT_NODE_BUILTIN");
});

// A package's Node build bundled for a plugin keeps its imports of Node
// built-ins (eta's main entry opens with `import * as fs from "node:fs"`);
// the plugin's author can bundle another build, never declare a pack.
Deno.test("createSandboxedVmPluginModule() tells a plugin refused an import to bundle it, not to declare a pack", async (t) => {
  for (
    const [line, code] of [
      ['import * as fs from "node:fs";', "IMPORT_NODE_BUILTIN"],
      ['import * as path from "path";', "IMPORT_COMPAT"],
      ['import { z } from "npm:zod@4";', "IMPORT_NPM"],
      ['import x from "https://esm.sh/eta";', "IMPORT_REMOTE"],
    ]
  ) {
    await t.step(`${line} gives ${code}`, async () => {
      await using plugin = moduleOf(`${line} export const routes = () => [];`);
      const error = await rejectsWith(
        plugin.start(),
        "BRIDGE_LIFECYCLE_FAILED",
      );
      const cause = error.cause as { code: string; message: string };
      assert.equal(cause.code, code);
      assert.match(cause.message, /bundle/);
      assert.doesNotMatch(cause.message, /\bpacks?\b|declare/);
    });
  }
});

Deno.test("createSandboxedVmPluginModule() makes start, stop and dispose idempotent", async () => {
  const events: string[] = [];
  const plugin = moduleOf(
    `
    import { capabilities } from "cordon:host";
    export const start = () => capabilities.call("record", "start");
    export const stop = () => capabilities.call("record", "stop");
    export const routes = () => [{ method: "GET", path: "/" }];
    export const handleRequest = () => ({ status: 200, headers: [], body: "up" });`,
    {
      policy: { capabilities: ["record"] },
      proxies: { capabilities: { record: (e) => void events.push(String(e)) } },
    },
  );
  await Promise.all([plugin.start(), plugin.start()]);
  await plugin.start();
  assert.deepEqual(events, ["start"]);
  await plugin.stop();
  await plugin.stop();
  assert.deepEqual(events, ["start", "stop"]);
  assert.equal(plugin.metrics().state, "stopped");
  // Stopped on purpose: the code of a plugin being uninstalled, not of one
  // that failed to start.
  await rejectsWith(
    plugin.routes[0]!.handler(ctx(new Request("http://127.0.0.1/"), {})),
    "SANDBOX_DISPOSED",
  );
  await plugin.start();
  const response = await plugin.routes[0]!.handler(
    ctx(new Request("http://127.0.0.1/"), {}),
  );
  assert.equal(await response.text(), "up");
  await plugin.dispose();
  await plugin.dispose();
  assert.deepEqual(events, ["start", "stop", "start", "stop"]);
  assert.equal(plugin.metrics().state, "disposed");
  await rejectsWith(plugin.start(), "SANDBOX_DISPOSED");
  await rejectsWith(
    plugin.routes[0]!.handler(ctx(new Request("http://127.0.0.1/"), {})),
    "SANDBOX_DISPOSED",
  );
});

Deno.test("createSandboxedVmPluginModule() runs start() and stop() in the order they are called, on every tier, so the last one decides", async (t) => {
  for (const tier of PLUGIN_TIERS) {
    await t.step(tier, async () => {
      const events: string[] = [];
      await using plugin = createSandboxedVmPluginModule({
        manifest: { id: "bridge-order", version: "1.0.0" },
        sandbox: createPluginSandbox(tier, {
          pluginId: "bridge-order",
          pluginModule: {
            kind: "source",
            identifier: "bridge_order.js",
            source: `
    import { capabilities } from "cordon:host";
    export const start = () => capabilities.call("record", "start");
    export const stop = () => capabilities.call("record", "stop");
    export const routes = () => [{ method: "GET", path: "/" }];
    export const handleRequest = () => ({ status: 200, headers: [], body: "up" });`,
          },
          policy: { capabilities: ["record"] },
          proxies: {
            capabilities: { record: (e) => void events.push(String(e)) },
          },
          limits: { timeoutMs: 5000 },
        }),
      });
      const ask = () =>
        plugin.routes[0]!.handler(ctx(new Request("http://127.0.0.1/"), {}));
      await plugin.start();
      // A restart: the start is called while the stop is under way.
      await Promise.all([plugin.stop(), plugin.start()]);
      assert.equal(plugin.metrics().state, "running");
      assert.equal(await (await ask()).text(), "up");
      await Promise.all([plugin.stop(), plugin.start(), plugin.stop()]);
      assert.equal(plugin.metrics().state, "stopped");
      await rejectsWith(ask(), "SANDBOX_DISPOSED");
      assert.deepEqual(events, [
        "start",
        "stop",
        "start",
        "stop",
        "start",
        "stop",
      ]);
    });
  }
});

Deno.test("createSandboxedVmPluginModule() rejects malformed options", async () => {
  await using sandbox = createVmSandbox({
    pluginId: "x",
    pluginModule: { kind: "source", source: "", identifier: "x.js" },
  });
  assert.throws(
    () =>
      createSandboxedVmPluginModule({
        sandbox,
        manifest: { id: "Bad Id", version: "1" },
      }),
    TypeError,
  );
  assert.throws(
    () =>
      createSandboxedVmPluginModule({
        sandbox: {} as typeof sandbox,
        manifest: { id: "x", version: "1" },
      }),
    TypeError,
  );
});

Deno.test("createSandboxedVmPluginModule() refuses cookie, hop-by-hop and security response headers by default, and allows what responseHeaders allows", async () => {
  const source = `
export const routes = () => [{ method: "GET", path: "/:name" }];
export function handleRequest(req) {
  return { status: 200, headers: [["content-type", "text/plain"], [req.params.name, "x"]], body: "ok" };
}`;
  const sandbox = () =>
    createVmSandbox({
      pluginId: "headers",
      pluginModule: { kind: "source", source, identifier: "headers.js" },
      limits: { timeoutMs: 2000 },
    });
  await using strict = createSandboxedVmPluginModule({
    manifest: { id: "headers", version: "1.0.0" },
    sandbox: sandbox(),
  });
  await using lenient = createSandboxedVmPluginModule({
    manifest: { id: "headers", version: "1.0.0" },
    sandbox: sandbox(),
    responseHeaders: (name) => name !== "content-security-policy",
  });
  await strict.start();
  await lenient.start();
  const get = (plugin: PluginModule, name: string) =>
    plugin.routes[0]!.handler(
      ctx(new Request(`http://127.0.0.1/${name}`), { name }),
    );
  for (
    const name of [
      "Set-Cookie",
      "transfer-encoding",
      "proxy-status",
      "strict-transport-security",
      "access-control-allow-origin",
      "content-security-policy",
    ]
  ) {
    const error = await rejectsWith(
      get(strict, name),
      "BRIDGE_RESPONSE_HEADER_DENIED",
    );
    assert.match(error.message, new RegExp(`"${name.toLowerCase()}"`));
  }
  const allowed = await get(strict, "x-request-id");
  assert.equal(allowed.headers.get("x-request-id"), "x");
  const cookie = await get(lenient, "set-cookie");
  assert.equal(cookie.headers.get("set-cookie"), "x");
  // A policy that lets hop-by-hop fields through still does not put them
  // on the client's connection.
  for (const name of ["trailer", "proxy-status", "keep-alive"]) {
    const hop = await get(lenient, name);
    assert.equal(hop.headers.get(name), null, name);
    await hop.body?.cancel();
  }
  await rejectsWith(
    get(lenient, "content-security-policy"),
    "BRIDGE_RESPONSE_HEADER_DENIED",
  );
});

/** A plugin that answers an HTML page whose script would run as the host's origin. */
const HTML_PLUGIN = `
export const routes = () => [
  { method: "GET", path: "/page" },
  { method: "GET", path: "/throw" },
];
export function handleRequest(req) {
  if (req.url.endsWith("/throw")) throw new Error("broke");
  return {
    status: 200,
    headers: [["content-type", "text/html"]],
    body: "<script>fetch('/plugins/other/secrets')</script>",
  };
}`;

function htmlModule(
  tier: (typeof PLUGIN_TIERS)[number],
  options: { contentSecurityPolicy?: string | false } = {},
): PluginModule {
  return createSandboxedVmPluginModule({
    manifest: { id: "html", version: "1.0.0" },
    sandbox: createPluginSandbox(tier, {
      pluginId: "html",
      pluginModule: { kind: "source", source: HTML_PLUGIN, identifier: "h.js" },
      limits: { timeoutMs: 5000 },
    }),
    ...options,
  });
}

Deno.test("createSandboxedVmPluginModule() answers as a sandboxed document that is never sniffed, on every tier", async (t) => {
  for (const tier of PLUGIN_TIERS) {
    await t.step(tier, async () => {
      await using plugin = htmlModule(tier);
      await plugin.start();
      const response = await plugin.routes[0]!.handler(
        ctx(new Request("http://127.0.0.1/page"), {}),
      );
      assert.equal(response.headers.get("content-type"), "text/html");
      assert.equal(
        response.headers.get("content-security-policy"),
        "sandbox",
      );
      assert.equal(response.headers.get("x-content-type-options"), "nosniff");
      await response.body?.cancel();
      assert.deepEqual(plugin.answerHeaders, [
        ["content-security-policy", "sandbox"],
        ["x-content-type-options", "nosniff"],
      ]);
    });
  }
});

Deno.test("createSandboxedVmPluginModule() sends the contentSecurityPolicy it is given, or none for false", async () => {
  const page = async (plugin: PluginModule) => {
    await plugin.start();
    const response = await plugin.routes[0]!.handler(
      ctx(new Request("http://127.0.0.1/page"), {}),
    );
    await response.body?.cancel();
    return response.headers;
  };
  await using scripted = htmlModule("vm", {
    contentSecurityPolicy: "sandbox allow-scripts",
  });
  const headers = await page(scripted);
  assert.equal(
    headers.get("content-security-policy"),
    "sandbox allow-scripts",
  );
  assert.equal(headers.get("x-content-type-options"), "nosniff");
  await using own = htmlModule("vm", { contentSecurityPolicy: false });
  const ownHeaders = await page(own);
  assert.equal(ownHeaders.get("content-security-policy"), null);
  assert.equal(ownHeaders.get("x-content-type-options"), "nosniff");
  assert.deepEqual(own.answerHeaders, [["x-content-type-options", "nosniff"]]);
});

Deno.test("createSandboxedVmPluginModule() sends its policy before the plugin's own, which can only tighten it", async () => {
  const source = `
export const routes = () => [{ method: "GET", path: "/" }];
export const handleRequest = () => ({
  status: 200,
  headers: [
    ["content-security-policy", "default-src 'none'"],
    ["x-content-type-options", "sniff"],
  ],
  body: "<p>hi</p>",
});`;
  await using plugin = createSandboxedVmPluginModule({
    manifest: { id: "own-csp", version: "1.0.0" },
    sandbox: createVmSandbox({
      pluginId: "own-csp",
      pluginModule: { kind: "source", source, identifier: "own.js" },
      limits: { timeoutMs: 2000 },
    }),
    responseHeaders: () => true,
  });
  await plugin.start();
  const response = await plugin.routes[0]!.handler(
    ctx(new Request("http://127.0.0.1/"), {}),
  );
  await response.body?.cancel();
  assert.equal(
    response.headers.get("content-security-policy"),
    "sandbox, default-src 'none'",
  );
  // A browser reads the first value.
  assert.equal(
    response.headers.get("x-content-type-options"),
    "nosniff, sniff",
  );
});

Deno.test("createSandboxedVmPluginModule() refuses a contentSecurityPolicy that is no header value", async () => {
  await using sandbox = createVmSandbox({
    pluginId: "csp",
    pluginModule: { kind: "source", source: "", identifier: "csp.js" },
  });
  for (
    const value of [
      "",
      "  ",
      "sandbox\r\nset-cookie: a=b",
      "a\0b",
      "sandbox é",
      true,
      0,
      null,
    ]
  ) {
    assert.throws(
      () =>
        createSandboxedVmPluginModule({
          sandbox,
          manifest: { id: "csp", version: "1.0.0" },
          contentSecurityPolicy: value as never,
        }),
      {
        name: "TypeError",
        message:
          'Cannot create plugin "csp": contentSecurityPolicy must be a policy of visible ASCII, spaces and tabs, or false',
      },
      JSON.stringify(value),
    );
  }
});

Deno.test({
  name:
    "createPluginHost() answers 503 SANDBOX_UNAVAILABLE to a request whose plugin realm the system refuses descriptors, and 200 once it has them",
  // The host lowers its own descriptor limit and holds every descriptor
  // left once a timeout has ended the plugin's realm, so the next realm's
  // pipes cannot open; it then lets them go.
  ignore: Deno.build.os !== "linux",
  async fn() {
    const mod = new URL("./mod.ts", import.meta.url).href;
    const statuses = await runScript(
      `import { createPluginHost, createSandboxedVmPluginModule, createVmSandbox, identifyAnonymously } from ${
        JSON.stringify(mod)
      };
await using host = createPluginHost({ identify: identifyAnonymously });
await host.installPlugin({
  kind: "vm",
  module: createSandboxedVmPluginModule({
    manifest: { id: "p", version: "1.0.0" },
    sandbox: createVmSandbox({
      pluginId: "p",
      isolation: "process",
      limits: { timeoutMs: 1000 },
      pluginModule: {
        kind: "source",
        identifier: "p.js",
        source: \`export const routes = () => [{ method: "GET", path: "/:what" }];
export const handleRequest = (req) => {
  if (req.params.what === "loop") for (;;);
  return { status: 200, headers: [], body: "ok" };
};\`,
      },
    }),
  }),
});
const answer = async (what) => {
  const response = await host.fetch(new Request("http://127.0.0.1/plugins/p/" + what));
  const type = response.headers.get("content-type") ?? "";
  if (!type.includes("json")) return [response.status, await response.text()];
  const { code, detail } = await response.json();
  return [response.status, code, detail];
};
const statuses = [await answer("loop")];
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
statuses.push(await answer("ok"));
for (const file of held) file.close();
statuses.push(await answer("ok"));
console.log(JSON.stringify(statuses));
`,
      { flags: ["-A"] },
    );
    assert.deepEqual(statuses, [
      [
        504,
        "TIMEOUT",
        'Plugin "p" did not answer within its time limit: retry later',
      ],
      [
        503,
        "SANDBOX_UNAVAILABLE",
        'Plugin "p" could not start its sandbox on this host, which lacks room for it (file descriptors, processes or memory) or cannot run its tier: retry later',
      ],
      [200, "ok"],
    ]);
  },
});
