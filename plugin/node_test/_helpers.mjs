// Shared helpers of the plugin host's Node tests. They import the Node
// build (`deno task build:node` writes it to dist/node/).

export const vm = await import("../../dist/node/vm/mod.js");
export const plugin = await import("../../dist/node/plugin/mod.js");
export const testing = await import("../../dist/node/plugin/testing.js");
