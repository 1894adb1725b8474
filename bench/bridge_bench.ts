/**
 * Bridge benchmark: one request's round trip through the vm host bridge
 * (marshal, realm hop, plugin handler, unmarshal) against the same handler
 * called directly in the host (the `host` plugin kind: the same request and
 * response conversion, no realm), side by side in one run; then requests/s
 * over HTTP.
 *
 * - Round trip on Deno: the vm bridge with its default isolation (a child
 *   process, the only one that can stop a looping plugin on Deno, which
 *   refuses a worker thread). The variants take turns every `--block`
 *   calls, so load changes on a shared machine hit all of them alike. A bare child process that echoes a line
 *   of the same size over the same kind of pipes shows a process hop with
 *   nothing in it.
 * - Round trip on Node (if `node` is on the PATH): the Node build
 *   (`deno task build:node`) with its default isolation (a worker thread)
 *   and with a child process.
 * - HTTP: the plugin host behind `Deno.serve` in its own process, loaded by
 *   autocannon from this one.
 *
 * Information only: the lone-call target (bridge ≤ 2 × direct + 0.1 ms) is
 * retired; the plugin bench measures plugins over HTTP under load. The
 * figures are taken in the steady state of a running host: every path first
 * runs `--warmup` calls, taking turns as in the rounds, because the host's
 * JIT keeps compiling the bridge's path for thousands of calls (on a
 * two-core machine the realm's spinning thread holds the other core, so the
 * compiler threads compete with the host's own). The warm-up's first
 * `--calls` calls are reported in a column of their own.
 *
 * Run: `deno run -A bench/bridge_bench.ts [--calls 3000] [--rounds 5]
 * [--warmup 10000] [--block 100] [--seconds 3] [--connections 16]`.
 *
 * @module
 */

import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
// deno-lint-ignore no-import-prefix -- bench only: kept out of deno.json so serve and run do not install it
import autocannon from "npm:autocannon@9.0.0";
import {
  createHostPluginModule,
  createPluginHost,
  createSandboxedVmPluginModule,
  identifyByTrustedHeaders,
  type PluginModule,
} from "../plugin/mod.ts";
import { createVmSandbox, type VmIsolation } from "../vm/mod.ts";
import {
  BODY,
  importHostPlugin,
  PLUGIN_SOURCE,
  serveUntilStdinCloses,
} from "./_echo_plugin.ts";

function flag(name: string, fallback: number): number {
  const index = Deno.args.indexOf(`--${name}`);
  return index === -1 ? fallback : Number(Deno.args[index + 1]);
}

async function directModule(id: string): Promise<PluginModule> {
  return createHostPluginModule({
    manifest: { id, version: "1.0.0" },
    plugin: await importHostPlugin(),
  });
}

function vmModule(id: string, isolation: VmIsolation): PluginModule {
  return createSandboxedVmPluginModule({
    manifest: { id, version: "1.0.0" },
    sandbox: createVmSandbox({
      pluginId: id,
      isolation,
      pluginModule: {
        kind: "source",
        source: PLUGIN_SOURCE,
        identifier: `${id}.js`,
      },
    }),
  });
}

function requestContext() {
  return {
    request: new Request("http://127.0.0.1/plugins/x/echo/7", {
      method: "POST",
      body: BODY,
      headers: { "content-type": "application/json" },
    }),
    principalId: "ada",
    tenantId: "acme",
    capabilities: [],
    params: { id: "7" },
  };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))]!;
}

function mean(values: number[]): number {
  return values.reduce((a, b) => a + b, 0) / values.length;
}

interface RoundTripRow {
  runtime: string;
  variant: string;
  meanUs: number;
  p50Us: number;
  p99Us: number;
  /** Mean of the first calls of the warm-up (as many as a round has). */
  warmupMeanUs: number;
  /** Whether the row is a bridge, checked against the target. */
  bridge: boolean;
  /** Whether the row is the direct baseline of its runtime. */
  baseline: boolean;
}

type Summary = Pick<
  RoundTripRow,
  "meanUs" | "p50Us" | "p99Us" | "warmupMeanUs"
>;

/**
 * Median over rounds of each round's mean, p50 and p99, and the mean of
 * the warm-up's first `calls` calls, in µs.
 */
function summarize({ rounds, warmup }: Timings, calls: number): Summary {
  return {
    meanUs: median(rounds.map(mean)) * 1000,
    p50Us: median(rounds.map((r) => percentile(r, 0.5))) * 1000,
    p99Us: median(rounds.map((r) => percentile(r, 0.99))) * 1000,
    warmupMeanUs: mean(warmup.slice(0, calls)) * 1000,
  };
}

