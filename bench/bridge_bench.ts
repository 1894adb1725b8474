/**
 * Bridge benchmark: one request's round trip through the vm host bridge
 * (marshal, realm hop, plugin handler, unmarshal) against the same handler
 * called directly in the host (the `host` plugin kind: the same marshalling
 * with no realm), side by side in one run; then requests/s over HTTP.
 *
 * - Round trip on Deno: the vm bridge with its default isolation (a child
 *   process, the only one that can stop a looping plugin on Deno) and with
 *   a worker thread (shown for comparison; on Deno it cannot stop a loop).
 * - Round trip on Node (if `node` is on the PATH): the Node build
 *   (`deno task build:node`) with its default isolation (a worker thread).
 * - HTTP: the plugin host behind `Deno.serve` in its own process, loaded by
 *   autocannon from this one.
 *
 * Target: bridge round trip ≤ 2 × direct + 0.1 ms.
 *
 * Run: `deno run -A bench/bridge_bench.ts [--calls 3000] [--rounds 5]
 * [--seconds 3] [--connections 16]`.
 *
 * @module
 */

import autocannon from "autocannon";
import {
  createHostPluginModule,
  createPluginHost,
  createSandboxedVmPluginModule,
  createVmSandbox,
  type PluginModule,
  type VmIsolation,
} from "../bridge/mod.ts";
import type {
  SerializedRequest,
  SerializedResponse,
} from "../protocol/bridge_messages.ts";

/** The plugin both sides run: no imports, so the host can load it too. */
const PLUGIN_SOURCE = `
export function routes() {
  return [{ method: "POST", path: "/echo/:id" }];
}
export function handleRequest(req) {
  let sum = 0;
  const body = req.bodyBase64 ?? "";
  for (let i = 0; i < body.length; i++) sum = (sum * 31 + body.charCodeAt(i)) >>> 0;
  return {
    status: 200,
    headers: [["content-type", "application/json"]],
    body: JSON.stringify({ id: req.params.id, principal: req.principalId, tenant: req.tenantId, sum }),
  };
}
`;

const BODY = JSON.stringify({ note: "x".repeat(200), n: 1 });

function flag(name: string, fallback: number): number {
  const index = Deno.args.indexOf(`--${name}`);
  return index === -1 ? fallback : Number(Deno.args[index + 1]);
}

interface PluginSurface {
  routes(): { method: "POST"; path: string }[];
  handleRequest(req: SerializedRequest): SerializedResponse;
}

async function hostPlugin(): Promise<PluginSurface> {
  const url = `data:text/javascript;base64,${btoa(PLUGIN_SOURCE)}`;
  return await import(url) as PluginSurface;
}

