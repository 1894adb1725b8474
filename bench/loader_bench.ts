/**
 * QuickJS loader benchmark, side by side in one process:
 *
 * - per-run latency of (a) a trivial module and (b) a module importing one
 *   declared pack module, through cordon's loader against raw
 *   quickjs-emscripten doing the same work with no policy and no hardening
 *   (a fresh runtime and context per run, the same limits, a module loader
 *   that serves the pack's source), and against raw quickjs-emscripten that
 *   also hardens each context with cordon's script, to show what the
 *   loader's snapshot of one hardened context saves;
 * - the same snippets through `@sebastianwessel/quickjs`;
 * - a guest importing a chain of 200 pack modules, warm, against a trivial
 *   guest through the same loader (target ≤ 1.2×) and against raw
 *   quickjs-emscripten loading and evaluating the same 200 modules
 *   (target ≤ 0.3×); and over a remote catalog, declaring a second pack of
 *   1,500 modules beside the chain, against the chain alone;
 * - the loader's cold start, in fresh processes, and `deno run` to the
 *   first result against raw quickjs-emscripten's (target ≤ 1.5×);
 * - 10,000 sequential runs and the growth of resident memory.
 *
 * Rounds alternate which side goes first; the table reports the median
 * per-run time over rounds, and each ratio is the median of the per-round
 * ratios, so a noisy machine moves both sides together.
 *
 * Run: `deno run -A bench/loader_bench.ts [--rounds 7] [--runs 150]
 * [--sequential 10000] [--cold 9] [--chain-rounds 15] [--chain-runs 200]`.
 *
 * @module
 */

import {
  newQuickJSWASMModuleFromVariant,
  type QuickJSContext,
  type QuickJSSyncVariant,
  type QuickJSWASMModule,
} from "quickjs-emscripten-core";
import singlefileVariant from "@jitl/quickjs-singlefile-browser-release-sync";
// deno-lint-ignore no-import-prefix -- bench only: kept out of deno.json so serve and run do not install it
import { loadQuickJs } from "npm:@sebastianwessel/quickjs@3.1.0";
import { createDiskCatalog } from "../catalog/disk_catalog.ts";
import { createRemoteCatalog } from "../catalog/remote_catalog.ts";
import { createDeliveryHandler } from "../delivery/handler.ts";
import { createQuickJSLoader } from "../loader/quickjs_loader.ts";
import { evaluateSetup } from "../loader/_hardening.ts";
import { flag, median } from "./_measure.ts";
import { rawRun } from "./_raw_quickjs.ts";
import { fileURLToPath } from "node:url";

const variant = singlefileVariant as unknown as QuickJSSyncVariant;

const ROUNDS = flag("rounds", 7);
const RUNS = flag("runs", 150);
const SEQUENTIAL = flag("sequential", 10_000);
const COLD = flag("cold", 9);
const CHAIN_ROUNDS = flag("chain-rounds", 15);
const CHAIN_RUNS = flag("chain-runs", 200);
const CHAIN_LENGTH = 200;
const WIDE_MODULES = 1500;

const PACKS = fileURLToPath(new URL("../fixtures/packs/", import.meta.url));
const GREET_SOURCE = await Deno.readTextFile(`${PACKS}greet/index.js`);
const TRIVIAL = "export default 1 + 1;";
const IMPORTING =
  'import { greet } from "greet";\nexport default greet("Ada");';

interface Snippet {
  label: string;
  source: string;
  packages: string[];
  expected: unknown;
}

const SNIPPETS: Snippet[] = [
  { label: "trivial module", source: TRIVIAL, packages: [], expected: 2 },
  {
    label: "module importing one declared pack module",
    source: IMPORTING,
    packages: ["greet"],
    expected: "Hello, Ada!",
  },
];

/** Hardens a context with cordon's script, as the loader does once per engine. */
function harden(context: QuickJSContext): void {
  const setup = evaluateSetup(context);
  const log = context.newFunction("log", () => {});
  context.unwrapResult(
    context.callFunction(setup, context.undefined, log),
  ).dispose();
  for (const handle of [log, setup]) handle.dispose();
}

/** The modules raw quickjs-emscripten serves, by the name it normalises to. */
type RawModules = ReadonlyMap<string, string>;

const GREET_MODULES: RawModules = new Map([["greet", GREET_SOURCE]]);

