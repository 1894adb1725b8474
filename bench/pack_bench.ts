/**
 * Packs from npm, side by side in one process:
 *
 * - a run calling date-fns `format` from a pack, through cordon's QuickJS
 *   loader against raw quickjs-emscripten loading the same bundled module
 *   (a fresh runtime and context per run, the same limits, a module loader
 *   that serves the pack's file, no policy and no hardening);
 * - the time `packNpm` takes to fetch, check, bundle, load-check and write
 *   each of the ten packages of the differential test, at pinned versions,
 *   with every subpath they export.
 *
 * Rounds alternate which side goes first; the table reports the median
 * per-run time over rounds, and the ratio is the median of the per-round
 * ratios.
 *
 * Run: `deno run -A bench/pack_bench.ts [--rounds 7] [--runs 100]`.
 *
 * @module
 */

import {
  newQuickJSWASMModuleFromVariant,
  type QuickJSSyncVariant,
} from "quickjs-emscripten-core";
import singlefileVariant from "@jitl/quickjs-singlefile-browser-release-sync";
import { createDiskCatalog } from "../catalog/disk_catalog.ts";
import { packNpm } from "../cli/pack.ts";
import { createQuickJSLoader } from "../loader/quickjs_loader.ts";
import { flag, loadAverage, median } from "./_measure.ts";
import { rawRun } from "./_raw_quickjs.ts";

const variant = singlefileVariant as unknown as QuickJSSyncVariant;
const ROUNDS = flag("rounds", 7);
const RUNS = flag("runs", 100);

const PACKAGES = [
  "date-fns@4.4.0",
  "lodash-es@4.18.1",
  "marked@18.2.1",
  "yaml@2.9.1",
  "papaparse@5.7.1",
  "zod@4.6.7",
  "dayjs@1.11.23",
  "immer@11.2.13",
  "decimal.js@10.6.0",
  "fast-xml-parser@5.12.1",
];
const GUEST = 'import { format } from "date-fns/format";\n' +
  'export default format(new Date(2024, 1, 29, 13, 5), "yyyy-MM-dd HH:mm EEEE");';
const EXPECTED = "2024-02-29 13:05 Thursday";

function check(label: string, actual: unknown): void {
  if (actual !== EXPECTED) {
    throw new Error(
      `${label} gave ${JSON.stringify(actual)}, expected ${EXPECTED}`,
    );
  }
}

const dir = await Deno.makeTempDir({ prefix: "cordon-pack-bench-" });
try {
  // Time to pack the ten packages, every exported subpath.
  const packTimes: {
    spec: string;
    ms: number;
    entries: number;
    modules: number;
    written: boolean;
  }[] = [];
  for (const spec of PACKAGES) {
    const start = performance.now();
    const report = await packNpm(spec, { outDir: `${dir}/all` });
    packTimes.push({
      spec,
      ms: performance.now() - start,
      entries: report.entries.filter((entry) =>
        entry.problems.length === 0
      ).length,
      modules: report.modules,
      written: report.written,
    });
  }

  // The format pack: one entry, so the raw side loads the same one file.
  await packNpm("date-fns@4.4.0", {
    outDir: `${dir}/format`,
    subpaths: ["./format"],
  });
  const manifest = JSON.parse(
    await Deno.readTextFile(`${dir}/format/date-fns/package.json`),
  );
  if (manifest.cordon.internal.length !== 0) {
    throw new Error("the format pack was expected to be one module");
  }
  const bundle = await Deno.readTextFile(
    `${dir}/format/date-fns/${manifest.cordon.exports["./format"].slice(2)}`,
  );
  const module = await newQuickJSWASMModuleFromVariant(variant);
  const catalog = await createDiskCatalog(`${dir}/format`);
  using loader = await createQuickJSLoader({ catalog, variant });
  const sides: Record<string, () => Promise<unknown> | unknown> = {
    cordon: async () => {
      const result = await loader.run({
        source: GUEST,
        packages: ["date-fns"],
      });
      if (!result.ok) throw new Error(JSON.stringify(result.error));
      return result.value;
    },
    raw: () =>
      rawRun(module, GUEST, {
        modules: new Map([["date-fns/format", bundle]]),
      }),
  };
  const names = Object.keys(sides);
  for (const name of names) {
    check(name, await sides[name]!());
    for (let i = 0; i < 20; i++) await sides[name]!();
  }
  const perRound: Record<string, number[]> = {};
  const ratios: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? names : [...names].reverse();
    const times: Record<string, number> = {};
    for (const name of order) {
      const start = performance.now();
      for (let i = 0; i < RUNS; i++) await sides[name]!();
      times[name] = ((performance.now() - start) / RUNS) * 1000;
      (perRound[name] ??= []).push(times[name]!);
    }
    ratios.push(times.cordon! / times.raw!);
  }

  const cordon = median(perRound.cordon!);
  const raw = median(perRound.raw!);
  console.log(
    `load average: ${await loadAverage()}; ${ROUNDS} rounds of ${RUNS} runs\n`,
  );
  console.log(
    "| run calling date-fns `format` from a pack | per run | vs raw |",
  );
  console.log("| --- | --- | --- |");
  console.log(
    `| cordon QuickJS loader | ${cordon.toFixed(0)} µs | ${
      median(ratios).toFixed(2)
    }× |`,
  );
  console.log(
    `| raw quickjs-emscripten, same ${bundle.length}-byte bundle | ${
      raw.toFixed(0)
    } µs | 1.00× |`,
  );
  console.log("\n| package | pack time | entries packed | modules | written |");
  console.log("| --- | --- | --- | --- | --- |");
  for (const row of packTimes) {
    console.log(
      `| ${row.spec} | ${
        (row.ms / 1000).toFixed(2)
      } s | ${row.entries} | ${row.modules} | ${row.written ? "yes" : "no"} |`,
    );
  }
  const total = packTimes.reduce((sum, row) => sum + row.ms, 0);
  console.log(`| all ten | ${(total / 1000).toFixed(2)} s | | | |`);
} finally {
  await Deno.remove(dir, { recursive: true });
}
