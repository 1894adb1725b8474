import assert from "node:assert/strict";
import { createSandboxedVmPluginModule } from "./host_bridge.ts";
import { createHostPluginModule } from "./host_plugin_module.ts";
import { createPluginHost, identifyAnonymously } from "./plugin_host.ts";
import { createPluginSandbox, PLUGIN_TIERS } from "./plugin_sandbox.ts";
import { registerHostileClientCases } from "./node_test/hostile_client_cases.mjs";
import { serve } from "./_test_serve_test.ts";

// Every case is shared with the Node leg
// (plugin/node_test/hostile_client.test.mjs), which serves with node:http.
registerHostileClientCases(
  {
    createPluginHost,
    createHostPluginModule,
    identifyAnonymously,
    serve,
  },
  (name: string, fn: () => Promise<void>) => Deno.test(name, fn),
);

/** Sends `head` on a new connection and reads until the server closes it. */
async function exchange(port: number, head: string): Promise<string> {
  const connection = await Deno.connect({ hostname: "127.0.0.1", port });
  await connection.write(new TextEncoder().encode(head));
  const text = await new Response(connection.readable).text();
  return text;
}

/** A plugin that answers the method and body it was handed. */
const METHOD_ECHO = `
export const routes = () => [{ method: "GET", path: "/m" }];
export function handleRequest(req) {
  return { status: 200, headers: [], body: req.method + " " + req.bodyBase64 };
}`;

// Node's parser answers a method that is not in upper case 400 itself
// (docs/plugin.md, On Node), so these run on Deno only.
Deno.test("a get, Get or head with a body reaches a plugin on every tier as GET or HEAD without it, also from a URL the host rewrites", async (t) => {
  const host = createPluginHost({ identify: identifyAnonymously });
  const server = serve(host.fetch);
  try {
    await host.installPlugin({
      kind: "host",
      module: createHostPluginModule({
        manifest: { id: "host", version: "1.0.0" },
        plugin: {
          routes: () => [{ method: "GET", path: "/m" }],
          handleRequest: (req) => ({
            status: 200,
            headers: [],
            body: `${req.method} ${req.bodyBase64}`,
          }),
        },
      }),
    });
    for (const tier of PLUGIN_TIERS) {
      await host.installPlugin({
        kind: tier,
        module: createSandboxedVmPluginModule({
          manifest: { id: tier, version: "1.0.0" },
          sandbox: createPluginSandbox(tier, {
            pluginId: tier,
            pluginModule: {
              kind: "source",
              source: METHOD_ECHO,
              identifier: `${tier}.js`,
            },
          }),
        }),
      });
    }
    for (const id of ["host", ...PLUGIN_TIERS]) {
      await t.step(id, async () => {
        // A Host in capitals has the host rebuild the request with the URL
        // a parser writes.
        for (const host of ["127.0.0.1", "LOCALHOST"]) {
          for (const method of ["get", "Get", "head"]) {
            const answer = await exchange(
              server.port,
              `${method} /plugins/${id}/m HTTP/1.1\r\nHost: ${host}\r\nContent-Length: 2\r\nConnection: close\r\n\r\nab`,
            );
            const what = `${method}, Host ${host}`;
            assert.match(answer, /^HTTP\/1\.1 200 OK\r\n/, what);
            if (method !== "head") {
              assert.match(answer, /\r\n\r\nGET null$/, what);
            }
          }
        }
      });
    }
  } finally {
    await server.close();
    await host.dispose();
  }
});