/**
 * Resolves `./x.js` against the importing module's folder, the chain pack
 * to its entry and other bare names as they are.
 */
function rawNormalize(base: string, requested: string): string {
  if (requested === "chain") return "chain/m0.js";
  if (!requested.startsWith("./")) return requested;
  return base.slice(0, base.lastIndexOf("/") + 1) + requested.slice(2);
}

/** Raw quickjs-emscripten over `modules`, hardened or not. */
function rawRunOf(
  module: QuickJSWASMModule,
  source: string,
  hardened = false,
  modules: RawModules = GREET_MODULES,
): unknown {
  return rawRun(module, source, {
    modules,
    normalize: rawNormalize,
    prepare: hardened ? harden : undefined,
  });
}

function check(label: string, actual: unknown, expected: unknown): void {
  if (JSON.stringify(actual) !== JSON.stringify(expected)) {
    throw new Error(
      `${label} gave ${JSON.stringify(actual)}, expected ${
        JSON.stringify(expected)
      }`,
    );
  }
}

const module = await newQuickJSWASMModuleFromVariant(variant);
const catalog = await createDiskCatalog(PACKS);
using loader = await createQuickJSLoader({ catalog, variant });
const { runSandboxed } = await loadQuickJs(variant as never);

type Side = (snippet: Snippet) => Promise<unknown> | unknown;

const SIDES: Record<string, Side> = {
  cordon: async (snippet) => {
    const result = await loader.run({
      source: snippet.source,
      packages: snippet.packages,
    });
    if (!result.ok) throw new Error(JSON.stringify(result.error));
    return result.value;
  },
  raw: (snippet) => rawRunOf(module, snippet.source),
  "raw + hardening": (snippet) => rawRunOf(module, snippet.source, true),
  "@sebastianwessel/quickjs": async (snippet) => {
    const result = await runSandboxed(
      ({ evalCode }) => evalCode(snippet.source),
      { nodeModules: { greet: { "index.js": GREET_SOURCE } } } as never,
    ) as { ok: boolean; data?: unknown; error?: unknown };
    if (!result.ok) throw new Error(JSON.stringify(result.error));
    return result.data;
  },
};

async function timePerRun(side: Side, snippet: Snippet): Promise<number> {
  const start = performance.now();
  for (let i = 0; i < RUNS; i++) await side(snippet);
  return ((performance.now() - start) / RUNS) * 1000;
}

interface Row {
  snippet: string;
  micros: Record<string, number>;
  ratios: Record<string, number>;
}

const rows: Row[] = [];
const names = Object.keys(SIDES);
for (const snippet of SNIPPETS) {
  for (const name of names) {
    const side = SIDES[name]!;
    check(`${name} / ${snippet.label}`, await side(snippet), snippet.expected);
    for (let i = 0; i < 30; i++) await side(snippet);
  }
  const perRound: Record<string, number[]> = {};
  const ratios: Record<string, number[]> = {};
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? names : [...names].reverse();
    const times: Record<string, number> = {};
    for (const name of order) {
      times[name] = await timePerRun(SIDES[name]!, snippet);
      (perRound[name] ??= []).push(times[name]!);
    }
    for (const name of names) {
      (ratios[name] ??= []).push(times.cordon! / times[name]!);
    }
  }
  rows.push({
    snippet: snippet.label,
    micros: Object.fromEntries(
      names.map((name) => [name, median(perRound[name]!)]),
    ),
    ratios: Object.fromEntries(
      names.map((name) => [name, median(ratios[name]!)]),
    ),
  });
}

// A chain of pack modules: each imports the next, the last exports 1, so
// the guest's default export is the chain's length.
const chainDir = await Deno.makeTempDir();

/**
 * Writes pack `name` into chainDir: its modules, in order, the first the
 * pack's export and the others internal.
 */
async function writePack(
  name: string,
  modules: [file: string, source: string][],
): Promise<void> {
  await Deno.mkdir(`${chainDir}/${name}`);
  for (const [file, source] of modules) {
    await Deno.writeTextFile(`${chainDir}/${name}/${file}`, source);
  }
  const [exported, ...internal] = modules.map(([file]) => `./${file}`);
  await Deno.writeTextFile(
    `${chainDir}/${name}/package.json`,
    JSON.stringify({
      name,
      version: "1.0.0",
      type: "module",
      cordon: { exports: { ".": exported }, internal },
    }),
  );
}