async function directModule(id: string): Promise<PluginModule> {
  return createHostPluginModule({
    manifest: { id, version: "1.0.0" },
    plugin: await hostPlugin(),
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

async function roundTrips(module: PluginModule, calls: number) {
  const handler = module.routes[0]!.handler;
  const times: number[] = [];
  for (let i = 0; i < calls; i++) {
    const started = performance.now();
    const response = await handler({
      request: new Request("http://127.0.0.1/plugins/x/echo/7", {
        method: "POST",
        body: BODY,
        headers: { "content-type": "application/json" },
      }),
      principalId: "ada",
      tenantId: "acme",
      capabilities: [],
      params: { id: "7" },
    });
    await response.text();
    times.push(performance.now() - started);
  }
  return times;
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
  directUs: number;
}

async function denoRoundTrips(
  calls: number,
  rounds: number,
): Promise<RoundTripRow[]> {
  const plugin = await hostPlugin();
  const direct = await directModule("direct");
  const process = vmModule("vm-process", "auto");
  const thread = vmModule("vm-thread", "thread");
  await Promise.all([direct.start(), process.start(), thread.start()]);
  const samples: Record<string, number[][]> = {
    raw: [],
    direct: [],
    process: [],
    thread: [],
  };
  const raw = () => {
    const times: number[] = [];
    for (let i = 0; i < calls; i++) {
      const started = performance.now();
      plugin.handleRequest({
        url: "http://127.0.0.1/plugins/x/echo/7",
        method: "POST",
        headers: [],
        bodyBase64: btoa(BODY),
        principalId: "ada",
        tenantId: "acme",
        capabilities: [],
        params: { id: "7" },
      });
      times.push(performance.now() - started);
    }
    return times;
  };
  // Warm up every side, then alternate so load changes hit all of them.
  raw();
  for (const m of [direct, process, thread]) await roundTrips(m, 300);
  for (let round = 0; round < rounds; round++) {
    samples.raw!.push(raw());
    samples.direct!.push(await roundTrips(direct, calls));
    samples.process!.push(await roundTrips(process, calls));
    samples.thread!.push(await roundTrips(thread, calls));
  }
  await Promise.all([direct.dispose(), process.dispose(), thread.dispose()]);
  const summarize = (key: string) => {
    const rounds = samples[key]!;
    return {
      meanUs: median(rounds.map(mean)) * 1000,
      p50Us: median(rounds.map((r) => percentile(r, 0.5))) * 1000,
      p99Us: median(rounds.map((r) => percentile(r, 0.99))) * 1000,
    };
  };
  const directUs = summarize("direct").meanUs;
  return [
    {
      runtime: "Deno",
      variant: "handler called bare (no marshalling)",
      ...summarize("raw"),
      directUs,
    },
    {
      runtime: "Deno",
      variant: "direct: same handler in the host (host kind)",
      ...summarize("direct"),
      directUs,
    },
    {
      runtime: "Deno",
      variant: "vm bridge, child process (default on Deno)",
      ...summarize("process"),
      directUs,
    },
    {
      runtime: "Deno",
      variant: "vm bridge, worker thread (no CPU backstop on Deno)",
      ...summarize("thread"),
      directUs,
    },
  ];
}

const NODE_SCRIPT = `
import { createHostPluginModule, createSandboxedVmPluginModule, createVmSandbox } from "./dist/bridge/mod.js";
const [calls, rounds] = JSON.parse(process.argv[1]);
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
async function run(module, n) {
  const handler = module.routes[0].handler;
  const times = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    const response = await handler({
      request: new Request("http://127.0.0.1/plugins/x/echo/7", { method: "POST", body: BODY, headers: { "content-type": "application/json" } }),
      principalId: "ada", tenantId: "acme", capabilities: [], params: { id: "7" },
    });
    await response.text();
    times.push(performance.now() - t);
  }
  return times;
}
for (const m of [direct, thread, child]) await run(m, 300);
const out = { direct: [], thread: [], child: [] };
for (let r = 0; r < rounds; r++) {
  out.direct.push(await run(direct, calls));
  out.thread.push(await run(thread, calls));
  out.child.push(await run(child, calls));
}
await Promise.all([direct.dispose(), thread.dispose(), child.dispose()]);
console.log(JSON.stringify(out));
`;

async function nodeRoundTrips(
  calls: number,
  rounds: number,
): Promise<RoundTripRow[] | string> {
  const root = new URL("../", import.meta.url).pathname;
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
        JSON.stringify([calls, rounds]),
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
    number[][]
  >;
  const summarize = (key: string) => ({
    meanUs: median(data[key]!.map(mean)) * 1000,
    p50Us: median(data[key]!.map((r) => percentile(r, 0.5))) * 1000,
    p99Us: median(data[key]!.map((r) => percentile(r, 0.99))) * 1000,
  });
  const directUs = summarize("direct").meanUs;
  return [
    {
      runtime: `Node ${
        new TextDecoder().decode(
          (await new Deno.Command("node", { args: ["--version"] }).output())
            .stdout,
        ).trim()
      }`,
      variant: "direct: same handler in the host (host kind)",
      ...summarize("direct"),
      directUs,
    },
    {
      runtime: "Node",
      variant: "vm bridge, worker thread (default on Node)",
      ...summarize("thread"),
      directUs,
    },
    {
      runtime: "Node",
      variant: "vm bridge, child process",
      ...summarize("child"),
      directUs,
    },
  ];
}

// ---- HTTP ----

async function serve(): Promise<void> {
  const host = createPluginHost();
  await host.installPlugin({
    kind: "host",
    module: await directModule("direct"),
  });
  await host.installPlugin({ kind: "vm", module: vmModule("vm", "auto") });
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    host.fetch,
  );
  console.log(JSON.stringify({ port: server.addr.port }));
  // Serve until the bench closes stdin.
  for await (const _ of Deno.stdin.readable) { /* wait */ }
  await server.shutdown();
  await host.dispose();
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
    args: ["run", "-A", new URL(import.meta.url).pathname, "--serve"],
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
  const seconds = flag("seconds", 3);
  const connections = flag("connections", 16);
  const rows = await denoRoundTrips(calls, rounds);
  const node = await nodeRoundTrips(calls, rounds);
  if (typeof node !== "string") rows.push(...node);

  console.log(
    `Request round trip, ${calls} sequential calls × ${rounds} rounds (median of round means), POST with a ${BODY.length}-byte JSON body:\n`,
  );
  console.log(
    "| runtime | path | mean µs | p50 µs | p99 µs | vs direct | target ≤ 2× direct + 100 µs |",
  );
  console.log("| --- | --- | ---: | ---: | ---: | ---: | --- |");
  for (const row of rows) {
    const isBridge = row.variant.startsWith("vm bridge");
    const limit = 2 * row.directUs + 100;
    console.log(
      `| ${row.runtime} | ${row.variant} | ${row.meanUs.toFixed(1)} | ${
        row.p50Us.toFixed(1)
      } | ${row.p99Us.toFixed(1)} | ${
        (row.meanUs / row.directUs).toFixed(2)
      }× | ${
        isBridge
          ? `${row.meanUs <= limit ? "met" : "missed"} (limit ${
            limit.toFixed(0)
          } µs)`
          : ""
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
