/**
 * One delivery server start, in a process of its own, for
 * `listing_bench.ts`: serves a packs folder on a free port (optionally with
 * a discovery index), then prints one JSON line: how long `serveDelivery`
 * took, the process's RSS once it listened and again once it answered one
 * request for the whole listing (which it prepares on that request and then
 * keeps), how many packs it installed and how many files discovery read,
 * and shuts down.
 *
 * Run: `deno run -A bench/_server_start.ts <packsDir> [indexFile]`.
 *
 * @module
 */

import { serveDelivery } from "../delivery/serve.ts";

const [packsDir, indexPath] = Deno.args;
if (packsDir === undefined) throw new Error("usage: <packsDir> [indexFile]");

// Counts the files discovery reads, so a restart that re-read anything shows:
// a pack's files are opened and read through their handles, the discovery
// index is read whole.
let filesRead = 0;
const { openSync, readFileSync } = Deno;
Deno.openSync = (...args: Parameters<typeof openSync>) => {
  filesRead++;
  return openSync(...args);
};
Deno.readFileSync = (...args: Parameters<typeof readFileSync>) => {
  filesRead++;
  return readFileSync(...args);
};

const started = performance.now();
const server = await serveDelivery({
  packsDir,
  port: 0,
  ...(indexPath === undefined ? {} : { indexPath }),
  onIndexWarning: ({ code }) => console.error(code),
});
const startMs = performance.now() - started;
const rssMiB = Deno.memoryUsage().rss / 2 ** 20;
const packs = server.catalog.summaries().length;
// Asked from another process, so the RSS is the server's alone, without
// the client's copy of the 26 MiB body.
const { success } = await new Deno.Command(Deno.execPath(), {
  args: [
    "run",
    "--allow-net=127.0.0.1",
    new URL("_fetch_listing.ts", import.meta.url).href,
    String(server.addr.port),
  ],
}).output();
if (!success) throw new Error("The whole listing request failed");
const rssAfterListingMiB = Deno.memoryUsage().rss / 2 ** 20;
await server.shutdown();
console.log(
  JSON.stringify({ startMs, rssMiB, rssAfterListingMiB, packs, filesRead }),
);
