/**
 * Writes what the Node tests of the remote and staged catalogs serve, and
 * what the Node tests of the disk catalog check its answers against, made
 * on Deno by cordon's own code from the fixture packs:
 *
 * - `dist/fixtures/staged/`: the packs' staged tree (`writeStagedTree`);
 * - `dist/fixtures/delivery.json`: the delivery handler's answers over the
 *   on-disk catalog, the whole listing and every module by id (pinned to
 *   its digest or not), each with its status, headers and body (base64).
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

async function record(
  handler: DeliveryHandler,
  path: string,
): Promise<RecordedResponse> {
  const response = await handler(new Request(`${ORIGIN}${path}`));
  const body = new Uint8Array(await response.arrayBuffer());
  return {
    path,
    status: response.status,
    headers: [...response.headers],
    body: body.toBase64(),
  };
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
  await Deno.writeTextFile(
    `${OUT}delivery.json`,
    JSON.stringify({ prefix: PREFIX, responses }, null, 2) + "\n",
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
