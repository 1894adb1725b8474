/**
 * Runs every benchmark in `bench/` in turn, each in its own process, and
 * prints their Markdown tables. Each benchmark compares side by side in one
 * run, so its ratios hold on a noisy machine.
 *
 * Usage: `deno task bench [name ...]` (names: the files' stems without
 * `_bench`, e.g. `delivery loader`).
 *
 * @module
 */

import { fileURLToPath } from "node:url";

const dir = new URL("./", import.meta.url);
const wanted = new Set(Deno.args);
const benches: string[] = [];
for await (const entry of Deno.readDir(dir)) {
  const stem = entry.name.replace(/_bench\.ts$/, "");
  if (
    entry.isFile && stem !== entry.name &&
    (wanted.size === 0 || wanted.has(stem))
  ) {
    benches.push(entry.name);
  }
}
benches.sort();

let failures = 0;
for (const file of benches) {
  console.log(`\n## ${file}\n`);
  const { success } = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--allow-all",
      `--lock=${fileURLToPath(new URL("deno.lock", import.meta.url))}`,
      fileURLToPath(new URL(file, dir)),
    ],
    stdin: "null",
  }).spawn().status;
  if (!success) {
    console.error(`${file} failed`);
    failures++;
  }
}
Deno.exit(failures === 0 ? 0 : 1);