const chainSources = Array.from(
  { length: CHAIN_LENGTH },
  (_, i): [string, string] => [
    `m${i}.js`,
    i === CHAIN_LENGTH - 1
      ? "export const value = 1;\n"
      : `import { value as next } from "./m${
        i + 1
      }.js";\nexport const value = next + 1;\n`,
  ],
);
await writePack("chain", chainSources);
const chainModules = new Map(
  chainSources.map(([file, source]) => [`chain/${file}`, source]),
);
const chainCatalog = await createDiskCatalog(chainDir);
using chainLoader = await createQuickJSLoader({
  catalog: chainCatalog,
  variant,
});
const CHAIN_GUEST = 'import { value } from "chain";\nexport default value;';
/** Runs the chain guest on `loader`, declaring `packages`. */
function chainRun(
  loader: { run: typeof chainLoader.run },
  packages: string[],
): () => Promise<unknown> {
  return async () => {
    const result = await loader.run({ source: CHAIN_GUEST, packages });
    if (!result.ok) throw new Error(JSON.stringify(result.error));
    return result.value;
  };
}
const chainSides: Record<string, () => Promise<unknown> | unknown> = {
  "cordon, chain": chainRun(chainLoader, ["chain"]),
  "cordon, trivial": async () => {
    const result = await chainLoader.run({ source: TRIVIAL });
    if (!result.ok) throw new Error(JSON.stringify(result.error));
    return result.value === 2 ? CHAIN_LENGTH : result.value;
  },
  "raw, chain": () => rawRunOf(module, CHAIN_GUEST, false, chainModules),
};
/**
 * Times each side over alternating rounds of CHAIN_RUNS runs, after a
 * check and a warm-up: per side, its mean per run in µs, round by round.
 */
async function timeRounds(
  sides: Record<string, () => Promise<unknown> | unknown>,
): Promise<Record<string, number[]>> {
  const names = Object.keys(sides);
  for (const name of names) {
    check(name, await sides[name]!(), CHAIN_LENGTH);
    for (let i = 0; i < 30; i++) await sides[name]!();
  }
  const timed: Record<string, number[]> = {};
  for (let round = 0; round < CHAIN_ROUNDS; round++) {
    for (const name of round % 2 === 0 ? names : [...names].reverse()) {
      const start = performance.now();
      for (let i = 0; i < CHAIN_RUNS; i++) await sides[name]!();
      const micros = ((performance.now() - start) / CHAIN_RUNS) * 1000;
      (timed[name] ??= []).push(micros);
    }
  }
  return timed;
}

/** The per-round ratios of side `a` to side `b`. */
function perRound(timed: Record<string, number[]>, a: string, b: string) {
  return timed[a]!.map((micros, round) => micros / timed[b]![round]!);
}

const localTimes = await timeRounds(chainSides);

// Then, measured apart so that the rows above are taken as before: the
// chain beside a second pack of WIDE_MODULES modules, through a remote
// catalog. What a run costs should not grow with a pack it barely uses.
await writePack(
  "wide",
  Array.from(
    { length: WIDE_MODULES },
    (_, i) => [`w${i}.js`, `export const w${i} = ${i};\n`],
  ),
);
const wideCatalog = await createDiskCatalog(chainDir);
// A remote catalog resolves each run's declaration afresh (the disk
// catalog keeps its resolutions): listed once, then held, so a run pays
// its prefetch's checks and no request.
await using chainServer = Deno.serve(
  { hostname: "127.0.0.1", port: 0, onListen() {} },
  createDeliveryHandler(wideCatalog),
);
using remoteChainLoader = await createQuickJSLoader({
  catalog: createRemoteCatalog({
    baseUrl: `http://127.0.0.1:${chainServer.addr.port}`,
    listingMaxAgeMs: 3_600_000,
  }),
  variant,
});
const remoteSides: Record<string, () => Promise<unknown>> = {
  "remote, chain": chainRun(remoteChainLoader, ["chain"]),
  "remote, chain beside a wide pack": chainRun(remoteChainLoader, [
    "chain",
    "wide",
  ]),
};

