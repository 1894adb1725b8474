/**
 * The worker and process sandboxes side by side with their raw baselines,
 * in one run, alternating, so the ratios hold on a busy machine:
 *
 * - per-run latency of a trivial snippet: the worker sandbox against a bare
 *   `new Worker` round trip of the same code (target ≤ 1.2×), the pooled
 *   worker sandbox, whose worker is started ahead of the run, against a
 *   bare `Worker` also started ahead that gets the source as a message and
 *   answers with the module's default export (target ≤ 1.3×), and the
 *   process sandbox against a bare `deno run` of the same code (target
 *   ≤ 1.2×);
 * - a bare stdio echo round trip to a child Deno process, of a line the
 *   size of a pooled run's request: what the pooled sandbox's process hop
 *   costs at the least, beside the two it separates;
 * - a bare worker started ahead in a child Deno process and reached over
 *   its pipes: the pooled sandbox's design with none of its work, the
 *   strongest baseline that can stop a guest, and the pooled sandbox
 *   against it (no target: see docs/benchmarks.md);
 * - throughput of many runs at concurrency 1 and 4;
 * - the process sandbox's reading of a 32 MiB answer from its child's
 *   output in 64 KiB pieces, as a pipe delivers it, against 1 MiB pieces
 *   (linear reading: about 1×; searching the whole frame again at every
 *   piece, which took seconds, would be about 16×).
 *
 * Usage: `deno run -A bench/sandbox_bench.ts [--rounds N] [--runs N]`.
 * Prints Markdown tables.
 *
 * @module
 */

import { createProcessSandbox } from "../sandbox/process_sandbox.ts";
import { createWorkerSandbox } from "../sandbox/worker_sandbox.ts";
import { createFrameParser } from "../sandbox/_nonce_frames.ts";
import { fileURLToPath } from "node:url";

function flag(name: string, fallback: number): number {
  const index = Deno.args.indexOf(`--${name}`);
  return index >= 0 ? Number(Deno.args[index + 1]) : fallback;
}

const ROUNDS = flag("rounds", 60);
const WORKER_RUNS = flag("runs", 1000);
const PROCESS_RUNS = flag("process-runs", 200);
const SNIPPET = "export default 1 + 1;";
const SETTLE_MS = 25;

// ── Baselines ───────────────────────────────────────────────────────────
//
// Each baseline does the work a sandbox run does, without the sandbox: it
// loads the guest source as an ES module and answers with its default
// export. The worker baseline gets the source as text, like a sandbox run,
// so it makes its module URLs per run; the `deno run` baseline reads its
// two files, written once.

function moduleUrl(source: string): string {
  return URL.createObjectURL(new Blob([source], { type: "text/javascript" }));
}

async function bareWorker(): Promise<void> {
  const guestUrl = moduleUrl(SNIPPET);
  const mainUrl = moduleUrl(
    `import value from ${JSON.stringify(guestUrl)};\npostMessage(value);`,
  );
  const worker = new Worker(mainUrl, { type: "module" });
  const value = await new Promise((resolve) => {
    worker.onmessage = (event) => resolve(event.data);
  });
  worker.terminate();
  URL.revokeObjectURL(mainUrl);
  URL.revokeObjectURL(guestUrl);
  if (value !== 2) throw new Error("bare worker gave a wrong answer");
}

// A bare worker started ahead: it imports each source it is sent as a
// module and answers with its default export, once, like a pooled
// sandbox's fresh worker. Started (and warmed up with a throwaway module)
// before the clock starts; only the round trip of the run is timed.
const PRESTARTED_MAIN = moduleUrl(`
self.onmessage = async (event) => {
  const url = URL.createObjectURL(new Blob([event.data], { type: "text/javascript" }));
  const { default: value } = await import(url);
  URL.revokeObjectURL(url);
  postMessage(value);
};
`);
let prestarted: Worker | undefined;

function askWorker(worker: Worker, source: string): Promise<unknown> {
  return new Promise((resolve) => {
    worker.onmessage = (event) => resolve(event.data);
    worker.postMessage(source);
  });
}

