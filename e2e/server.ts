/**
 * The page server of the browser leg on Deno: the delivery handler over a
 * packs folder (default: the fixture packs), served with `Deno.serve`,
 * plus the test pages, their script, the bundles and the test routes of
 * `e2e/_page_routes.mjs`, which `e2e/node_server.mjs` serves on Node.
 * Listens on 127.0.0.1 only.
 *
 * Usage (from the repository root, after `deno task bundle`):
 *
 * ```sh
 * deno run --allow-read=. --allow-net=127.0.0.1 e2e/server.ts [--port 8719] [--packs DIR]
 * ```
 *
 * @module
 */

import { fileURLToPath } from "node:url";
import { createDiskCatalog } from "../catalog/disk_catalog.ts";
import { createDeliveryHandler } from "../delivery/handler.ts";
import { createPageHandler, readServerArgs } from "./_page_routes.mjs";

const DEFAULT_PORT = 8719;

async function main(): Promise<void> {
  const args = readServerArgs(Deno.args, DEFAULT_PORT);
  const packs = args.packs ??
    fileURLToPath(new URL("../fixtures/packs", import.meta.url));
  const catalog = await createDiskCatalog(packs);
  for (const diagnostic of catalog.diagnostics()) {
    console.error(`rejected ${diagnostic.pack}: ${diagnostic.message}`);
  }
  const handle = createPageHandler(
    createDeliveryHandler(catalog),
    (file) => Deno.readFile(file),
  );
  const server = Deno.serve({
    hostname: "127.0.0.1",
    port: args.port,
    onListen({ port }) {
      console.log(
        `cordon e2e page server on http://127.0.0.1:${port}/ (${catalog.summaries().length} packs)`,
      );
    },
  }, handle);
  const stop = () => server.shutdown();
  Deno.addSignalListener("SIGINT", stop);
  Deno.addSignalListener("SIGTERM", stop);
  await server.finished;
}

if (import.meta.main) await main();
