/**
 * The server side of `delivery_bench.ts`, run in its own Deno process: the
 * delivery server over the fixture packs (no access log) twice, with the
 * connection guard (the default) and without it, and beside them a bare
 * `Deno.serve` that answers the same module from memory, the ceiling.
 * Prints one JSON line with the three URLs and the module, then serves
 * until SIGTERM.
 *
 * The bare server sends what HTTP requires of the same answers and nothing
 * more. A `304` must repeat the `ETag` and `Cache-Control` that the `200`
 * to the same request would carry (RFC 9110 §15.4.5), and a client can only
 * revalidate with an `ETag` it got from a `200`, so the bare `200` carries
 * `Content-Type`, `ETag` and `Cache-Control`, and its `304` carries `ETag`
 * and `Cache-Control`, with the values the delivery route sends. What the
 * delivery route adds on top (CORS headers, `Repr-Digest`, the
 * `X-Cordon-*` headers, routing and authorization) counts against it.
 *
 * @module
 */

import { serveDelivery } from "../delivery/serve.ts";

const packsDir = decodeURIComponent(
  new URL("../fixtures/packs/", import.meta.url).pathname,
);
const server = await serveDelivery({ packsDir, port: 0 });
const unguarded = await serveDelivery({
  packsDir,
  port: 0,
  connectionGuard: false,
});
const pack = server.catalog.summaries().find((p) =>
  p.name === "@cordon-fixtures/math"
)!;
const module = pack.modules.find((m) => m.path === "./index.js")!;
const delivery = await server.catalog.authorizeDelivery(module.id);
if (!delivery.ok) throw new Error("The bench module is not deliverable");
const deliveryUrl = `${server.url}/${module.id}`;
const unguardedUrl = `${unguarded.url}/${module.id}`;

const bytes = new TextEncoder().encode(delivery.content);
const etag = `"${delivery.digest}"`;
const cacheControl = await deliveryCacheControl();
const notModifiedHeaders = { etag, "cache-control": cacheControl };
const okHeaders = {
  "content-type": "text/javascript; charset=utf-8",
  etag,
  "cache-control": cacheControl,
};
const bare = Deno.serve(
  { hostname: "127.0.0.1", port: 0, onListen() {} },
  (request) =>
    request.headers.get("if-none-match") === etag
      ? new Response(null, { status: 304, headers: notModifiedHeaders })
      : new Response(bytes, { headers: okHeaders }),
);
const bareUrl = `http://127.0.0.1:${bare.addr.port}/`;
await assertSameValidators();

/** The `Cache-Control` the delivery route sends for the bench module. */
async function deliveryCacheControl(): Promise<string> {
  const response = await fetch(deliveryUrl);
  await response.body?.cancel();
  const value = response.headers.get("cache-control");
  if (response.status !== 200 || value === null) {
    throw new Error("The delivery route did not answer 200 with Cache-Control");
  }
  return value;
}

/**
 * Checks that both servers answer 200 and 304 with the same `ETag` and
 * `Cache-Control`, so the bench compares the same answers.
 */
async function assertSameValidators(): Promise<void> {
  const requests: Record<string, string>[] = [{}, { "if-none-match": etag }];
  for (const headers of requests) {
    const [ours, unguardedOurs, theirs] = await Promise.all(
      [deliveryUrl, unguardedUrl, bareUrl].map(async (url) => {
        const response = await fetch(url, { headers });
        await response.body?.cancel();
        return [
          response.status,
          response.headers.get("etag"),
          response.headers.get("cache-control"),
        ].join(" ");
      }),
    );
    if (ours !== theirs || unguardedOurs !== theirs) {
      throw new Error(
        `The servers answer differently: ${ours}, ${unguardedOurs} vs ${theirs}`,
      );
    }
  }
}

const stop = async () => {
  await Promise.all([
    server.shutdown(),
    unguarded.shutdown(),
    bare.shutdown(),
  ]);
  Deno.exit(0);
};
Deno.addSignalListener("SIGTERM", stop);
Deno.addSignalListener("SIGINT", stop);

console.log(JSON.stringify({
  deliveryUrl,
  unguardedUrl,
  bareUrl,
  etag,
  bytes: bytes.byteLength,
}));
