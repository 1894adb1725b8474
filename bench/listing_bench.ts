/**
 * Listing benchmark for a large catalog: generates 10,000 packs × 10
 * modules in a temporary folder; starts a delivery server over it in fresh
 * processes, without a discovery index, with a new one, and then
 * `--restarts` times again with the index it wrote, alternately with V8's
 * defaults (a process that embeds `serveDelivery`) and with the V8 flags
 * `deno task serve` sets, and reports each start's time, RSS (after the
 * start, and after one request for the whole listing) and files read; then
 * discovers it in this process and measures, side by side
 * in one process, what the whole listing and a declaration's listing
 * (`?packs=`, the remote catalog's request) cost the delivery handler per
 * request and on the wire, plain and gzip-compressed. Prints a Markdown
 * table and removes the folder.
 *
 * Run: `deno task bench listing` or
 * `deno run -A --lock=bench/deno.lock bench/listing_bench.ts [--packs 10000] [--modules 10] [--requests 2000] [--restarts 3]`.
 *
 * @module
 */

import { createDiskCatalog } from "../catalog/disk_catalog.ts";
import { createDeliveryHandler } from "../delivery/handler.ts";
import { generatePacks } from "./discovery_bench.ts";
import { loadAverage } from "./_measure.ts";
import { fileURLToPath } from "node:url";

function flag(name: string, fallback: number): number {
  const index = Deno.args.indexOf(`--${name}`);
  return index < 0 ? fallback : Number(Deno.args[index + 1]);
}

const PACKS = flag("packs", 10_000);
const MODULES = flag("modules", 10);
const REQUESTS = flag("requests", 2_000);
const RESTARTS = flag("restarts", 3);
const BASE = "http://localhost/api/sandbox-modules";

interface Row {
  what: string;
  bytes: number;
  gzipBytes: number;
  firstMs: number;
  medianUs: number;
  p99Us: number;
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;
}

async function bodyBytes(response: Response): Promise<number> {
  return (await response.arrayBuffer()).byteLength;
}

async function measure(
  handler: (request: Request) => Promise<Response>,
  what: string,
  query: string,
  requests: number,
): Promise<Row> {
  const gzip = { "accept-encoding": "gzip" };
  const started = performance.now();
  const bytes = await bodyBytes(await handler(new Request(BASE + query)));
  const firstMs = performance.now() - started;
  // Compression runs in the background after the first gzip request.
  let packed = await handler(new Request(BASE + query, { headers: gzip }));
  while (packed.headers.get("content-encoding") !== "gzip") {
    await packed.body?.cancel();
    await new Promise((resolve) => setTimeout(resolve, 5));
    packed = await handler(new Request(BASE + query, { headers: gzip }));
  }
  const gzipBytes = await bodyBytes(packed);
  const times: number[] = [];
  for (let i = 0; i < requests; i++) {
    const start = performance.now();
    const response = await handler(
      new Request(BASE + query, { headers: gzip }),
    );
    await response.body?.cancel();
    times.push((performance.now() - start) * 1000);
  }
  times.sort((a, b) => a - b);
  return {
    what,
    bytes,
    gzipBytes,
    firstMs,
    medianUs: percentile(times, 0.5),
    p99Us: percentile(times, 0.99),
  };
}

/** MiB as MB (10^6 bytes), the unit of the 150 MB target. */
function megabytes(mib: number): string {
  return (mib * 2 ** 20 / 1e6).toFixed(1);
}

function kib(bytes: number): string {
  return bytes < 10 * 1024
    ? `${(bytes / 1024).toFixed(1)} KiB`
    : `${Math.round(bytes / 1024).toLocaleString("en")} KiB`;
}

/**
 * The V8 flags of `deno task serve`, read from its task so the bench
 * measures what the command runs: a smaller young generation. Discovery
 * keeps most of what it allocates, and V8 grows its young generation to
 * the largest size for that, which stays in RSS after the start.
 */
async function serveV8Flags(): Promise<string> {
  const config = JSON.parse(
    await Deno.readTextFile(new URL("../deno.json", import.meta.url)),
  );
  const flags = /--v8-flags=(\S+)/.exec(config.tasks.serve)?.[1];
  if (flags === undefined) throw new Error("deno task serve sets no V8 flags");
  return flags;
}

interface Start {
  startMs: number;
  rssMiB: number;
  rssAfterListingMiB: number;
  packs: number;
  filesRead: number;
}

/** Starts a delivery server over `dir` in a fresh process. */
async function startServer(
  dir: string,
  indexPath?: string,
  v8Flags?: string,
): Promise<Start> {
  const script = fileURLToPath(new URL("_server_start.ts", import.meta.url));
  const { success, stdout } = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--allow-all",
      ...(v8Flags === undefined ? [] : [`--v8-flags=${v8Flags}`]),
      `--lock=${fileURLToPath(new URL("deno.lock", import.meta.url))}`,
      script,
      dir,
      ...(indexPath === undefined ? [] : [indexPath]),
    ],
    stdin: "null",
    stderr: "inherit",
  }).output();
  if (!success) throw new Error("The server start failed");
  return JSON.parse(new TextDecoder().decode(stdout));
}

