/**
 * The page server of the browser leg on Node: what `e2e/server.ts` serves
 * on Deno (the routes of `e2e/_page_routes.mjs` and the delivery handler
 * over a packs folder, default the fixture packs), served by the Node
 * build (`deno task build:node` writes `dist/node/`) with `node:http`
 * through `toNodeListener`, as a platform on Node serves it. Listens on
 * 127.0.0.1 only.
 *
 * Usage (from the repository root, after `deno task build:node` and
 * `deno task bundle`):
 *
 * ```sh
 * node e2e/node_server.mjs [--port 8720] [--packs DIR]
 * ```
 *
 * @module
 */

import { readFile } from "node:fs/promises";
import { createServer } from "node:http";
import process from "node:process";
import { fileURLToPath } from "node:url";
import { createPageHandler, readServerArgs } from "./_page_routes.mjs";

const BUILD = new URL("../dist/node/", import.meta.url);
const DEFAULT_PORT = 8720;

/**
 * Imports one entry of the Node build, with a message that says how to
 * make it when it is missing.
 *
 * @param {string} path The entry's file under `dist/node/`.
 */
async function importBuilt(path) {
  try {
    return await import(new URL(path, BUILD).href);
  } catch (error) {
    throw new Error(
      `Cannot load dist/node/${path}: ${error}; run "deno task build:node" first`,
    );
  }
}

async function main() {
  const args = readServerArgs(process.argv.slice(2), DEFAULT_PORT);
  const { createDiskCatalog } = await importBuilt("catalog/disk_catalog.js");
  const { createDeliveryHandler } = await importBuilt("delivery/mod.js");
  const { toNodeListener } = await importBuilt("plugin/mod.js");
  const packs = args.packs ??
    fileURLToPath(new URL("../fixtures/packs", import.meta.url));
  const catalog = await createDiskCatalog(packs);
  for (const diagnostic of catalog.diagnostics()) {
    console.error(`rejected ${diagnostic.pack}: ${diagnostic.message}`);
  }
  const handle = createPageHandler(
    createDeliveryHandler(catalog),
    async (file) => new Uint8Array(await readFile(file)),
  );
  const server = createServer(toNodeListener(handle));
  server.listen(args.port, "127.0.0.1", () => {
    console.log(
      `cordon e2e page server on Node on http://127.0.0.1:${server.address().port}/ (${catalog.summaries().length} packs)`,
    );
  });
  const stop = () => {
    server.closeAllConnections();
    server.close();
  };
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
}

await main();
