// The cases of the plugin host serving vm plugins over HTTP that hold on
// every runtime, written once. plugin/plugin_host_e2e_test.ts registers them
// with Deno.test and Deno.serve, plugin/node_test/plugin_host_e2e.test.mjs
// with node:test and Node's http server through toNodeListener(). This file
// is JavaScript so that Node runs it as is.

import assert from "node:assert/strict";
import { readFileSync } from "node:fs";

const ECHO_SOURCE = readFileSync(
  new URL("../../fixtures/plugins/echo_plugin.js", import.meta.url),
  "utf8",
);

/** The host-side twin of the plugin's fingerprint, to check its answers. */
function fingerprint(text) {
  let hash = 0x811c9dc5;
  for (const byte of new TextEncoder().encode(text)) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash.toString(16).padStart(8, "0");
}

/**
 * Registers the shared cases of the plugin host over HTTP.
 *
 * @param api `createPluginHost`, `identifyByTrustedHeaders`,
 * `createSandboxedVmPluginModule` and `createVmSandbox` of the build under
 * test, and `serve(handler)`, which
 * serves a fetch handler on 127.0.0.1 and resolves to `{ port, close() }`.
 * @param test Registers one test: `test(name, fn)`, where `fn` receives a
 * context whose `step(name, fn)` runs a sub-test.
 */
