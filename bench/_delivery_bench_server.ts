/**
 * The server side of `delivery_bench.ts`, run in its own Deno process: the
 * delivery server over the fixture packs (no access log) twice, with the
 * connection guard (the default) and without it, and beside them two bare
 * `Deno.serve` servers that answer the same module from memory. Prints one
 * JSON line with the four URLs and the module, then serves until SIGTERM.
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
 * The second bare server sends the same headers as the delivery route,
 * byte for byte, as cheaply as `Deno.serve` allows: each `200` is a clone
 * of one prepared response (building one per request costs far more, for
 * `Deno.serve` checks every header of a new response), and each `304` is
 * one prepared response, returned as it is. Against it, what counts
 * against the delivery route is its routing, authorization and telemetry.
 *
 * @module
 */

import { serveDelivery } from "../delivery/serve.ts";
import { fileURLToPath } from "node:url";

const packsDir = fileURLToPath(new URL("../fixtures/packs/", import.meta.url));
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
const revalidations: Record<string, string>[] = [{}, { "if-none-match": etag }];
const [sameOk, sameNotModified] = await Promise.all(
  revalidations.map(async (headers) => {
    const response = await fetch(deliveryUrl, { headers });
    const body = response.status === 200 ? bytes : null;
    await response.body?.cancel();
    return new Response(body, {
      status: response.status,
      headers: withoutServerHeaders(response.headers),
    });
  }),
);
const bareSame = Deno.serve(
  { hostname: "127.0.0.1", port: 0, onListen() {} },
  (request) =>
    request.headers.get("if-none-match") === etag
      ? sameNotModified!
      : sameOk!.clone(),
);
const bareSameUrl = `http://127.0.0.1:${bareSame.addr.port}/`;
await assertSameValidators();
await assertSameAnswers();

/**
 * A response's headers without those `Deno.serve` writes itself (`Date`,
 * and `Content-Length` from the body).
 */
function withoutServerHeaders(headers: Headers): [string, string][] {
  return [...headers].filter(([name]) =>
    name !== "date" && name !== "content-length"
  );
}

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

/**
 * Checks that the bare server with the same headers answers 200 and 304
 * exactly as the delivery route does: status, every header but `Date`, and
 * body.
 */
async function assertSameAnswers(): Promise<void> {
  for (const headers of revalidations) {
    const [ours, theirs] = await Promise.all(
      [deliveryUrl, bareSameUrl].map(async (url) => {
        const response = await fetch(url, { headers });
        const body = new Uint8Array(await response.arrayBuffer());
        return JSON.stringify([
          response.status,
          [...response.headers].filter(([name]) => name !== "date"),
          [...body],
        ]);
      }),
    );
    if (ours !== theirs) {
      throw new Error(
        `The bare server with the same headers answers differently: ${ours} vs ${theirs}`,
      );
    }
  }
}

const stop = async () => {
  await Promise.all([
    server.shutdown(),
    unguarded.shutdown(),
    bare.shutdown(),
    bareSame.shutdown(),
  ]);
  Deno.exit(0);
};
Deno.addSignalListener("SIGTERM", stop);
Deno.addSignalListener("SIGINT", stop);

console.log(JSON.stringify({
  deliveryUrl,
  unguardedUrl,
  bareUrl,
  bareSameUrl,
  etag,
  bytes: bytes.byteLength,
}));
