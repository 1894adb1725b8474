/**
 * A plugin module served by a host of a platform's own, written from the
 * documented contract alone (docs/plugin.md, "Hosting a plugin module in
 * your own server"): it routes, calls route handlers, adds the module's
 * answerHeaders and drives the lifecycle itself, with none of the plugin
 * host's code.
 */
import assert from "node:assert/strict";
import { CordonError } from "../protocol/cordon_error.ts";
import { createSandboxedVmPluginModule } from "./host_bridge.ts";
import type { PluginModule, RouteDefinition } from "./plugin_module.ts";
import { createPluginSandbox } from "./plugin_sandbox.ts";

const SOURCE = `
export const routes = () => [{ method: "GET", path: "/hello/:name" }];
export const handleRequest = (req) => ({
  status: 200,
  headers: [["content-type", "text/plain"]],
  body: "hello " + req.params.name,
});`;

function paramsOf(
  route: RouteDefinition,
  path: string,
): Record<string, string> | null {
  const wanted = route.path.split("/");
  const given = path.split("/");
  if (wanted.length !== given.length) return null;
  const params: Record<string, string> = {};
  for (const [i, segment] of wanted.entries()) {
    if (segment.startsWith(":")) params[segment.slice(1)] = given[i]!;
    else if (segment !== given[i]) return null;
  }
  return params;
}

/** The smallest host the docs describe, serving one module under `/p`. */
function minimalHost(module: PluginModule) {
  return async (request: Request): Promise<Response> => {
    const path = new URL(request.url).pathname.replace(/^\/p/, "");
    const method = request.method === "HEAD" ? "GET" : request.method;
    for (const route of module.routes) {
      const params = route.method === method ? paramsOf(route, path) : null;
      if (params === null) continue;
      let response: Response;
      try {
        response = await route.handler({
          request,
          principalId: null,
          tenantId: null,
          capabilities: [],
          params,
        });
      } catch (error) {
        const code = error instanceof CordonError ? error.code : "UNKNOWN";
        const status = code === "SANDBOX_DISPOSED" ? 503 : 502;
        response = Response.json({ code }, { status });
      }
      const headers = new Headers(response.headers);
      for (const [name, value] of module.answerHeaders ?? []) {
        if (!headers.has(name)) headers.set(name, value);
      }
      return new Response(response.body, { status: response.status, headers });
    }
    return new Response(null, { status: 404 });
  };
}

function moduleOn(tier: "vm" | "quickjs"): PluginModule {
  return createSandboxedVmPluginModule({
    manifest: { id: "foreign", version: "1.0.0" },
    sandbox: createPluginSandbox(tier, {
      pluginId: "foreign",
      pluginModule: { kind: "source", source: SOURCE, identifier: "f.js" },
      limits: { timeoutMs: 10_000 },
    }),
  });
}

Deno.test("a plugin module serves a host of a platform's own through its routes and answerHeaders", async () => {
  await using module = moduleOn("vm");
  const serve = minimalHost(module);
  await module.start();
  const response = await serve(new Request("http://127.0.0.1/p/hello/ada"));
  assert.equal(response.status, 200);
  assert.equal(await response.text(), "hello ada");
  assert.equal(response.headers.get("content-security-policy"), "sandbox");
  assert.equal(response.headers.get("x-content-type-options"), "nosniff");
});

Deno.test("a request that arrives while a stop and the start after it are under way answers SANDBOX_DISPOSED, not SANDBOX_CRASHED", async (t) => {
  for (const tier of ["vm", "quickjs"] as const) {
    await t.step(tier, async () => {
      await using module = moduleOn(tier);
      const serve = minimalHost(module);
      await module.start();
      // A restart: the stop ends the realm the request would run in.
      const restart = Promise.all([module.stop(), module.start()]);
      const during = await serve(new Request("http://127.0.0.1/p/hello/a"));
      await restart;
      assert.equal(during.status, 503);
      assert.equal((await during.json()).code, "SANDBOX_DISPOSED");
      const after = await serve(new Request("http://127.0.0.1/p/hello/b"));
      assert.equal(await after.text(), "hello b");
    });
  }
});

Deno.test("a route handler given a context whose fields throw when read rejects with BRIDGE_MARSHAL_FAILED", async () => {
  await using module = moduleOn("vm");
  await module.start();
  const params = Object.defineProperty({}, "name", {
    enumerable: true,
    get() {
      throw new Error("unreadable");
    },
  });
  let caught: unknown;
  try {
    await module.routes[0]!.handler({
      request: new Request("http://127.0.0.1/p/hello/a"),
      principalId: null,
      tenantId: null,
      capabilities: [],
      params,
    });
  } catch (error) {
    caught = error;
  }
  assert.ok(caught instanceof CordonError, String(caught));
  assert.equal(caught.code, "BRIDGE_MARSHAL_FAILED");
  assert.deepEqual(caught.cause, { reason: "context-shape" });
});