const chainTimes = { ...localTimes, ...await timeRounds(remoteSides) };
const chainRatios = {
  trivial: perRound(chainTimes, "cordon, chain", "cordon, trivial"),
  raw: perRound(chainTimes, "cordon, chain", "raw, chain"),
  beside: perRound(
    chainTimes,
    "remote, chain beside a wide pack",
    "remote, chain",
  ),
};
await Deno.remove(chainDir, { recursive: true });

// Cold start: fresh processes import the loader and create it.
// `deno run` to the first result: the whole process, from spawning it to
// its exit right after it printed the result, cordon's and raw
// quickjs-emscripten's in turn, alternating which goes first.
const coldScript = fileURLToPath(new URL("./_loader_cold.ts", import.meta.url));
const rawColdScript = fileURLToPath(new URL("./_raw_cold.ts", import.meta.url));
const lock = fileURLToPath(new URL("./deno.lock", import.meta.url));
async function timeProcess(script: string): Promise<{
  wallMs: number;
  stdout: string;
}> {
  const start = performance.now();
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--allow-read", `--lock=${lock}`, script],
    stdout: "piped",
    stderr: "inherit",
  }).output();
  const wallMs = performance.now() - start;
  if (!output.success) throw new Error(`${script} failed`);
  return { wallMs, stdout: new TextDecoder().decode(output.stdout) };
}
const cold: { createMs: number; firstRunMs: number }[] = [];
const coldWall = { cordon: [] as number[], raw: [] as number[] };
const coldRatios: number[] = [];
for (let i = 0; i < COLD; i++) {
  const cordonFirst = i % 2 === 0;
  const first = await timeProcess(cordonFirst ? coldScript : rawColdScript);
  const second = await timeProcess(cordonFirst ? rawColdScript : coldScript);
  const [ours, raw] = cordonFirst ? [first, second] : [second, first];
  if (raw.stdout.trim() !== "2") throw new Error("the raw cold run failed");
  cold.push(JSON.parse(ours.stdout));
  coldWall.cordon.push(ours.wallMs);
  coldWall.raw.push(raw.wallMs);
  coldRatios.push(ours.wallMs / raw.wallMs);
}
const warmCreate: number[] = [];
for (let i = 0; i < 5; i++) {
  const start = performance.now();
  const another = await createQuickJSLoader({ catalog, variant });
  warmCreate.push(performance.now() - start);
  another[Symbol.dispose]();
}

// Sequential runs and resident memory, in fresh processes that can force a
// full garbage collection before and after, so the growth is what stays:
// once with V8's defaults, once with its young generation capped, which
// shows how much of the growth is V8 sizing its young generation up to its
// maximum under this allocation rate rather than memory the loader keeps.
interface SequentialProbe {
  runs: number;
  elapsedMs: number;
  rssBefore: number;
  rssAfter: number;
  rssPeak: number;
  rssHalfway: number;
  heapUsedBefore: number;
  heapUsedAfter: number;
}
const sequentialScript = fileURLToPath(
  new URL("./_loader_sequential.ts", import.meta.url),
);
async function probeSequential(v8Flags: string): Promise<SequentialProbe> {
  const output = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--allow-read",
      `--v8-flags=${v8Flags}`,
      sequentialScript,
      String(SEQUENTIAL),
    ],
    stdout: "piped",
    stderr: "inherit",
  }).output();
  if (!output.success) throw new Error("the sequential process failed");
  return JSON.parse(new TextDecoder().decode(output.stdout));
}
const sequential = await probeSequential("--expose-gc");
const capped = await probeSequential("--expose-gc,--max-semi-space-size=2");
const MB = 1024 * 1024;

const us = (value: number) => `${Math.round(value)} µs`;
const mb = (bytes: number) => `${(bytes / MB).toFixed(1)} MB`;
const perRun = (probe: SequentialProbe) =>
  `${(probe.elapsedMs / 1000).toFixed(1)} s (${
    us((probe.elapsedMs / probe.runs) * 1000)
  } per run)`;
const growth = (probe: SequentialProbe) =>
  `${mb(probe.rssAfter - probe.rssBefore)} (${
    (probe.rssBefore / MB).toFixed(0)
  } → ${(probe.rssAfter / MB).toFixed(0)} MB, peak ${
    (probe.rssPeak / MB).toFixed(0)
  } MB)`;
