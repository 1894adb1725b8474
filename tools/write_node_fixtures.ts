/**
 * Writes what the Node tests of the remote and staged catalogs serve, and
 * what the Node tests of the disk catalog check its answers against, made
 * on Deno by cordon's own code from the fixture packs:
 *
 * - `dist/fixtures/staged/`: the packs' staged tree (`writeStagedTree`);
 * - `dist/fixtures/delivery.json`: the delivery handler's answers over the
 *   on-disk catalog, the whole listing and every module by id (pinned to
 *   its digest or not), each with its status, headers and body (base64);
 *   and, under `browser`, its answers to requests as Chromium sends them
 *   (gzip accepted, an `Origin`): the listing compressed, revalidations
 *   answered `304` and `412`, `HEAD`, a preflight, a `405` and `404`s,
 *   each with its method and request headers.
 *
 * Usage: `deno run --allow-read=. --allow-write=dist tools/write_node_fixtures.ts`
 * (`deno task build:node` runs it).
 *
 * @module
 */

import { createDiskCatalog } from "../catalog/disk_catalog.ts";
import { planStagedTree, writeStagedTree } from "../catalog/stage.ts";
import { createDeliveryHandler } from "../delivery/handler.ts";
import type { DeliveryHandler } from "../delivery/types.ts";
import type { PackSummary } from "../protocol/mod.ts";
import { fileURLToPath } from "node:url";

// Paths, not URL paths: a checkout's folder may hold a space, `#` or `é`.
const PACKS = fileURLToPath(new URL("../fixtures/packs/", import.meta.url));
const OUT = fileURLToPath(new URL("../dist/fixtures/", import.meta.url));
const ORIGIN = "http://127.0.0.1";
const PREFIX = "/api/sandbox-modules";

/** One recorded answer of the delivery handler. */
export interface RecordedResponse {
  /** The request's path and query. */
  path: string;
  /** The response status. */
  status: number;
  /** The response headers, as sent. */
  headers: [string, string][];
  /** The body bytes, base64. */
  body: string;
}

/** One recorded answer to a request as a browser sends it. */
export interface RecordedExchange extends RecordedResponse {
  /** The request's method. */
  method: string;
  /** The request's headers. */
  requestHeaders: [string, string][];
}

async function record(
  handler: DeliveryHandler,
  path: string,
  init: RequestInit = {},
): Promise<RecordedResponse> {
  const response = await handler(new Request(`${ORIGIN}${path}`, init));
  const body = new Uint8Array(await response.arrayBuffer());
  return {
    path,
    status: response.status,
    headers: [...response.headers],
    body: body.toBase64(),
  };
}

/** What Chromium sends with every fetch of a page on another origin. */
const BROWSER_HEADERS: Readonly<Record<string, string>> = {
  "accept-encoding": "gzip, deflate, br, zstd",
  "origin": "http://localhost:8719",
};

/**
 * Asks for the listing with gzip accepted until the handler answers it
 * compressed: it compresses in the background after the first such
 * request, so a browser gets the plain body until then.
 */
async function awaitGzipListing(handler: DeliveryHandler): Promise<void> {
  for (let turn = 0; turn < 1000; turn++) {
    const response = await handler(
      new Request(`${ORIGIN}${PREFIX}`, { headers: BROWSER_HEADERS }),
    );
    await response.body?.cancel();
    if (response.headers.get("content-encoding") === "gzip") return;
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
  throw new Error("The delivery handler never answered a gzip listing");
}

/** The requests of `browser` in delivery.json: method, path and headers. */
function browserRequests(
  listingTag: string,
  module: { id: string; digest: string },
  firstPack: string,
): [string, string, Record<string, string>][] {
  const base = `${PREFIX}/${encodeURIComponent(module.id)}`;
  const pinned = `${base}?digest=${encodeURIComponent(module.digest)}`;
  const tag = `"${module.digest}"`;
  return [
    ["GET", PREFIX, {}],
    ["HEAD", PREFIX, {}],
    ["GET", PREFIX, { "if-none-match": listingTag }],
    ["GET", `${PREFIX}?packs=${encodeURIComponent(firstPack)}`, {}],
    ["GET", base, {}],
    ["GET", pinned, {}],
    ["HEAD", pinned, {}],
    ["GET", base, { "if-none-match": tag }],
    ["GET", pinned, { "if-none-match": `W/${tag}` }],
    ["GET", base, { "if-match": '"sha256-other"' }],
    ["OPTIONS", base, {
      "access-control-request-method": "GET",
      "access-control-request-headers": "if-none-match",
    }],
    ["POST", base, {}],
    ["GET", `${PREFIX}/AAAAAAAAAAAAAAAAAAAAAA`, {}],
    ["GET", `${base}?digest=sha256-AAAA`, {}],
    ["GET", `${PREFIX}/not%20an%20id`, {}],
  ];
}

async function recordBrowser(
  handler: DeliveryHandler,
  summaries: readonly PackSummary[],
): Promise<RecordedExchange[]> {
  await awaitGzipListing(handler);
  const listing = await handler(
    new Request(`${ORIGIN}${PREFIX}`, { headers: BROWSER_HEADERS }),
  );
  await listing.body?.cancel();
  const [pack] = summaries;
  const [module] = pack?.modules ?? [];
  if (pack === undefined || module === undefined) {
    throw new Error("No fixture pack was installed");
  }
  const exchanges = [];
  const requests = browserRequests(
    listing.headers.get("etag") ?? "",
    module,
    pack.name,
  );
  for (const [method, path, extra] of requests) {
    const requestHeaders = { ...BROWSER_HEADERS, ...extra };
    const recorded = await record(handler, path, {
      method,
      headers: requestHeaders,
    });
    exchanges.push({
      method,
      requestHeaders: Object.entries(requestHeaders),
      ...recorded,
    });
  }
  return exchanges;
}

async function writeDelivery(): Promise<void> {
  const catalog = await createDiskCatalog(PACKS);
  const handler = createDeliveryHandler(catalog);
  const paths = [PREFIX];
  for (const pack of catalog.summaries()) {
    for (const { id, digest } of pack.modules) {
      // The remote catalog asks by id, pinned to the listed digest or not.
      const base = `${PREFIX}/${encodeURIComponent(id)}`;
      paths.push(base, `${base}?digest=${encodeURIComponent(digest)}`);
    }
  }
  const responses = [];
  for (const path of paths) responses.push(await record(handler, path));
  const browser = await recordBrowser(handler, catalog.summaries());
  await Deno.writeTextFile(
    `${OUT}delivery.json`,
    JSON.stringify({ prefix: PREFIX, responses, browser }, null, 2) + "\n",
  );
}

async function writeStaged(): Promise<void> {
  const staged = `${OUT}staged`;
  await Deno.remove(staged, { recursive: true }).catch((error) => {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  });
  await writeStagedTree(await planStagedTree(PACKS), staged);
}

if (import.meta.main) {
  await Deno.mkdir(OUT, { recursive: true });
  await writeDelivery();
  await writeStaged();
}
