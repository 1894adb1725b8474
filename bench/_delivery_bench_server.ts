/**
 * The server side of `delivery_bench.ts`, run in its own Deno process: the
 * delivery server over the fixture packs (no access log), and beside it a
 * bare `Deno.serve` that returns the same module's bytes from memory, the
 * ceiling. Prints one JSON line with both ports and the module, then serves
 * until SIGTERM.
 *
 * @module
 */

import { serveDelivery } from "../delivery/serve.ts";

const packsDir = decodeURIComponent(
  new URL("../fixtures/packs/", import.meta.url).pathname,
);
const server = await serveDelivery({ packsDir, port: 0 });
const pack = server.catalog.summaries().find((p) =>
  p.name === "@cordon-fixtures/math"
)!;
const module = pack.modules.find((m) => m.path === "./index.js")!;
const delivery = await server.catalog.authorizeDelivery(module.id);
if (!delivery.ok) throw new Error("The bench module is not deliverable");

const bytes = new TextEncoder().encode(delivery.content);
const etag = `"${delivery.digest}"`;
const bare = Deno.serve(
  { hostname: "127.0.0.1", port: 0, onListen() {} },
  (request) =>
    request.headers.get("if-none-match") === etag
      ? new Response(null, { status: 304, headers: { etag } })
      : new Response(bytes, {
        headers: { "content-type": "text/javascript; charset=utf-8" },
      }),
);

const stop = async () => {
  await Promise.all([server.shutdown(), bare.shutdown()]);
  Deno.exit(0);
};
Deno.addSignalListener("SIGTERM", stop);
Deno.addSignalListener("SIGINT", stop);

console.log(JSON.stringify({
  deliveryUrl: `${server.url}/${module.id}`,
  bareUrl: `http://127.0.0.1:${bare.addr.port}/`,
  etag,
  bytes: bytes.byteLength,
}));