const heap = (probe: SequentialProbe) =>
  `${mb(probe.heapUsedBefore)} → ${mb(probe.heapUsedAfter)}`;
const times = (value: number) => `${value.toFixed(2)}×`;
const lines: string[] = [];
lines.push(
  `Deno ${Deno.version.deno}, V8 ${Deno.version.v8}, ${navigator.hardwareConcurrency} CPUs; ${ROUNDS} rounds × ${RUNS} runs, median per run.`,
  "",
  "| per run | cordon | raw quickjs-emscripten | cordon / raw (target ≤ 1.3×) | raw + cordon's hardening in each context | cordon / raw + hardening | @sebastianwessel/quickjs | cordon / sebastianwessel (target < 1×) |",
  "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
);
for (const row of rows) {
  lines.push(
    `| ${row.snippet} | ${us(row.micros.cordon!)} | ${us(row.micros.raw!)} | ${
      times(row.ratios.raw!)
    } | ${us(row.micros["raw + hardening"]!)} | ${
      times(row.ratios["raw + hardening"]!)
    } | ${us(row.micros["@sebastianwessel/quickjs"]!)} | ${
      times(row.ratios["@sebastianwessel/quickjs"]!)
    } |`,
  );
}
lines.push(
  "",
  `A guest importing a chain of ${CHAIN_LENGTH} pack modules, warm (${CHAIN_ROUNDS} alternating rounds × ${CHAIN_RUNS} runs, median per run; ratios are medians of the per-round ratios):`,
  "",
  "| per run | cordon, chain | cordon, trivial guest | chain / trivial (target ≤ 1.2×) | raw quickjs-emscripten, chain | cordon / raw (target ≤ 0.3×) |",
  "| --- | ---: | ---: | ---: | ---: | ---: |",
  `| \`import { value } from "chain"\` | ${
    us(median(chainTimes["cordon, chain"]!))
  } | ${us(median(chainTimes["cordon, trivial"]!))} | ${
    times(median(chainRatios.trivial))
  } | ${us(median(chainTimes["raw, chain"]!))} | ${
    times(median(chainRatios.raw))
  } |`,
  "",
  `The same guest over a remote catalog (listed once, then held): ${
    us(median(chainTimes["remote, chain"]!))
  } per run; declaring a second pack of ${WIDE_MODULES} modules beside the chain: ${
    us(median(chainTimes["remote, chain beside a wide pack"]!))
  }, ${times(median(chainRatios.beside))} the chain alone.`,
  "",
  `\`deno run\` to the first result (${COLD} alternating pairs of fresh processes, wall time from spawn to exit):`,
  "",
  "| cordon (import the loader, create it, run one module) | raw quickjs-emscripten (import, instantiate, run one module) | cordon / raw (target ≤ 1.5×) |",
  "| ---: | ---: | ---: |",
  `| ${median(coldWall.cordon).toFixed(0)} ms | ${
    median(coldWall.raw).toFixed(0)
  } ms | ${times(median(coldRatios))} |`,
  "",
  "| start-up | median | runs |",
  "| --- | ---: | ---: |",
  `| cold start in a fresh process: from its start to a created loader | ${
    median(cold.map((c) => c.createMs)).toFixed(1)
  } ms | ${COLD} |`,
  `| first run after a cold start | ${
    median(cold.map((c) => c.firstRunMs)).toFixed(1)
  } ms | ${COLD} |`,
  `| another loader in a warm process | ${
    median(warmCreate).toFixed(1)
  } ms | 5 |`,
  "",
  "| sequential runs (fresh process, full GC before and after) | V8 defaults | young generation capped (`--max-semi-space-size=2`) | target |",
  "| --- | ---: | ---: | ---: |",
  `| ${sequential.runs} runs of the importing module | ${
    perRun(sequential)
  } | ${perRun(capped)} | |`,
  `| resident memory growth | ${growth(sequential)} | ${
    growth(capped)
  } | < 20 MB |`,
  `| resident memory growth over the second half of the runs | ${
    mb(sequential.rssAfter - sequential.rssHalfway)
  } | ${mb(capped.rssAfter - capped.rssHalfway)} | |`,
  `| JavaScript heap in use, before → after | ${heap(sequential)} | ${
    heap(capped)
  } | |`,
);
console.log(lines.join("\n"));
