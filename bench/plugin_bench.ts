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
 * Then each path takes the same open-loop load (`_open_loop.ts`, over as
 * many connections): `--rate` requests a second (by default half the
 * slowest path's requests/s, so every path can carry it), each started when
 * it is due whatever the earlier ones are doing and timed from that moment. In the closed loop a path's latency is its
 * connections ÷ its requests/s, so only paths of equal throughput can have
 * equal tails; at one rate every path sustains, their tails compare.
 *
 * On Deno a `hop` row shows a process boundary with nothing in it: the host
 * plugin's handler run in a bare child process (`_process_hop.ts`), the
 * serialized request and answer crossing its pipes as a line each.
 *
 * Targets: vm ≥ 0.5 × the host plugin's requests/s and p99 ≤ the host
 * plugin's p99 + 2 ms (judged in both loops); quickjs ≥ 0.3×; worker and
 * process reported.
 *
 * Run: `deno task bench plugin` or `deno run -A bench/plugin_bench.ts
 * [--seconds 3] [--rounds 3] [--connections 64] [--rate N]`.
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
import { loadAverage } from "./_measure.ts";
import { openLoop } from "./_open_loop.ts";
import { startProcessHop } from "./_process_hop.ts";
import { fileURLToPath } from "node:url";

/** `hop` is the host plugin behind a bare process hop (Deno only). */
type Path = "host" | "hop" | PluginTier;

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
  const hop = startProcessHop();
  await host.installPlugin({
    kind: "host",
    module: createHostPluginModule({
      manifest: { id: "hop", version: "1.0.0" },
      plugin: hop.plugin,
    }),
  });
  for (const tier of PLUGIN_TIERS) {
    await host.installPlugin({ kind: tier, module: tierModule(tier) });
  }
  await serveUntilStdinCloses(host);
  await hop.close();
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
  /** p99 of each open-loop round, in ms. */
  openP99: number[];
  /** Failed or non-2xx answers in the open loop. */
  openBad: number;
}

function serverCommand(runtime: Runtime): Deno.Command {
  const args = runtime === "deno"
    ? [
      "run",
      "-A",
      `--lock=${fileURLToPath(new URL("deno.lock", import.meta.url))}`,
      fileURLToPath(import.meta.url),
      "--serve",
    ]
    : [
      "--experimental-vm-modules",
      "--no-warnings",
      fileURLToPath(new URL("_plugin_server_node.mjs", import.meta.url)),
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
    headers: HEADERS,
  });
}

const HEADERS = {
  "content-type": "application/json",
  "x-cordon-principal": "ada",
  "x-cordon-tenant": "acme",
};

function percentile(values: number[], p: number): number {
  const sorted = values.toSorted((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))] ??
    NaN;
}

/** The open loop on one path: its p99 in ms, and its failed requests. */
async function openLoopOf(
  port: number,
  path: Path,
  rate: number,
  connections: number,
): Promise<{ p99: number; bad: number }> {
  const { latencies, bad } = await openLoop({
    port,
    path: `/plugins/${path}/echo/7`,
    body: BODY,
    headers: HEADERS,
  }, { rate, seconds: 1, connections });
  return { p99: percentile(latencies, 0.99), bad };
}