/** How many calls each path runs, and how they take turns. */
interface Schedule {
  calls: number;
  rounds: number;
  warmup: number;
  block: number;
}

/** Each variant's timed rounds, and its warm-up calls, in ms. */
interface Timings {
  rounds: number[][];
  warmup: number[];
}

/**
 * Runs `warmup` calls of each variant, then `calls` calls per round,
 * taking turns in blocks of `block` calls (the first variant of a turn
 * changes every turn). Short blocks spread load changes of a shared machine
 * evenly over the variants; calls within a block follow each other, as a
 * steady stream of requests would.
 */
async function interleaved(
  variants: (() => Promise<unknown>)[],
  { calls, rounds, warmup, block }: Schedule,
): Promise<Timings[]> {
  const out = variants.map((): Timings => ({ rounds: [], warmup: [] }));
  for (let round = -1; round < rounds; round++) {
    const times = variants.map(() => [] as number[]);
    const n = round < 0 ? warmup : calls;
    for (let turn = 0; turn * block < n; turn++) {
      const size = Math.min(block, n - turn * block);
      for (let k = 0; k < variants.length; k++) {
        const j = (turn + k) % variants.length;
        for (let i = 0; i < size; i++) {
          const started = performance.now();
          await variants[j]!();
          times[j]!.push(performance.now() - started);
        }
      }
    }
    times.forEach((t, j) => {
      if (round < 0) out[j]!.warmup = t;
      else out[j]!.rounds.push(t);
    });
  }
  return out;
}

/**
 * A process hop with nothing in it: a bare child echoing one line per call
 * with a blocking read and a direct write, as a realm process reads under
 * load.
 */
const ECHO_CHILD = `
const input = new Uint8Array(65536);
const decoder = new TextDecoder();
const encoder = new TextEncoder();
let buffered = "";
for (;;) {
  const n = Deno.stdin.readSync(input);
  if (n === null) break;
  buffered += decoder.decode(input.subarray(0, n), { stream: true });
  let newline;
  while ((newline = buffered.indexOf("\\n")) !== -1) {
    const line = buffered.slice(0, newline + 1);
    buffered = buffered.slice(newline + 1);
    let bytes = encoder.encode(line);
    while (bytes.length > 0) bytes = bytes.subarray(Deno.stdout.writeSync(bytes));
  }
}
`;

function echoProcess(): {
  call(): Promise<void>;
  close(): Promise<void>;
} {
  const child = spawn(Deno.execPath(), [
    "run",
    "--quiet",
    "--no-config",
    "--deny-read",
    "--deny-write",
    "--deny-net",
    "--deny-env",
    "--deny-run",
    "--deny-ffi",
    "--deny-sys",
    `data:text/javascript;base64,${btoa(ECHO_CHILD)}`,
  ], { stdio: ["pipe", "pipe", "inherit"] });
  // About the size of the bridge's request frame.
  const line = "I1\thandleRequest\t" + JSON.stringify({
    url: "http://127.0.0.1/plugins/x/echo/7",
    method: "POST",
    headers: [["content-type", "application/json"]],
    bodyBase64: btoa(BODY),
    principalId: "ada",
    tenantId: "acme",
    capabilities: [],
    params: { id: "7" },
  }) + "\n";
  let waiting: (() => void) | null = null;
  let buffered = "";
  child.stdout.setEncoding("utf8");
  child.stdout.on("data", (chunk: string) => {
    buffered += chunk;
    while (buffered.indexOf("\n") !== -1) {
      buffered = buffered.slice(buffered.indexOf("\n") + 1);
      waiting?.();
    }
  });
  return {
    call: () =>
      new Promise<void>((resolve) => {
        waiting = resolve;
        child.stdin.write(line);
      }),
    close: async () => {
      const closed = new Promise((resolve) => child.once("close", resolve));
      child.kill("SIGKILL");
      await closed;
    },
  };
}