async function startBareWorker(): Promise<void> {
  prestarted?.terminate();
  prestarted = new Worker(PRESTARTED_MAIN, { type: "module" });
  if (await askWorker(prestarted, "export default 0;") !== 0) {
    throw new Error("the pre-started worker did not warm up");
  }
}

async function prestartedWorker(): Promise<void> {
  const value = await askWorker(prestarted!, SNIPPET);
  if (value !== 2) throw new Error("pre-started worker gave a wrong answer");
}

// A child Deno process that writes back what it reads, as the worker host
// reads its requests from stdin and writes its answers to stdout.
const echoChild = new Deno.Command(Deno.execPath(), {
  args: [
    "run",
    "--no-config",
    fileURLToPath(new URL("_stdio_echo.ts", import.meta.url)),
  ],
  stdin: "piped",
  stdout: "piped",
  stderr: "inherit",
}).spawn();
const echoWriter = echoChild.stdin.getWriter();
const echoReader = echoChild.stdout.getReader();
const ECHO_LINE = new TextEncoder().encode(
  `{"t":"run","id":"${crypto.randomUUID()}","maxLogBytes":65536,"parseOnly":false,"source":${
    JSON.stringify(SNIPPET)
  },"context":null}\n`,
);

async function stdioEcho(): Promise<void> {
  await echoWriter.write(ECHO_LINE);
  let received = 0;
  while (received < ECHO_LINE.length) {
    const { value, done } = await echoReader.read();
    if (done) throw new Error("the echo child ended");
    received += value.length;
  }
  if (received !== ECHO_LINE.length) throw new Error("the echo differs");
}

// A worker started ahead in a child process, reached over its pipes: the
// pooled sandbox's design (a process it can kill around a worker it can
// cap) with none of its work, the strongest baseline that can stop a guest.
const hopWorkerChild = new Deno.Command(Deno.execPath(), {
  args: [
    "run",
    "--no-config",
    `--allow-read=${
      fileURLToPath(new URL("_bare_worker.ts", import.meta.url))
    }`,
    fileURLToPath(new URL("_hop_worker_child.ts", import.meta.url)),
  ],
  stdin: "piped",
  stdout: "piped",
  stderr: "inherit",
}).spawn();
const hopWorkerWriter = hopWorkerChild.stdin.getWriter();
const hopWorkerLines = hopWorkerChild.stdout.pipeThrough(
  new TextDecoderStream(),
).getReader();
let hopWorkerText = "";

async function askHopWorker(line: string): Promise<string> {
  await hopWorkerWriter.write(new TextEncoder().encode(`${line}\n`));
  while (!hopWorkerText.includes("\n")) {
    const { value, done } = await hopWorkerLines.read();
    if (done) throw new Error("the hop worker child ended");
    hopWorkerText += value;
  }
  const newline = hopWorkerText.indexOf("\n");
  const answer = hopWorkerText.slice(0, newline);
  hopWorkerText = hopWorkerText.slice(newline + 1);
  return answer;
}

async function freshHopWorker(): Promise<void> {
  if (await askHopWorker("fresh") !== "ready") {
    throw new Error("the hop worker did not warm up");
  }
}

async function hopWorker(): Promise<void> {
  if (await askHopWorker(JSON.stringify(SNIPPET)) !== "2") {
    throw new Error("the hop worker gave a wrong answer");
  }
}

const bareDir = await Deno.makeTempDir();
await Deno.writeTextFile(`${bareDir}/guest.js`, `${SNIPPET}\n`);
await Deno.writeTextFile(
  `${bareDir}/main.js`,
  'import value from "./guest.js";\nconsole.log(JSON.stringify(value));\n',
);

async function bareDenoRun(): Promise<void> {
  const { code, stdout } = await new Deno.Command(Deno.execPath(), {
    args: ["run", "main.js"],
    cwd: bareDir,
    stdin: "null",
    stdout: "piped",
    stderr: "null",
  }).output();
  if (code !== 0 || new TextDecoder().decode(stdout).trim() !== "2") {
    throw new Error("bare deno run gave a wrong answer");
  }
}

// ── Sandboxes ───────────────────────────────────────────────────────────

const worker = createWorkerSandbox({ concurrency: 1 });
const pooled = createWorkerSandbox({ pool: 1, concurrency: 1 });
const process = createProcessSandbox({ concurrency: 1 });

