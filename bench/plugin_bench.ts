/**
 * Plugin benchmark: one plugin served over HTTP by the plugin host, under
 * load, on each sandbox tier against the same handler as a trusted host
 * plugin (the `host` kind: the same request and response conversion, no
 * realm), side by side in one run.
 *
 * The host runs `Deno.serve` in a process of its own with every plugin
 * installed (then, when `node` is on the PATH and the Node build exists,
 * Node's `http` server with the tiers Node hosts: `vm` and `process`);
 * this process loads it with autocannon at `--connections`
 * (64) for `--seconds` per path, the paths taking turns in each of
 * `--rounds` rounds (the order reversed every other round) so a change of
 * load on a shared machine hits all of them alike. Each figure is the
 * median over the rounds; every path is warmed up first.
 *
 * Targets: vm ≥ 0.5 × the host plugin's requests/s and p99 ≤ the host
 * plugin's p99 + 2 ms; quickjs ≥ 0.3×; worker and process reported.
 *
 * Run: `deno task bench plugin` or `deno run -A bench/plugin_bench.ts
 * [--seconds 3] [--rounds 3] [--connections 64]`.
 *
 * @module
 */

// deno-lint-ignore no-import-prefix -- bench only: kept out of deno.json so serve and run do not install it
import autocannon from "npm:autocannon@9.0.0";
import {
  createHostPluginModule,
  createPluginHost,
  createPluginSandbox,
  createSandboxedVmPluginModule,
  identifyByTrustedHeaders,
  PLUGIN_TIERS,
  type PluginModule,
  type PluginTier,
} from "../plugin/mod.ts";
import {
  BODY,
  importHostPlugin,
  PLUGIN_SOURCE,
  serveUntilStdinCloses,
} from "./_echo_plugin.ts";

type Path = "host" | PluginTier;

/** The tiers each runtime hosts: Deno's Web Workers are Deno's own. */
const TIERS: Record<Runtime, readonly PluginTier[]> = {
  deno: PLUGIN_TIERS,
  node: ["vm", "process"],
};

type Runtime = "deno" | "node";

function flag(name: string, fallback: number): number {
  const index = Deno.args.indexOf(`--${name}`);
  return index === -1 ? fallback : Number(Deno.args[index + 1]);
}

async function hostModule(): Promise<PluginModule> {
  return createHostPluginModule({
    manifest: { id: "host", version: "1.0.0" },
    plugin: await importHostPlugin(),
  });
}

function tierModule(tier: PluginTier): PluginModule {
  return createSandboxedVmPluginModule({
    manifest: { id: tier, version: "1.0.0" },
    sandbox: createPluginSandbox(tier, {
      pluginId: tier,
      pluginModule: {
        kind: "source",
        source: PLUGIN_SOURCE,
        identifier: `${tier}.js`,
      },
    }),
  });
}

/** The server process: every path installed, served until stdin closes. */
async function serve(): Promise<void> {
  const host = createPluginHost({ identify: identifyByTrustedHeaders });
  await host.installPlugin({ kind: "host", module: await hostModule() });
  for (const tier of PLUGIN_TIERS) {
    await host.installPlugin({ kind: tier, module: tierModule(tier) });
  }
  await serveUntilStdinCloses(host);
}

interface CannonResult {
  requests: { average: number };
  latency: { p99: number };
  non2xx: number;
  errors: number;
  timeouts: number;
}

type Cannon = (options: {
  url: string;
  method: string;
  body: string;
  connections: number;
  duration: number;
  headers: Record<string, string>;
}) => Promise<CannonResult>;

interface PathFigures {
  rps: number[];
  p99: number[];
  bad: number;
}

function serverCommand(runtime: Runtime): Deno.Command {
  const args = runtime === "deno"
    ? [
      "run",
      "-A",
      `--lock=${new URL("deno.lock", import.meta.url).pathname}`,
      new URL(import.meta.url).pathname,
      "--serve",
    ]
    : [
      "--experimental-vm-modules",
      "--no-warnings",
      new URL("_plugin_server_node.mjs", import.meta.url).pathname,
      PLUGIN_SOURCE,
      JSON.stringify(TIERS.node),
    ];
  return new Deno.Command(runtime === "deno" ? Deno.execPath() : "node", {
    args,
    stdin: "piped",
    stdout: "piped",
    stderr: "inherit",
  });
}

async function startServer(runtime: Runtime): Promise<
  { port: number; stop: () => Promise<void> }
