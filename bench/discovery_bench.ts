/**
 * Discovery benchmark: generates a packs folder of 1,000 packs × 10 modules
 * in a temporary folder, then measures how long `createDiskCatalog()` takes
 * to discover it in a fresh Deno process (cold: the lexer is compiled and
 * nothing is cached in the process; the OS page cache is warm from writing
 * the files), and how long a `rescan()` takes after that. Prints a Markdown
 * table and removes the folder.
 *
 * Run: `deno run -A bench/discovery_bench.ts [--packs 1000] [--modules 10]`.
 * `--generate <dir>` only writes the packs folder (for profiling).
 *
 * @module
 */

import { createDiskCatalog } from "../catalog/disk_catalog.ts";
import { fileURLToPath } from "node:url";

/** One measured discovery run. */
export interface DiscoveryMeasurement {
  /** Packs installed. */
  packs: number;
  /** Modules installed across all packs. */
  modules: number;
  /** Packs rejected (expected 0). */
  diagnostics: number;
  /** First discovery in a fresh process, in milliseconds. */
  coldMs: number;
  /** A rescan right after, in milliseconds. */
  rescanMs: number;
}

function moduleSource(pack: number, index: number, modules: number): string {
  const lines: string[] = [];
  // Each module imports the next two (a chain with shared helpers), so the
  // graph has real depth and closures to digest.
  for (const next of [index + 1, index + 2]) {
    if (next < modules) {
      lines.push(`import { value as v${next} } from "./lib/m${next}.js";`);
    }
  }
  const deps = [index + 1, index + 2].filter((n) => n < modules).map((n) =>
    `v${n}`
  );
  lines.push(
    `/** Module ${index} of generated pack ${pack}. */`,
    `export const value = ${
      [String(pack * 100 + index), ...deps].join(" + ")
    };`,
    `export function describe() {`,
    `  return "pack ${pack} module ${index}: " + value;`,
    `}`,
    "",
  );
  return lines.join("\n");
}

/**
 * Writes a packs folder of `packs` generated packs of `modules` modules
 * each, every module importing the next two.
 *
 * @param dir The folder to write (created).
 * @param packs How many packs.
 * @param modules How many modules per pack.
 */
export async function generatePacks(
  dir: string,
  packs: number,
  modules: number,
): Promise<void> {
  const writes: Promise<void>[] = [];
  for (let p = 0; p < packs; p++) {
    const name = p % 5 === 0 ? `@bench-scope-${p % 50}/pack-${p}` : `pack-${p}`;
    const packDir = `${dir}/${name}`;
    await Deno.mkdir(`${packDir}/lib`, { recursive: true });
    const files = Array.from(
      { length: modules },
      (_, i) => (i === 0 ? "./index.js" : `./lib/m${i}.js`),
    );
    const manifest = {
      name,
      version: "1.0.0",
      type: "module",
      cordon: { exports: { ".": "./index.js" }, internal: files.slice(1) },
    };
    writes.push(
      Deno.writeTextFile(
        `${packDir}/package.json`,
        JSON.stringify(manifest, null, 2),
      ),
    );
    files.forEach((file, i) => {
      const source = moduleSource(p, i, modules).replaceAll(
        '"./lib/',
        i === 0 ? '"./lib/' : '"./',
      );
      writes.push(Deno.writeTextFile(`${packDir}/${file.slice(2)}`, source));
    });
    if (writes.length > 512) await Promise.all(writes.splice(0));
  }
  await Promise.all(writes);
}

async function measure(dir: string): Promise<DiscoveryMeasurement> {
  const start = performance.now();
  const catalog = await createDiskCatalog(dir);
  const coldMs = performance.now() - start;
  const rescanStart = performance.now();
  await catalog.rescan();
  const rescanMs = performance.now() - rescanStart;
  const summaries = catalog.summaries();
  return {
    packs: summaries.length,
    modules: summaries.reduce((n, s) => n + s.modules.length, 0),
    diagnostics: catalog.diagnostics().length,
    coldMs,
    rescanMs,
  };
}

function flag(args: string[], name: string, fallback: number): number {
  const index = args.indexOf(name);
  return index === -1 ? fallback : Number(args[index + 1]);
}

/**
 * Generates the packs folder, measures discovery in a child process and
 * returns the figures.
 *
 * @param packs How many packs to generate.
 * @param modules How many modules per pack.
 * @returns The measured figures.
 */
export async function runDiscoveryBench(
  packs = 1000,
  modules = 10,
): Promise<DiscoveryMeasurement> {
  const dir = await Deno.makeTempDir({ prefix: "cordon_discovery_bench_" });
  try {
    await generatePacks(dir, packs, modules);
    const child = new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--allow-read",
        fileURLToPath(import.meta.url),
        "--measure",
        dir,
      ],
      stdout: "piped",
      stderr: "inherit",
    });
    const output = await child.output();
    if (!output.success) {
      throw new Error("The discovery measurement process failed");
    }
    return JSON.parse(new TextDecoder().decode(output.stdout));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/**
 * Formats measurements as a Markdown table.
 *
 * @param m The measurement.
 * @returns The table.
 */
export function discoveryTable(m: DiscoveryMeasurement): string {
  return [
    "| discovery | packs | modules | rejected | time (ms) | target |",
    "| --- | ---: | ---: | ---: | ---: | --- |",
    `| cold (fresh process) | ${m.packs} | ${m.modules} | ${m.diagnostics} | ${
      m.coldMs.toFixed(0)
    } | < 2000 |`,
    `| rescan (same process) | ${m.packs} | ${m.modules} | ${m.diagnostics} | ${
      m.rescanMs.toFixed(0)
    } | |`,
  ].join("\n");
}

if (import.meta.main) {
  const args = Deno.args;
  const measureIndex = args.indexOf("--measure");
  const generateIndex = args.indexOf("--generate");
  if (generateIndex !== -1) {
    await generatePacks(
      args[generateIndex + 1]!,
      flag(args, "--packs", 1000),
      flag(args, "--modules", 10),
    );
  } else if (measureIndex !== -1) {
    console.log(JSON.stringify(await measure(args[measureIndex + 1]!)));
  } else {
    const packs = flag(args, "--packs", 1000);
    const modules = flag(args, "--modules", 10);
    const result = await runDiscoveryBench(packs, modules);
    console.log(
      `Discovery of ${packs} packs × ${modules} modules (Deno ${Deno.version.deno}, ${navigator.hardwareConcurrency} CPUs)\n`,
    );
    console.log(discoveryTable(result));
  }
}
