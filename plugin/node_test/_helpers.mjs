// Shared helpers of the plugin host's Node tests. They import the Node
// build (`deno task build:node` writes it to dist/node/).

import http from "node:http";

export const vm = await import("../../dist/node/vm/mod.js");
export const plugin = await import("../../dist/node/plugin/mod.js");
export const testing = await import("../../dist/node/plugin/testing.js");

/** Serves `handler` on Node's http server, through toNodeListener(). */
export async function serve(handler) {
  const server = http.createServer(plugin.toNodeListener(handler));
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    port: server.address().port,
    close: () => new Promise((resolve) => server.close(resolve)),
  };
}