export function registerPluginHostCases(api, test) {
  const {
    createPluginHost,
    createSandboxedVmPluginModule,
    createPluginSandbox,
    identifyByTrustedHeaders,
    serve,
    tiers,
  } = api;

  function sandboxedPlugin(tier, id, source, extra = {}) {
    return createSandboxedVmPluginModule({
      manifest: { id, version: "1.0.0", capabilities: ["config.get"] },
      sandbox: createPluginSandbox(tier, {
        pluginId: id,
        pluginModule: { kind: "source", source, identifier: `${id}.js` },
        ...extra,
      }),
    });
  }

  async function installEcho(host, upstreamPort, tier) {
    await host.installPlugin({
      kind: tier,
      module: sandboxedPlugin(tier, "echo", ECHO_SOURCE, {
        policy: {
          capabilities: ["config.get"],
          fetch: [`127.0.0.1:${upstreamPort}`],
        },
        proxies: {
          capabilities: {
            "config.get": () => ({
              upstreamUrl: `http://127.0.0.1:${upstreamPort}`,
            }),
            "secrets.read": () => "the secret",
          },
        },
        limits: { timeoutMs: 3000 },
      }),
    });
  }

  for (const tier of tiers) {
    test(`the plugin host serves the example plugin on the ${tier} tier over HTTP with values computed in the sandbox`, async (t) => {
      const upstreamSeen = [];
      const upstream = await serve((request) => {
        upstreamSeen.push(request.headers.get("x-tenant") ?? "");
        return Response.json({ items: [1, 2, 3], from: "upstream" });
      });
      const host = createPluginHost({ identify: identifyByTrustedHeaders });
      const server = await serve(host.fetch);
      try {
        await installEcho(host, upstream.port, tier);
        const base = `http://127.0.0.1:${server.port}/plugins/echo`;
        const identity = {
          "x-cordon-principal": "ada",
          "x-cordon-tenant": "acme",
        };

        await t.step(
          "GET echoes principal and tenant with a sandbox-computed fingerprint",
          async () => {
            const response = await fetch(`${base}/echo/hello`, {
              headers: identity,
            });
            assert.equal(response.status, 200);
            assert.equal(response.headers.get("x-plugin"), "echo");
            assert.deepEqual(await response.json(), {
              principalId: "ada",
              tenantId: "acme",
              word: "hello",
              fingerprint: fingerprint("hello|ada|acme"),
              sandboxed: true,
              starts: 1,
            });
          },
        );

        await t.step(
          "POST bodies reach the sandbox and come back transformed",
          async () => {
            const response = await fetch(`${base}/echo`, {
              method: "POST",
              headers: identity,
              body: "naïve ☃",
            });
            assert.deepEqual(await response.json(), {
              principalId: "ada",
              tenantId: "acme",
              length: new TextEncoder().encode("naïve ☃").length,
              fingerprint: fingerprint("naïve ☃"),
              reversed: "☃ evïan",
            });
          },
        );

        await t.step(
          "the plugin reads a capability and fetches an allowed host",
          async () => {
            const response = await fetch(`${base}/upstream`, {
              headers: identity,
            });
            const body = await response.json();
            assert.equal(response.status, 200);
            assert.deepEqual(body.upstream, {
              items: [1, 2, 3],
              from: "upstream",
            });
            assert.equal(body.upstreamStatus, 200);
            assert.equal(
              body.fingerprint,
              fingerprint(
                JSON.stringify({ items: [1, 2, 3], from: "upstream" }),
              ),
            );
            assert.deepEqual(upstreamSeen, ["acme"]);
          },
        );

        await t.step(
          "a capability outside the policy answers 403 PERMISSION_DENIED",
          async () => {
            const response = await fetch(`${base}/secret`, {
              headers: identity,
            });
            assert.equal(response.status, 403);
            const problem = await response.json();
            assert.equal(problem.code, "PERMISSION_DENIED");
            assert.doesNotMatch(JSON.stringify(problem), /the secret/);
          },
        );

        await t.step(
          "an unknown route answers 404 PLUGIN_NOT_FOUND",
          async () => {
            for (
              const url of [
                `${base}/nowhere`,
                `http://127.0.0.1:${server.port}/plugins/none/x`,
              ]
            ) {
              const response = await fetch(url);
              assert.equal(response.status, 404, url);
              assert.equal((await response.json()).code, "PLUGIN_NOT_FOUND");
            }
          },
        );
      } finally {
        await server.close();
        await host.dispose();
        await upstream.close();
      }
    });

    test(`a looping, a never-settling and a memory-hungry plugin on the ${tier} tier do not stop the host serving others`, async () => {
      const upstream = await serve(() => Response.json({}));
      const host = createPluginHost({ identify: identifyByTrustedHeaders });
      const server = await serve(host.fetch);
      try {
        await installEcho(host, upstream.port, tier);
        const bad = (body) => `
    export const routes = () => [{ method: "GET", path: "/" }];
    export async function handleRequest() { ${body} }`;
        const limits = { timeoutMs: 800, memoryLimitBytes: 48 * 1024 * 1024 };
        await host.installPlugin({
          kind: tier,
          module: sandboxedPlugin(tier, "looper", bad("for (;;) {}"), {
            limits,
          }),
        });
        await host.installPlugin({
          kind: tier,
          module: sandboxedPlugin(
            tier,
            "waiter",
            bad("return new Promise(() => {});"),
            {
              limits,
            },
          ),
        });
        await host.installPlugin({
          kind: tier,
          module: sandboxedPlugin(
            tier,
            "hog",
            bad(
              "const a = []; for (;;) a.push(new Array(1e5).fill(a.length));",
            ),
            { limits: { ...limits, timeoutMs: 20_000 } },
          ),
        });
        const base = `http://127.0.0.1:${server.port}/plugins`;
        const get = async (path) => {
          const response = await fetch(`${base}${path}`, {
            headers: { "x-cordon-principal": "p", "x-cordon-tenant": "t" },
          });
          return { status: response.status, body: await response.json() };
        };
        const badOnes = Promise.all([
          get("/looper/"),
          get("/waiter/"),
          get("/hog/"),
        ]);
        let settled = false;
        badOnes.finally(() => settled = true);
        // While the bad plugins hold their realms, the good one keeps answering.
        const good = [];
        for (let i = 0; !settled; i++) {
          const answer = await get(`/echo/echo/w${i}`);
          good.push(answer.status);
          assert.equal(answer.body.fingerprint, fingerprint(`w${i}|p|t`));
        }
        const [looper, waiter, hog] = await badOnes;
        assert.ok(
          good.length >= 5,
          `only ${good.length} requests were answered`,
        );
        assert.deepEqual(good, Array(good.length).fill(200));
        assert.deepEqual([looper.status, looper.body.code], [504, "TIMEOUT"]);
        assert.deepEqual([waiter.status, waiter.body.code], [504, "TIMEOUT"]);
        assert.deepEqual([hog.status, hog.body.code], [502, "OUT_OF_MEMORY"]);
        const after = await get("/echo/echo/after");
        assert.equal(after.status, 200);
      } finally {
        await server.close();
        await host.dispose();
        await upstream.close();
      }
    });
  }
}