function median(values: number[]): number {
  const sorted = values.toSorted((a, b) => a - b);
  const middle = sorted.length >> 1;
  return sorted.length % 2 === 1
    ? sorted[middle]!
    : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

/** The order of the paths in a round: reversed every other round. */
function orderOf(paths: Path[], round: number): Path[] {
  return round % 2 === 0 ? [...paths] : [...paths].reverse();
}

interface Measured {
  figures: Map<Path, PathFigures>;
  /** The load average before and after. */
  load: string;
  /** The open loop's requests/s. */
  rate: number;
}

async function measure(
  runtime: Runtime,
  settings: Settings,
): Promise<Measured> {
  const { seconds, rounds, connections, rate } = settings;
  const loadBefore = await loadAverage();
  const PATHS: Path[] = runtime === "deno"
    ? ["host", "hop", ...TIERS.deno]
    : ["host", ...TIERS.node];
  const server = await startServer(runtime);
  const figures = new Map<Path, PathFigures>(
    PATHS.map((
      path,
    ) => [path, { rps: [], p99: [], bad: 0, openP99: [], openBad: 0 }]),
  );
  try {
    for (const path of PATHS) {
      await load(server.port, path, connections, 1);
    }
    for (let round = 0; round < rounds; round++) {
      for (const path of orderOf(PATHS, round)) {
        const result = await load(server.port, path, connections, seconds);
        const entry = figures.get(path)!;
        entry.rps.push(result.requests.average);
        entry.p99.push(result.latency.p99);
        entry.bad += result.non2xx + result.errors + result.timeouts;
      }
    }
    const slowest = Math.min(
      ...[...figures.values()].map((entry) => median(entry.rps)),
    );
    const openRate = rate ?? Math.max(100, Math.floor(slowest / 200) * 100);
    // Rounds of one second, as many as the closed loop's seconds: the
    // median second's p99 is what a path's tail is when the machine's other
    // work leaves it alone, and every path gets as many such seconds.
    for (let round = 0; round < rounds * seconds; round++) {
      for (const path of orderOf(PATHS, round)) {
        const result = await openLoopOf(
          server.port,
          path,
          openRate,
          connections,
        );
        const entry = figures.get(path)!;
        entry.openP99.push(result.p99);
        entry.openBad += result.bad;
      }
    }
    return {
      figures,
      rate: openRate,
      load: `${loadBefore} → ${await loadAverage()}`,
    };
  } finally {
    await server.stop();
  }
}

function targetOf(
  path: Path,
  entry: PathFigures,
  host: PathFigures,
  hop: PathFigures | undefined,
): string {
  const ratio = median(entry.rps) / median(host.rps);
  if (path === "vm") {
    const tail = (p99: number[], hostP99: number[]) =>
      median(p99) <= median(hostP99) + 2 ? "met" : "missed";
    const target = `≥ 0.5×: ${
      ratio >= 0.5 ? "met" : "missed"
    }; p99 ≤ host + 2 ms: ${tail(entry.p99, host.p99)} closed, ${
      tail(entry.openP99, host.openP99)
    } open`;
    // On Deno the vm realm is a child process, so the bare hop's tail is
    // the floor of its own: shown beside the target, not instead of it.
    if (hop === undefined) return target;
    const over = (p99: number[], hopP99: number[]) =>
      (median(p99) - median(hopP99)).toFixed(1);
    return `${target} (p99 − the hop's: ${over(entry.p99, hop.p99)} closed, ${
      over(entry.openP99, hop.openP99)
    } open)`;
  }
  if (path === "quickjs") return `≥ 0.3×: ${ratio >= 0.3 ? "met" : "missed"}`;
  if (path === "hop") return "a process boundary with nothing in it";
  return path === "host" ? "baseline" : "reported";
}

function printTable(
  runtime: Runtime,
  { figures, rate, load }: Measured,
) {
  const host = figures.get("host")!;
  console.log(
    `\n${runtime === "deno" ? "Deno" : "Node"} (load average ${load}):\n`,
  );
  console.log(
    `| tier | requests/s | p99 ms | vs host req/s | p99 − host p99 ms | p99 ms at ${rate} req/s (open loop, median second) | − host ms | errors | target |`,
  );
  console.log("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |");
  for (const [path, entry] of figures) {
    const rps = median(entry.rps);
    const p99 = median(entry.p99);
    const openP99 = median(entry.openP99);
    console.log(
      `| ${path} | ${rps.toFixed(0)} | ${p99.toFixed(0)} | ${
        (rps / median(host.rps)).toFixed(2)
      }× | ${(p99 - median(host.p99)).toFixed(0)} | ${openP99.toFixed(1)} | ${
        (openP99 - median(host.openP99)).toFixed(1)
      } | ${entry.bad + entry.openBad} | ${
        targetOf(path, entry, host, figures.get("hop"))
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

interface Settings {
  seconds: number;
  rounds: number;
  connections: number;
  /** The open loop's requests/s, or `undefined` for half the slowest path's. */
  rate: number | undefined;
}

async function main(): Promise<void> {
  const settings: Settings = {
    seconds: flag("seconds", 3),
    rounds: flag("rounds", 3),
    connections: flag("connections", 64),
    rate: Deno.args.includes("--rate") ? flag("rate", 1000) : undefined,
  };
  const { seconds, rounds, connections } = settings;
  console.log(
    `Plugin over HTTP: POST with a ${BODY.length}-byte JSON body, ${connections} connections, ${seconds} s per path × ${rounds} rounds (paths taking turns), median over rounds; the host plugin is the same handler in the host's thread. Then each path at one fixed rate in an open loop (requests start when due, timed from then; the load checks every millisecond what is due), ${
      seconds * rounds
    } rounds of 1 s (paths taking turns), median of the rounds' p99.`,
  );
  printTable("deno", await measure("deno", settings));
  const missing = await nodeMissing();
  if (missing === null) {
    printTable("node", await measure("node", settings));
  } else console.log(`\nNode figures skipped: ${missing}`);
}

if (Deno.args.includes("--serve")) await serve();
else await main();