async function expectTwo(
  run: Promise<{ ok: boolean; value?: unknown }>,
): Promise<void> {
  const result = await run;
  if (!result.ok || result.value !== 2) {
    throw new Error(`a sandbox gave a wrong answer: ${JSON.stringify(result)}`);
  }
}

interface Case {
  name: string;
  before?: () => Promise<void>;
  run: () => Promise<void>;
}

const cases: Case[] = [
  { name: "bare new Worker round trip", run: bareWorker },
  {
    name: "bare Worker started ahead, round trip",
    before: startBareWorker,
    run: prestartedWorker,
  },
  { name: "worker sandbox", run: () => expectTwo(worker.run(SNIPPET)) },
  {
    name: "pooled worker sandbox (pool: 1, warm)",
    before: () => pooled.ready(),
    run: () => expectTwo(pooled.run(SNIPPET)),
  },
  { name: "bare stdio echo to a child process", run: stdioEcho },
  {
    name: "bare Worker started ahead in a child process, round trip",
    before: freshHopWorker,
    run: hopWorker,
  },
  { name: "bare deno run", run: bareDenoRun },
  { name: "process sandbox", run: () => expectTwo(process.run(SNIPPET)) },
];

const samples = new Map<string, number[]>(cases.map((c) => [c.name, []]));

for (let round = -5; round < ROUNDS; round++) {
  // Rotate the order each round so no case always follows another.
  for (let i = 0; i < cases.length; i++) {
    const item = cases[(i + round + cases.length) % cases.length]!;
    await item.before?.();
    // A short pause lets the previous case's teardown (a worker thread or a
    // process ending) finish, so it does not land on this case's clock.
    await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
    const start = performance.now();
    await item.run();
    const elapsed = performance.now() - start;
    if (round >= 0) samples.get(item.name)!.push(elapsed);
  }
}

function quantile(values: number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]!;
}

const median = (name: string) => quantile(samples.get(name)!, 0.5);
const fmt = (ms: number) => ms.toFixed(2);

const load = await Deno.readTextFile("/proc/loadavg").catch(() => "n/a");
console.log(
  `Deno ${Deno.version.deno}, ${navigator.hardwareConcurrency} cores, load average at the end of the latency rounds: ${
    load.split(" ").slice(0, 3).join(" ")
  }\n`,
);
console.log(
  `### Per-run latency of \`${SNIPPET}\` (${ROUNDS} alternating rounds)\n`,
);
console.log("| case | median ms | p90 ms | ratio to its baseline | target |");
console.log("| --- | ---: | ---: | ---: | ---: |");
const rows: [string, string | undefined, string][] = [
  ["bare new Worker round trip", undefined, ""],
  ["worker sandbox", "bare new Worker round trip", "≤ 1.2×"],
  ["bare Worker started ahead, round trip", undefined, ""],
  [
    "pooled worker sandbox (pool: 1, warm)",
    "bare Worker started ahead, round trip",
    "≤ 1.3×",
  ],
  [
    "bare stdio echo to a child process",
    "bare Worker started ahead, round trip",
    "",
  ],
  [
    "bare Worker started ahead in a child process, round trip",
    "bare Worker started ahead, round trip",
    "",
  ],
  [
    "pooled worker sandbox (pool: 1, warm)",
    "bare Worker started ahead in a child process, round trip",
    "",
  ],
  ["bare deno run", undefined, ""],
  ["process sandbox", "bare deno run", "≤ 1.2×"],
];
for (const [name, baseline, target] of rows) {
  const ratio = baseline === undefined
    ? "1.00× (baseline)"
    : `${(median(name) / median(baseline)).toFixed(2)}×`;
  console.log(
    `| ${name} | ${fmt(median(name))} | ${
      fmt(quantile(samples.get(name)!, 0.9))
    } | ${ratio} | ${target} |`,
  );
}

const hopFloor = median("bare Worker started ahead, round trip") +
  median("bare stdio echo to a child process");
