/**
 * The sequential-runs probe of `loader_bench.ts`: in a fresh process
 * started with `--v8-flags=--expose-gc`, runs one module many times through
 * one loader and prints, as JSON, the resident memory and JavaScript heap
 * after a full garbage collection before and after the runs.
 *
 * Usage: `deno run -A --v8-flags=--expose-gc bench/_loader_sequential.ts N`.
 *
 * @module
 */

import { createDiskCatalog } from "../catalog/disk_catalog.ts";
import { createQuickJSLoader } from "../loader/quickjs_loader.ts";
import { fileURLToPath } from "node:url";

const runs = Number(Deno.args[0] ?? "10000");
const collect = (globalThis as { gc?: () => void }).gc;
if (collect === undefined) throw new Error("run with --v8-flags=--expose-gc");
const catalog = await createDiskCatalog(
  fileURLToPath(new URL("../fixtures/packs/", import.meta.url)),
);
using loader = await createQuickJSLoader({ catalog });
const declaration = {
  source: 'import { greet } from "greet";\nexport default greet("Ada");',
  packages: ["greet"],
};
async function runOnce(): Promise<void> {
  const result = await loader.run(declaration);
  if (!result.ok) throw new Error(JSON.stringify(result.error));
}
for (let i = 0; i < 200; i++) await runOnce();
collect();
const before = Deno.memoryUsage();
const start = performance.now();
const samples: number[] = [];
for (let i = 0; i < runs; i++) {
  await runOnce();
  if ((i + 1) % Math.max(1, Math.floor(runs / 10)) === 0) {
    samples.push(Deno.memoryUsage().rss);
  }
}
const elapsedMs = performance.now() - start;
collect();
const after = Deno.memoryUsage();
console.log(JSON.stringify({
  runs,
  elapsedMs,
  rssBefore: before.rss,
  rssAfter: after.rss,
  rssPeak: Math.max(before.rss, after.rss, ...samples),
  rssHalfway: samples[Math.floor(samples.length / 2) - 1] ?? before.rss,
  heapUsedBefore: before.heapUsed,
  heapUsedAfter: after.heapUsed,
}));