async function denoRoundTrips(schedule: Schedule): Promise<RoundTripRow[]> {
  const plugin = await importHostPlugin();
  const direct = await directModule("direct");
  const process = vmModule("vm-process", "auto");
  await Promise.all([direct.start(), process.start()]);
  const echo = echoProcess();
  const bare = {
    url: "http://127.0.0.1/plugins/x/echo/7",
    method: "POST",
    headers: [],
    bodyBase64: btoa(BODY),
    principalId: "ada",
    tenantId: "acme",
    capabilities: [],
    params: { id: "7" },
  };
  const through = (module: PluginModule) => {
    const handler = module.routes[0]!.handler;
    return async () => await (await handler(requestContext())).text();
  };
  const [raw, directTimes, processTimes, echoTimes] = await interleaved(
    [
      () => Promise.resolve(plugin.handleRequest(bare)),
      through(direct),
      through(process),
      echo.call,
    ],
    schedule,
  );
  await Promise.all([
    direct.dispose(),
    process.dispose(),
    echo.close(),
  ]);
  const row = (
    variant: string,
    times: Timings,
    kind: "bridge" | "baseline" | "other",
  ): RoundTripRow => ({
    runtime: `Deno ${Deno.version.deno}`,
    variant,
    ...summarize(times, schedule.calls),
    bridge: kind === "bridge",
    baseline: kind === "baseline",
  });
  return [
    row("handler called bare (no marshalling)", raw!, "other"),
    row(
      "direct: same handler in the host (host kind)",
      directTimes!,
      "baseline",
    ),
    row(
      "vm bridge, child process (default on Deno)",
      processTimes!,
      "bridge",
    ),
    row(
      "process hop alone: a bare child echoes a line of the same size",
      echoTimes!,
      "other",
    ),
  ];
}

const NODE_SCRIPT = `
import { createHostPluginModule, createSandboxedVmPluginModule } from "./dist/node/plugin/mod.js";
import { createVmSandbox } from "./dist/node/vm/mod.js";
const { calls, rounds, warmup, block } = JSON.parse(process.argv[1]);
const SOURCE = ${JSON.stringify(PLUGIN_SOURCE)};
const BODY = ${JSON.stringify(BODY)};
const plugin = await import("data:text/javascript;base64," + Buffer.from(SOURCE).toString("base64"));
const direct = createHostPluginModule({ manifest: { id: "direct", version: "1" }, plugin });
const make = (isolation) => createSandboxedVmPluginModule({
  manifest: { id: "vm-" + isolation, version: "1" },
  sandbox: createVmSandbox({ pluginId: "vm", isolation, pluginModule: { kind: "source", source: SOURCE, identifier: "vm.js" } }),
});
const thread = make("thread");
const child = make("process");
await Promise.all([direct.start(), thread.start(), child.start()]);
// The same schedule and request as the Deno rows, from their own source.
const requestContext = ${requestContext.toString()};
${interleaved.toString()}
const through = (module) => {
  const handler = module.routes[0].handler;
  return async () => await (await handler(requestContext())).text();
};
const [directTimes, threadTimes, childTimes] = await interleaved(
  [direct, thread, child].map(through),
  { calls, rounds, warmup, block },
);
const out = { direct: directTimes, thread: threadTimes, child: childTimes };
await Promise.all([direct.dispose(), thread.dispose(), child.dispose()]);
console.log(JSON.stringify(out));
`;

async function nodeRoundTrips(
  schedule: Schedule,
): Promise<RoundTripRow[] | string> {
  const root = fileURLToPath(new URL("../", import.meta.url));
  const build = await new Deno.Command(Deno.execPath(), {
    args: ["task", "build:node"],
    cwd: root,
    stdout: "null",
    stderr: "piped",
  }).output();
  if (!build.success) return "the Node build failed";
  let output: Deno.CommandOutput;
  try {
    output = await new Deno.Command("node", {
      args: [
        "--experimental-vm-modules",
        "--no-warnings",
        "--input-type=module",
        "-e",
        NODE_SCRIPT,
        JSON.stringify(schedule),
      ],
      cwd: root,
      stdout: "piped",
      stderr: "piped",
    }).output();
  } catch {
    return "node is not on the PATH";
  }
  if (!output.success) {
    return `node failed: ${
      new TextDecoder().decode(output.stderr).slice(0, 300)
    }`;
  }
  const data = JSON.parse(new TextDecoder().decode(output.stdout)) as Record<
    string,
    Timings
  >;
  const version = new TextDecoder().decode(
    (await new Deno.Command("node", { args: ["--version"] }).output()).stdout,
  ).trim();
  const runtime = `Node ${version.replace(/^v/, "")}`;
  return [
    {
      runtime,
      variant: "direct: same handler in the host (host kind)",
      ...summarize(data.direct!, schedule.calls),
      bridge: false,
      baseline: true,
    },
    {
      runtime,
      variant: "vm bridge, worker thread (default on Node)",
      ...summarize(data.thread!, schedule.calls),
      bridge: true,
      baseline: false,
    },
    {
      runtime,
      variant: "vm bridge, child process",
      ...summarize(data.child!, schedule.calls),
      bridge: true,
      baseline: false,
    },
  ];
}

// ---- HTTP ----