> {
  const child = serverCommand(runtime).spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  while (!text.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) throw new Error("The bench server ended before listening");
    text += value;
  }
  const { port } = JSON.parse(text.split("\n")[0]!) as { port: number };
  return {
    port,
    stop: async () => {
      await child.stdin.close();
      await reader.cancel();
      await child.status;
    },
  };
}

function load(
  port: number,
  path: Path,
  connections: number,
  seconds: number,
): Promise<CannonResult> {
  return (autocannon as unknown as Cannon)({
    url: `http://127.0.0.1:${port}/plugins/${path}/echo/7`,
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
}

function median(values: number[]): number {
  const sorted = values.toSorted((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 === 1
    ? sorted[middle]!
    : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

async function measure(
  runtime: Runtime,
  seconds: number,
  rounds: number,
  connections: number,
): Promise<Map<Path, PathFigures>> {
  const PATHS: Path[] = ["host", ...TIERS[runtime]];
  const server = await startServer(runtime);
  const figures = new Map<Path, PathFigures>(
    PATHS.map((path) => [path, { rps: [], p99: [], bad: 0 }]),
  );
  try {
    for (const path of PATHS) {
      await load(server.port, path, connections, 1);
    }
    for (let round = 0; round < rounds; round++) {
      const order = round % 2 === 0 ? [...PATHS] : [...PATHS].reverse();
      for (const path of order) {
        const result = await load(server.port, path, connections, seconds);
        const entry = figures.get(path)!;
        entry.rps.push(result.requests.average);
        entry.p99.push(result.latency.p99);
        entry.bad += result.non2xx + result.errors + result.timeouts;
      }
    }
  } finally {
    await server.stop();
  }
  return figures;
}

function targetOf(path: Path, rps: number, p99: number, host: PathFigures) {
  const hostRps = median(host.rps);
  const hostP99 = median(host.p99);
  if (path === "vm") {
    const fast = rps >= 0.5 * hostRps;
    const tail = p99 <= hostP99 + 2;
    return `≥ 0.5× and p99 ≤ ${(hostP99 + 2).toFixed(0)} ms: ${
      fast && tail
        ? "met"
        : `missed (${fast ? "" : "req/s"}${!fast && !tail ? ", " : ""}${
          tail ? "" : "p99"
        })`
    }`;
  }
  if (path === "quickjs") {
    return `≥ 0.3×: ${rps >= 0.3 * hostRps ? "met" : "missed"}`;
  }
  return path === "host" ? "baseline" : "reported";
}

function printTable(runtime: Runtime, figures: Map<Path, PathFigures>) {
  const host = figures.get("host")!;
  console.log(`\n${runtime === "deno" ? "Deno" : "Node"}:\n`);
  console.log(
    "| tier | requests/s | p99 ms | vs host req/s | p99 − host p99 ms | errors | target |",
  );
  console.log("| --- | ---: | ---: | ---: | ---: | ---: | --- |");
  for (const [path, { rps, p99, bad }] of figures) {
    const rpsMedian = median(rps);
    const p99Median = median(p99);
    console.log(
      `| ${path} | ${rpsMedian.toFixed(0)} | ${p99Median.toFixed(0)} | ${
        (rpsMedian / median(host.rps)).toFixed(2)
      }× | ${(p99Median - median(host.p99)).toFixed(0)} | ${bad} | ${
        targetOf(path, rpsMedian, p99Median, host)
      } |`,
    );
  }
}

/** Why the Node leg cannot run, or `null` when it can. */
async function nodeMissing(): Promise<string | null> {
  try {
    await Deno.stat(new URL("../dist/node/plugin/mod.js", import.meta.url));
  } catch {
    return "no Node build: run deno task build:node";
  }
  try {
    const { success } = await new Deno.Command("node", { args: ["--version"] })
      .output();
    return success ? null : "node does not run";
  } catch {
    return "node is not on the PATH";
  }
}

async function main(): Promise<void> {
  const seconds = flag("seconds", 3);
  const rounds = flag("rounds", 3);
  const connections = flag("connections", 64);
  console.log(
    `Plugin over HTTP: POST with a ${BODY.length}-byte JSON body, ${connections} connections, ${seconds} s per path × ${rounds} rounds (paths taking turns), median over rounds; the host plugin is the same handler in the host's thread.`,
  );
  printTable("deno", await measure("deno", seconds, rounds, connections));
  const missing = await nodeMissing();
  if (missing === null) {
    printTable("node", await measure("node", seconds, rounds, connections));
  } else console.log(`\nNode figures skipped: ${missing}`);
}

if (Deno.args.includes("--serve")) await serve();
else await main();