const dir = await Deno.makeTempDir({ prefix: "cordon-listing-bench-" });
const indexDir = await Deno.makeTempDir({ prefix: "cordon-listing-index-" });
try {
  await generatePacks(dir, PACKS, MODULES);
  // Installed packs are older than the racy window: the index trusts no
  // file modified within two seconds of the scan that proved it.
  await new Promise((resolve) => setTimeout(resolve, 2500));
  const indexPath = `${indexDir}/index.ndjson`;
  const v8Flags = await serveV8Flags();
  const starts: [string, Start][] = [
    ["no index", await startServer(dir)],
    ["first start, writes the index", await startServer(dir, indexPath)],
  ];
  const restarts = { defaults: [] as Start[], flagged: [] as Start[] };
  for (let run = 0; run < RESTARTS; run++) {
    // Alternating, so both see the same load.
    const order = run % 2 === 0 ? [false, true] : [true, false];
    for (const flagged of order) {
      const start = await startServer(
        dir,
        indexPath,
        flagged ? v8Flags : undefined,
      );
      (flagged ? restarts.flagged : restarts.defaults).push(start);
      starts.push([
        `restart ${run + 1}, ${
          flagged ? `\`${v8Flags}\` (deno task serve)` : "V8 defaults"
        }`,
        start,
      ]);
    }
  }
  const indexBytes = (await Deno.stat(indexPath)).size;
  console.log(
    `${
      PACKS.toLocaleString("en")
    } packs × ${MODULES} modules; server start in a fresh process (index file ${
      (indexBytes / 2 ** 20).toFixed(1)
    } MiB)\n`,
  );
  console.log(
    "| start | time | RSS after start | RSS after a whole listing | packs | files read |",
  );
  console.log("| --- | ---: | ---: | ---: | ---: | ---: |");
  for (const [what, start] of starts) {
    console.log(
      `| ${what} | ${(start.startMs / 1000).toFixed(2)} s | ${
        Math.round(start.rssMiB)
      } MiB | ${Math.round(start.rssAfterListingMiB)} MiB | ${
        start.packs.toLocaleString("en")
      } | ${start.filesRead.toLocaleString("en")} |`,
    );
  }
  for (const [what, runs] of Object.entries(restarts)) {
    const ms = runs.map((r) => r.startMs).sort((a, b) => a - b);
    const rss = runs.map((r) => r.rssMiB).sort((a, b) => a - b);
    const listed = runs.map((r) => r.rssAfterListingMiB).sort((a, b) => a - b);
    console.log(
      `\nRestarts, ${what === "flagged" ? v8Flags : "V8 defaults"}: median ${
        (ms[ms.length >> 1]! / 1000).toFixed(2)
      } s (${(ms[0]! / 1000).toFixed(2)}–${
        (ms.at(-1)! / 1000).toFixed(2)
      } s), RSS median ${Math.round(rss[rss.length >> 1]!)} MiB (${
        Math.round(rss[0]!)
      }–${Math.round(rss.at(-1)!)} MiB, ${megabytes(rss[0]!)}–${
        megabytes(rss.at(-1)!)
      } MB) over ${runs.length} runs; after a whole listing median ${
        Math.round(listed[listed.length >> 1]!)
      } MiB (${Math.round(listed[0]!)}–${Math.round(listed.at(-1)!)} MiB)`,
    );
  }
  console.log(`Load average ${await loadAverage()} after the starts.\n`);

  const discoverStart = performance.now();
  const catalog = await createDiskCatalog(dir);
  const discoverMs = performance.now() - discoverStart;
  const handler = createDeliveryHandler(catalog);
  const names = catalog.summaries().map((pack) => pack.name);
  const pick = (n: number) =>
    names.filter((_, i) => i % Math.floor(names.length / n) === 0).slice(0, n)
      .map(encodeURIComponent).join(",");
  const rows = [
    await measure(
      handler,
      "one pack (`?packs=`)",
      `?packs=${pick(1)}`,
      REQUESTS,
    ),
    await measure(
      handler,
      "five packs (`?packs=`)",
      `?packs=${pick(5)}`,
      REQUESTS,
    ),
    await measure(handler, "whole listing", "", Math.min(REQUESTS, 200)),
  ];
  console.log(
    `${PACKS.toLocaleString("en")} packs × ${MODULES} modules, discovered in ${
      (discoverMs / 1000).toFixed(1)
    } s; RSS ${Math.round(Deno.memoryUsage().rss / 2 ** 20)} MiB\n`,
  );
  console.log(
    "| listing | body | gzip body | first answer | per request, median | p99 |",
  );
  console.log("| --- | ---: | ---: | ---: | ---: | ---: |");
  for (const row of rows) {
    console.log(
      `| ${row.what} | ${kib(row.bytes)} | ${kib(row.gzipBytes)} | ${
        row.firstMs.toFixed(1)
      } ms | ${row.medianUs.toFixed(0)} µs | ${row.p99Us.toFixed(0)} µs |`,
    );
  }
} finally {
  await Deno.remove(dir, { recursive: true });
  await Deno.remove(indexDir, { recursive: true });
}
