/**
 * The page server of the browser leg: the delivery handler over a packs
 * folder (default: the fixture packs), plus the test page at `/`, the
 * browser bundle at `/dist/cordon.js` and the bundle of the pool's runner
 * at `/dist/cordon-runner.js`, which the page starts as Web Workers.
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

import { createDiskCatalog } from "../catalog/disk_catalog.ts";
import { createDeliveryHandler } from "../delivery/handler.ts";

const ROOT = new URL("../", import.meta.url);
const DEFAULT_PORT = 8719;

/** The files the page server answers besides the delivery routes. */
const STATIC: Readonly<Record<string, { file: URL; type: string }>> = {
  "/": {
    file: new URL("e2e/index.html", ROOT),
    type: "text/html; charset=utf-8",
  },
  "/dist/cordon.js": {
    file: new URL("dist/cordon.js", ROOT),
    type: "text/javascript; charset=utf-8",
  },
  "/dist/cordon-runner.js": {
    file: new URL("dist/cordon-runner.js", ROOT),
    type: "text/javascript; charset=utf-8",
  },
};

function option(name: string): string | undefined {
  const args = Deno.args;
  for (const [i, arg] of args.entries()) {
    if (arg === `--${name}`) return args[i + 1];
    if (arg.startsWith(`--${name}=`)) return arg.slice(name.length + 3);
  }
  return undefined;
}

async function serveStatic(
  entry: { file: URL; type: string },
): Promise<Response> {
  try {
    return new Response(await Deno.readFile(entry.file), {
      headers: { "content-type": entry.type, "cache-control": "no-store" },
    });
  } catch {
    return new Response(
      'Not built yet: run "deno task bundle" first',
      { status: 404, headers: { "content-type": "text/plain" } },
    );
  }
}

async function main(): Promise<void> {
  const port = Number(option("port") ?? DEFAULT_PORT);
  if (!Number.isInteger(port) || port < 0 || port > 65535) {
    throw new RangeError(`Cannot start the page server: bad --port ${port}`);
  }
  const packs = option("packs") ?? new URL("fixtures/packs", ROOT).pathname;
  const catalog = await createDiskCatalog(packs);
  for (const diagnostic of catalog.diagnostics()) {
    console.error(`rejected ${diagnostic.pack}: ${diagnostic.message}`);
  }
  const deliver = createDeliveryHandler(catalog);
  const server = Deno.serve({
    hostname: "127.0.0.1",
    port,
    onListen({ port }) {
      console.log(
        `cordon e2e page server on http://127.0.0.1:${port}/ (${catalog.summaries().length} packs)`,
      );
    },
  }, (request) => {
    const entry = STATIC[new URL(request.url).pathname];
    if (request.method === "GET" && entry !== undefined) {
      return serveStatic(entry);
    }
    return deliver(request);
  });
  const stop = () => server.shutdown();
  Deno.addSignalListener("SIGINT", stop);
  Deno.addSignalListener("SIGTERM", stop);
  await server.finished;
}

if (import.meta.main) await main();
