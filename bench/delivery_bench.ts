/**
 * Delivery benchmark: the delivery route, served with the connection guard
 * (the default) and without it, against two bare `Deno.serve` servers that
 * return the same bytes from memory, side by side in one run, over real
 * sockets on 127.0.0.1. The first bare server (the ceiling on this
 * machine) sends only the headers HTTP requires of the same answers:
 * `Content-Type`, `ETag` and `Cache-Control` on its `200`, and the `ETag`
 * and `Cache-Control` a `304` must repeat (RFC 9110 §15.4.5), with the
 * delivery route's values. The second sends the same headers as the
 * delivery route, as cheaply as `Deno.serve` allows; see
 * `_delivery_bench_server.ts`. The target, server CPU per request ≤ 1.1×
 * the bare server's, is judged against the second: against the first, the
 * delivery route's own headers count against it too.
 *
 * The servers run in their own Deno process (`_delivery_bench_server.ts`);
 * this process is the load generator: autocannon, from npm
 * (`npm:autocannon`, installed by Deno on first run). Eight scenarios, each
 * several rounds in alternating order: the two bare 200s, the delivery
 * route 200 with and without the guard, and the same four for 304
 * (`If-None-Match`). Each round runs each group of four back to back (the
 * order reverses every other round), so each round gives one
 * delivery/bare ratio measured under the same load; the table reports
 * medians over rounds, and the ratio is the median of those paired
 * ratios. Per run it records requests/s, p99 latency and the server
 * process's CPU time per request (from `/proc`, Linux only).
 *
 * Then the delivery route 200 with the guard again, with and without
 * `--idle` idle connections held open to it (each sent a request line
 * and one header, never the end of its head, as a slow or hostile client
 * does), in alternating order: what such connections do to a real
 * request's p99 latency (target < 50 ms).
 *
 * With `--compare-v8-flags FLAGS` a second server process runs with those
 * V8 flags (such as `--max-semi-space-size=2`, which `deno task serve`
 * sets), and its delivery route joins each group, paired with the first
 * process's: what the flags cost a request, measured side by side.
 *
 * Run: `deno run -A bench/delivery_bench.ts [--rounds 8] [--seconds 3]
 * [--connections 32] [--idle 3000] [--pin] [--compare-v8-flags FLAGS]`.
 * `--pin` puts the servers on CPU 0 and the load generator on CPU 1 with
 * `taskset`.
 *
 * @module
 */

// deno-lint-ignore no-import-prefix -- bench only: kept out of deno.json so serve and run do not install it
import autocannon from "npm:autocannon@9.0.0";
import {
  clockTicksPerSecond,
  cpuTicks,
  loadAverage,
  median,
} from "./_measure.ts";
import { fileURLToPath } from "node:url";

/** One autocannon run, as far as this bench reads it. */
interface CannonResult {
  duration: number;
  requests: { total: number };
  latency: { p99: number; p50: number };
  errors: number;
  timeouts: number;
  statusCodeStats: Record<string, { count: number }>;
}

type Cannon = (options: {
  url: string;
  connections: number;
  duration: number;
  headers?: Record<string, string>;
}) => Promise<CannonResult>;

interface Scenario {
  name: string;
  url: string;
  headers: Record<string, string>;
  status: number;
  /** The bare server with the headers HTTP requires. */
  baseline?: string;
  /** The bare server with the delivery route's headers. */
  sameHeaders?: string;
  /** The server process that answers it. */
  pid: number;
}

/** What a bench server process prints once it listens. */
interface ServerInfo {
  deliveryUrl: string;
  unguardedUrl: string;
  bareUrl: string;
  bareSameUrl: string;
  etag: string;
  bytes: number;
}

/** A bench server process, listening. */
interface BenchServer extends AsyncDisposable {
  pid: number;
  info: ServerInfo;
}

