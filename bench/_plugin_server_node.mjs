// The Node side of plugin_bench.ts: serves the plugin given as the first
// argument with the plugin host of the Node build (`deno task build:node`),
// as a host plugin and on each tier Node hosts, until stdin closes. Prints
// `{ "port": n }` once it listens.

import http from "node:http";
import process from "node:process";

const {
  createHostPluginModule,
  createPluginHost,
  createPluginSandbox,
  createSandboxedVmPluginModule,
  identifyByTrustedHeaders,
  toNodeListener,
} = await import("../dist/node/plugin/mod.js");

const [source, tiersJson] = process.argv.slice(2);
const tiers = JSON.parse(tiersJson);
const host = createPluginHost({ identify: identifyByTrustedHeaders });
const plugin = await import(
  `data:text/javascript;base64,${Buffer.from(source).toString("base64")}`
);
await host.installPlugin({
  kind: "host",
  module: createHostPluginModule({
    manifest: { id: "host", version: "1.0.0" },
    plugin,
  }),
});
for (const tier of tiers) {
  await host.installPlugin({
    kind: tier,
    module: createSandboxedVmPluginModule({
      manifest: { id: tier, version: "1.0.0" },
      sandbox: createPluginSandbox(tier, {
        pluginId: tier,
        pluginModule: { kind: "source", source, identifier: `${tier}.js` },
      }),
    }),
  });
}
const server = http.createServer(toNodeListener(host.fetch));
server.listen(0, "127.0.0.1", () => {
  console.log(JSON.stringify({ port: server.address().port }));
});
process.stdin.resume();
process.stdin.on("end", async () => {
  server.close();
  await host.dispose();
  process.exit(0);
});