async function serve(): Promise<void> {
  const host = createPluginHost({ identify: identifyByTrustedHeaders });
  await host.installPlugin({
    kind: "host",
    module: await directModule("direct"),
  });
  await host.installPlugin({ kind: "vm", module: vmModule("vm", "auto") });
  await serveUntilStdinCloses(host);
}

interface CannonResult {
  requests: { average: number; total: number };
  latency: { p99: number };
  non2xx: number;
  errors: number;
}

type Cannon = (options: {
  url: string;
  method: string;
  body: string;
  connections: number;
  duration: number;
  headers: Record<string, string>;
}) => Promise<CannonResult>;

async function httpRows(seconds: number, connections: number, rounds: number) {
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      `--lock=${fileURLToPath(new URL("deno.lock", import.meta.url))}`,
      fileURLToPath(import.meta.url),
      "--serve",
    ],
    stdin: "piped",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  while (!text.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) throw new Error("The bench server ended before listening");
    text += value;
  }
  const { port } = JSON.parse(text.split("\n")[0]!) as { port: number };
  const cannon = autocannon as unknown as Cannon;
  const results: Record<string, { rps: number[]; p99: number[]; bad: number }> =
    {
      direct: { rps: [], p99: [], bad: 0 },
      vm: { rps: [], p99: [], bad: 0 },
    };
  try {
    for (let round = 0; round < rounds; round++) {
      const order = round % 2 === 0 ? ["direct", "vm"] : ["vm", "direct"];
      for (const id of order) {
        const result = await cannon({
          url: `http://127.0.0.1:${port}/plugins/${id}/echo/7`,
          method: "POST",
          body: BODY,
          connections,
          duration: seconds,
          headers: {
            "content-type": "application/json",
            "x-cordon-principal": "ada",
            "x-cordon-tenant": "acme",
          },
        });
        results[id]!.rps.push(result.requests.average);
        results[id]!.p99.push(result.latency.p99);
        results[id]!.bad += result.non2xx + result.errors;
      }
    }
  } finally {
    await child.stdin.close();
    await reader.cancel();
    await child.status;
  }
  return results;
}

async function main(): Promise<void> {
  const calls = flag("calls", 3000);
  const rounds = flag("rounds", 5);
  const warmup = Math.max(calls, flag("warmup", 10000));
  const seconds = flag("seconds", 3);
  const connections = flag("connections", 16);
  const block = flag("block", 100);
  const schedule = { calls, rounds, warmup, block };
  const rows = await denoRoundTrips(schedule);
  const node = await nodeRoundTrips(schedule);
  if (typeof node !== "string") rows.push(...node);

  console.log(
    `Request round trip, ${calls} sequential calls × ${rounds} rounds per path after ${warmup} warm-up calls per path, paths taking turns every ${block} calls (median over rounds), POST with a ${BODY.length}-byte JSON body (information, no target). The last column is the mean of the first ${calls} warm-up calls, right after start:\n`,
  );
  console.log(
    "| runtime | path | mean µs | p50 µs | p99 µs | mean vs direct | p50 vs direct | warm-up mean µs |",
  );
  console.log(
    "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
  );
  let direct: RoundTripRow | undefined;
  for (const row of rows) {
    if (row.baseline) direct = row;
    const ratio = (key: "meanUs" | "p50Us") =>
      direct === undefined || (!row.bridge && !row.baseline)
        ? ""
        : `${(row[key] / direct[key]).toFixed(2)}×`;
    console.log(
      `| ${row.runtime} | ${row.variant} | ${row.meanUs.toFixed(1)} | ${
        row.p50Us.toFixed(1)
      } | ${row.p99Us.toFixed(1)} | ${ratio("meanUs")} | ${ratio("p50Us")} | ${
        row.warmupMeanUs.toFixed(1)
      } |`,
    );
  }
  if (typeof node === "string") console.log(`\nNode figures skipped: ${node}`);

  const http = await httpRows(
    seconds,
    connections,
    Math.max(2, Math.min(rounds, 4)),
  );
  console.log(
    `\nHTTP through the plugin host (Deno.serve in its own process, autocannon, ${connections} connections, ${seconds} s runs, median of rounds):\n`,
  );
  console.log("| plugin | requests/s | p99 ms | non-2xx or errors |");
  console.log("| --- | ---: | ---: | ---: |");
  for (
    const [id, label] of [["direct", "host kind (direct)"], [
      "vm",
      "vm bridge (child process)",
    ]]
  ) {
    const r = http[id!]!;
    console.log(
      `| ${label} | ${median(r.rps).toFixed(0)} | ${
        median(r.p99).toFixed(1)
      } | ${r.bad} |`,
    );
  }
}

if (Deno.args.includes("--serve")) await serve();
else await main();