/** Starts `_delivery_bench_server.ts` in a process of its own. */
async function startServer(
  pin: boolean,
  v8Flags: string | undefined,
): Promise<BenchServer> {
  const serverScript = fileURLToPath(
    new URL("./_delivery_bench_server.ts", import.meta.url),
  );
  const denoArgs = [
    "run",
    "--allow-read",
    "--allow-net=127.0.0.1",
    "--allow-env",
    ...(v8Flags === undefined ? [] : [`--v8-flags=${v8Flags}`]),
    serverScript,
  ];
  const child = new Deno.Command(pin ? "taskset" : Deno.execPath(), {
    args: pin ? ["-c", "0", Deno.execPath(), ...denoArgs] : denoArgs,
    cwd: new URL("../", import.meta.url),
    stdin: "null",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let firstLine = "";
  while (!firstLine.includes("\n")) {
    const { value, done } = await reader.read();
    if (done) throw new Error("The bench server ended before it listened");
    firstLine += value;
  }
  const drained = (async () => {
    while (!(await reader.read()).done) {
      // Discard the server's later output.
    }
  })();
  return {
    pid: child.pid,
    info: JSON.parse(firstLine.trim()),
    async [Symbol.asyncDispose]() {
      child.kill("SIGTERM");
      await child.status;
      await drained.catch(() => {});
    },
  };
}

/** One measured run of one scenario. */
export interface DeliveryBenchRun {
  /** The scenario. */
  scenario: string;
  /** Requests per second. */
  requestsPerSecond: number;
  /** 99th percentile latency, in milliseconds. */
  p99Ms: number;
  /** Server CPU time per request, in microseconds (NaN off Linux). */
  serverCpuMicrosPerRequest: number;
}

/** Connections that never finish their request head, held open. */
class IdleConnections implements AsyncDisposable {
  readonly #conns: Deno.Conn[];
  readonly #reads: Promise<void>[];
  #closedByServer = 0;

  private constructor(conns: Deno.Conn[]) {
    this.#conns = conns;
    // A pending read tells when the server closes a connection.
    this.#reads = conns.map((conn) =>
      conn.read(new Uint8Array(64)).then(
        (n) => {
          if (n === null) this.#closedByServer++;
        },
        () => {
          this.#closedByServer++;
        },
      )
    );
  }

  /** Opens up to `count`; stops at the first that fails. */
  static async open(url: string, count: number): Promise<IdleConnections> {
    const { hostname, port } = new URL(url);
    const head = new TextEncoder().encode(`GET / HTTP/1.1\r\nHost: x\r\n`);
    const conns: Deno.Conn[] = [];
    try {
      while (conns.length < count) {
        const conn = await Deno.connect({ hostname, port: Number(port) });
        conns.push(conn);
        await conn.write(head);
      }
    } catch {
      // Out of descriptors or refused: report how many opened.
    }
    return new IdleConnections(conns);
  }

  get opened(): number {
    return this.#conns.length;
  }

  get closedByServer(): number {
    return this.#closedByServer;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    for (const conn of this.#conns) {
      try {
        conn.close();
      } catch {
        // Already closed.
      }
    }
    await Promise.all(this.#reads);
  }
}

/** One run of the delivery route with some idle connections held open. */
interface IdleRun {
  idle: number;
  opened: number;
  closedByServer: number;
  run: DeliveryBenchRun;
}

function textFlag(name: string): string | undefined {
  const at = Deno.args.indexOf(`--${name}`);
  return at < 0 ? undefined : Deno.args[at + 1];
}

function flag(name: string, fallback: number): number {
  const at = Deno.args.indexOf(`--${name}`);
  if (at < 0) return fallback;
  const value = Number(Deno.args[at + 1]);
  if (!Number.isFinite(value) || value <= 0) {
    throw new RangeError(`--${name} must be a positive number`);
  }
  return value;
}

async function main(): Promise<void> {
  const rounds = flag("rounds", 8);
  const seconds = flag("seconds", 3);
  const connections = flag("connections", 32);
  const idle = flag("idle", 3000);
  const pin = Deno.args.includes("--pin");
  const cannon = autocannon as unknown as Cannon;
  const ticksPerSecond = await clockTicksPerSecond();

  const compareFlags = textFlag("compare-v8-flags");
  await using server = await startServer(pin, undefined);
  await using flagged = compareFlags === undefined
    ? undefined
    : await startServer(pin, compareFlags);
  if (pin) {
    await new Deno.Command("taskset", {
      args: ["-a", "-p", "-c", "1", String(Deno.pid)],
      stdout: "null",
    }).output();
  }
  const { info, pid } = server;

  const revalidate = { "if-none-match": info.etag };
  const groups: Scenario[][] = [200, 304].map((status) => {
    const headers = status === 304 ? revalidate : {};
    const bare = `bare ${status}`;
    const same = `bare ${status}, same headers`;
    return [
      { name: bare, url: info.bareUrl, headers, status, pid },
      {
        name: same,
        url: info.bareSameUrl,
        headers,
        status,
        baseline: bare,
        pid,
      },
      {
        name: `delivery ${status}`,
        url: info.deliveryUrl,
        headers,
        status,
        baseline: bare,
        sameHeaders: same,
        pid,
      },
      {
        name: `delivery ${status}, no guard`,
        url: info.unguardedUrl,
        headers,
        status,
        baseline: bare,
        sameHeaders: same,
        pid,
      },
      ...(flagged === undefined ? [] : [{
        name: `delivery ${status}, ${compareFlags}`,
        url: flagged.info.deliveryUrl,
        headers,
        status,
        baseline: `delivery ${status}`,
        pid: flagged.pid,
      }]),
    ];
  });
  const scenarios = groups.flat();
  const guarded200 = groups[0]![2]!;

  async function measure(
    scenario: Scenario,
    duration: number,
  ): Promise<DeliveryBenchRun> {
    const before = await cpuTicks(scenario.pid);
    const result = await cannon({
      url: scenario.url,
      connections,
      duration,
      headers: scenario.headers,
    });
    const after = await cpuTicks(scenario.pid);
    const statuses = Object.keys(result.statusCodeStats);
    if (
      result.errors > 0 || result.timeouts > 0 || statuses.length !== 1 ||
      statuses[0] !== String(scenario.status)
    ) {
      throw new Error(
        `${scenario.name}: expected only ${scenario.status}, got ${
          JSON.stringify(result.statusCodeStats)
        }, ${result.errors} errors, ${result.timeouts} timeouts`,
      );
    }
    const total = result.requests.total;
    return {
      scenario: scenario.name,
      requestsPerSecond: total / result.duration,
      p99Ms: result.latency.p99,
      serverCpuMicrosPerRequest: ((after - before) / ticksPerSecond) * 1e6 /
        total,
    };
  }

  const loadBefore = await loadAverage();
  // Warm up both servers (JIT, caches) before measuring.
  for (const scenario of scenarios) await measure(scenario, 2);
  const runs: DeliveryBenchRun[] = [];
  for (let round = 0; round < rounds; round++) {
    // Reverse the order within each group every other round.
    const order = groups.flatMap((group) =>
      round % 2 === 0 ? group : [...group].reverse()
    );
    for (const scenario of order) runs.push(await measure(scenario, seconds));
  }
  const idleRuns: IdleRun[] = [];
  for (let round = 0; round < rounds; round++) {
    for (const count of round % 2 === 0 ? [0, idle] : [idle, 0]) {
      await using held = await IdleConnections.open(info.deliveryUrl, count);
      const run = await measure(guarded200, seconds);
      idleRuns.push({
        idle: count,
        opened: held.opened,
        closedByServer: held.closedByServer,
        run,
      });
    }
    // Let the server see the idle connections close before the next run.
    await new Promise((resolve) => setTimeout(resolve, 300));
  }
  const loadAfter = await loadAverage();

  const byScenario = (name: string) => runs.filter((r) => r.scenario === name);
  const medians = new Map(scenarios.map((scenario) => {
    const mine = byScenario(scenario.name);
    const base = scenario.baseline ? byScenario(scenario.baseline) : mine;
    const same = scenario.sameHeaders
      ? byScenario(scenario.sameHeaders)
      : undefined;
    return [scenario.name, {
      rps: median(mine.map((r) => r.requestsPerSecond)),
      p99: median(mine.map((r) => r.p99Ms)),
      cpu: median(mine.map((r) => r.serverCpuMicrosPerRequest)),
      // Paired per round: both sides ran back to back under the same load.
      ratio: median(
        mine.map((r, i) => r.requestsPerSecond / base[i]!.requestsPerSecond),
      ),
      cpuRatio: median(
        mine.map((r, i) =>
          r.serverCpuMicrosPerRequest / base[i]!.serverCpuMicrosPerRequest
        ),
      ),
      sameCpuRatio: same === undefined ? NaN : median(
        mine.map((r, i) =>
          r.serverCpuMicrosPerRequest / same[i]!.serverCpuMicrosPerRequest
        ),
      ),
      perRound: mine.map((r) => Math.round(r.requestsPerSecond)),
    }];
  }));
  const fmt = (n: number, digits = 0) =>
    Number.isFinite(n)
      ? n.toLocaleString("en-US", {
        maximumFractionDigits: digits,
        minimumFractionDigits: digits,
      })
      : "n/a";

  const lines = [
    `Delivery route (with the connection guard, and without it) vs bare \`Deno.serve\` (same ${info.bytes}-byte module from memory; ` +
    `bare sends Content-Type, ETag and Cache-Control on 200, ETag and Cache-Control on 304; ` +
    `bare with the same headers sends the delivery route's headers, checked equal), ` +
    `autocannon ${connections} connections, ${rounds} rounds × ${seconds} s per scenario, ` +
    `each group back to back in alternating order; ${navigator.hardwareConcurrency} cores, Deno ${Deno.version.deno}, ` +
    `load average ${loadBefore} before / ${loadAfter} after${
      pin ? ", pinned" : ""
    }.`,
    "",
    "| scenario | req/s (median) | p99 ms (median) | server CPU µs/req (median) | req/s vs bare (median of paired ratios) | CPU/req vs bare | CPU/req vs bare with the same headers | req/s per round |",
    "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- |",
  ];
  const verdicts: string[] = [];
  for (const scenario of scenarios) {
    const m = medians.get(scenario.name)!;
    const paired = scenario.baseline !== undefined;
    // The flagged process's route is paired with the same route unflagged.
    const versus = scenario.baseline?.startsWith("bare") === false
      ? ` (vs ${scenario.baseline})`
      : "";
    lines.push(
      `| ${scenario.name} | ${fmt(m.rps)} | ${fmt(m.p99)} | ${
        fmt(m.cpu, 1)
      } | ${paired ? `${fmt(m.ratio, 2)}×${versus}` : "1.00× (ceiling)"} | ${
        paired ? `${fmt(m.cpuRatio, 2)}×${versus}` : "1.00×"
      } | ${
        Number.isFinite(m.sameCpuRatio) ? `${fmt(m.sameCpuRatio, 2)}×` : ""
      } | ${m.perRound.join(", ")} |`,
    );
    if (versus !== "") {
      verdicts.push(
        `- ${compareFlags} on delivery ${scenario.status}: ${
          fmt(m.ratio, 2)
        }× the req/s and ${
          fmt(m.cpuRatio, 2)
        }× the server CPU per request of the same route without them (medians of paired ratios)`,
      );
    } else if (scenario.sameHeaders !== undefined) {
      verdicts.push(
        `- ${scenario.name}: ${
          fmt(m.sameCpuRatio, 2)
        }× the server CPU per request of the bare server with the same headers (target ≤ 1.1×): ${
          m.sameCpuRatio <= 1.1 ? "met" : "NOT met"
        }; ${fmt(m.cpuRatio, 2)}× that of the bare ceiling`,
      );
      // The throughput targets are the delivery route's, against the ceiling.
      const target = scenario.status === 200 ? 0.8 : 0.9;
      verdicts.push(
        `- ${scenario.name}: ${
          fmt(m.ratio, 2)
        }× the bare ceiling (target ≥ ${target}×): ${
          m.ratio >= target ? "met" : "NOT met"
        }`,
      );
    }
  }
  for (const status of [200, 304]) {
    const guarded = byScenario(`delivery ${status}`);
    const bare = byScenario(`delivery ${status}, no guard`);
    const paired = (read: (run: DeliveryBenchRun) => number) =>
      median(guarded.map((r, i) => read(r) / read(bare[i]!)));
    verdicts.push(
      `- the connection guard's cost on delivery ${status}: ${
        fmt(paired((r) => r.requestsPerSecond), 2)
      }× the req/s and ${
        fmt(paired((r) => r.serverCpuMicrosPerRequest), 2)
      }× the server CPU per request without it (medians of paired ratios)`,
    );
  }
  const idleLines = [
    `Delivery route 200 (with the connection guard) with idle connections held open to it ` +
    `(each sent \`GET / HTTP/1.1\` and one header, never the end of its head), ` +
    `opened before each run and closed after it; autocannon ${connections} connections, ` +
    `${rounds} rounds × ${seconds} s each, alternating order.`,
    "",
    "| idle connections | opened (min) | closed by the server during the run (max) | req/s (median) | p99 ms (median) | p99 ms per round |",
    "| ---: | ---: | ---: | ---: | ---: | --- |",
  ];
  let idleP99 = NaN;
  for (const count of [0, idle]) {
    const mine = idleRuns.filter((r) => r.idle === count);
    const p99 = median(mine.map((r) => r.run.p99Ms));
    if (count === idle) idleP99 = p99;
    idleLines.push(
      `| ${fmt(count)} | ${fmt(Math.min(...mine.map((r) => r.opened)))} | ${
        fmt(Math.max(...mine.map((r) => r.closedByServer)))
      } | ${fmt(median(mine.map((r) => r.run.requestsPerSecond)))} | ${
        fmt(p99)
      } | ${mine.map((r) => r.run.p99Ms).join(", ")} |`,
    );
  }
  verdicts.push(
    `- delivery 200 p99 with ${fmt(idle)} idle connections: ${
      fmt(idleP99)
    } ms (target < 50 ms): ${idleP99 < 50 ? "met" : "NOT met"}`,
  );
  console.log([...lines, "", ...idleLines, "", ...verdicts].join("\n"));
}

if (import.meta.main) await main();