console.log(
  `\nThe pooled sandbox's least cost, a pre-started worker plus one stdio round trip: ${
    fmt(hopFloor)
  } ms, ${
    (hopFloor / median("bare Worker started ahead, round trip")).toFixed(2)
  }× the pre-started worker.`,
);

prestarted?.terminate();
URL.revokeObjectURL(PRESTARTED_MAIN);
await echoWriter.close();
echoReader.releaseLock();
await echoChild.stdout.cancel();
await echoChild.status;
await hopWorkerWriter.close();
await hopWorkerLines.cancel();
await hopWorkerChild.status;
await worker[Symbol.asyncDispose]();
await pooled[Symbol.asyncDispose]();
await process[Symbol.asyncDispose]();
await Deno.remove(bareDir, { recursive: true });

// ── Throughput ──────────────────────────────────────────────────────────

async function throughput(
  make: (concurrency: number) => AsyncDisposable & {
    run(source: string): Promise<{ ok: boolean; value?: unknown }>;
    ready?: () => Promise<void>;
  },
  concurrency: number,
  runs: number,
): Promise<{ perSecond: number; meanMs: number }> {
  const sandbox = make(concurrency);
  await sandbox.ready?.();
  await Promise.all(
    Array.from({ length: concurrency }, () => expectTwo(sandbox.run(SNIPPET))),
  );
  let next = 0;
  const start = performance.now();
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < runs) {
      next++;
      await expectTwo(sandbox.run(SNIPPET));
    }
  }));
  const elapsed = performance.now() - start;
  await sandbox[Symbol.asyncDispose]();
  return { perSecond: runs / (elapsed / 1000), meanMs: elapsed / runs };
}

console.log(`\n### Throughput of \`${SNIPPET}\`\n`);
console.log("| sandbox | runs | concurrency | runs/s | wall ms per run |");
console.log("| --- | ---: | ---: | ---: | ---: |");
for (const concurrency of [1, 4]) {
  const figures = await throughput(
    (n) => createWorkerSandbox({ pool: n, concurrency: n }),
    concurrency,
    WORKER_RUNS,
  );
  console.log(
    `| worker, pool: ${concurrency} | ${WORKER_RUNS} | ${concurrency} | ${
      figures.perSecond.toFixed(1)
    } | ${fmt(figures.meanMs)} |`,
  );
}
for (const concurrency of [1, 4]) {
  const figures = await throughput(
    (n) => createProcessSandbox({ concurrency: n }),
    concurrency,
    PROCESS_RUNS,
  );
  console.log(
    `| process | ${PROCESS_RUNS} | ${concurrency} | ${
      figures.perSecond.toFixed(1)
    } | ${fmt(figures.meanMs)} |`,
  );
}
console.log(
  `\nThe process tier runs ${PROCESS_RUNS} rather than ${WORKER_RUNS} runs: each starts a Deno process.`,
);

/** Milliseconds to read `pieces` as one frame and a line after it. */
function frameReadMs(pieces: string[]): number {
  let frames = 0;
  const parser = createFrameParser("#N#", () => frames++, () => {}, 1000);
  const started = performance.now();
  for (const piece of pieces) parser.push(piece);
  parser.end();
  const elapsed = performance.now() - started;
  if (frames !== 1) throw new Error("the frame was not read whole");
  return elapsed;
}

/** A 32 MiB frame as a pipe might deliver it, in pieces of `pieceBytes`. */
function framePieces(pieceBytes: number): string[] {
  const count = 32 * 1024 * 1024 / pieceBytes;
  return [
    'out#N#"',
    ...Array(count).fill("x".repeat(pieceBytes)),
    '"\nafter\n',
  ];
}

const SMALL_PIECES = framePieces(64 * 1024);
const LARGE_PIECES = framePieces(1024 * 1024);
const frameRatios: number[] = [];
for (let round = 0; round < 7; round++) {
  frameRatios.push(frameReadMs(SMALL_PIECES) / frameReadMs(LARGE_PIECES));
}
console.log(
  `\nReading a 32 MiB answer from a child's output in 512 pieces of 64 KiB vs 32 pieces of 1 MiB (7 rounds): median ${
    quantile(frameRatios, 0.5).toFixed(2)
  }× (linear: about 1×; searching the frame again at every piece: about 16×).`,
);
