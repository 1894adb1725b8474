/**
 * QuickJS pool benchmark, side by side in one process: the pool
 * (`createQuickJSPool`, each runner a Deno subprocess) against the
 * in-thread loader (`createQuickJSLoader`) it wraps.
 *
 * 1. Per-run latency of a trivial module and a module importing one
 *    declared pack, one run at a time, pool of 2 against the loader.
 * 2. Throughput of a CPU-bound guest at concurrency 1, 2 and 4 through a
 *    pool of 2, and at concurrency 4 through a pool of 4; the control runs
 *    the same guest on two in-thread loaders in two Web Workers, which
 *    shows how many cores the machine had to spare in the same rounds.
 * 3. The host's event-loop lag (a 10 ms interval) while guests that loop
 *    until their deadline and guests that exhaust their memory run, on
 *    the pool and on the loader, against an idle host and against two
 *    subprocesses that only spin (the cost of sharing the cores).
 * 4. How far past `timeoutMs` runaway guests are answered on a pool of 1,
 *    and how long after the deadline the pool runs again.
 * 5. Resident memory of the host and of the runner processes (`/proc`,
 *    Linux only) around runs that exhaust their memory limit.
 *
 * Rounds alternate which side goes first; a table reports the median per
 * round, and each ratio is the median of the per-round ratios, so a noisy
 * machine moves both sides together. Targets are checked against the
 * figures of the same run.
 *
 * Run: `deno run -A bench/pool_bench.ts [--rounds 7] [--runs 100]
 * [--rate-runs 24] [--lag-ms 1500] [--runaway 20] [--sum 200000]`.
 *
 * @module
 */

import { createDiskCatalog } from "../catalog/disk_catalog.ts";
import {
  createQuickJSLoader,
  type QuickJSRunOptions,
} from "../loader/quickjs_loader.ts";
import { createQuickJSPool, type QuickJSPool } from "../loader/quickjs_pool.ts";
import type { DeclarationInput, SandboxResult } from "../protocol/mod.ts";
import {
  clockTicksPerSecond,
  cpuTicks,
  flag,
  loadAverage,
  median,
} from "./_measure.ts";
import { fileURLToPath } from "node:url";

const ROUNDS = flag("rounds", 7);
const RUNS = flag("runs", 100);
const RATE_RUNS = flag("rate-runs", 24);
const LAG_MS = flag("lag-ms", 1500);
const RUNAWAY_RUNS = flag("runaway", 20);
const SUM_TO = flag("sum", 200_000);

const PACKS = fileURLToPath(new URL("../fixtures/packs/", import.meta.url));
const MB = 1024 * 1024;
const TICK_MS = 10;
const RUNAWAY_TIMEOUT_MS = 200;
const ALLOC_LIMIT_BYTES = 16 * MB;
const MEMORY_RUNS = 20;

/** What both sides have in common: the loader's `run()`. */
interface Runner {
  run(
    declaration: DeclarationInput,
    options?: QuickJSRunOptions,
  ): Promise<SandboxResult>;
}

interface Guest {
  label: string;
  declaration: DeclarationInput;
  options: QuickJSRunOptions;
  /** The value of a successful run, or the code of the expected failure. */
  expected: { value: unknown } | { code: string };
}

const TRIVIAL: Guest = {
  label: "trivial module",
  declaration: { source: "export default 1 + 1;" },
  options: {},
  expected: { value: 2 },
};
const IMPORTING: Guest = {
  label: "module importing `greet`",
  declaration: {
    source: 'import { greet } from "greet";\nexport default greet("Ada");',
    packages: ["greet"],
  },
  options: {},
  expected: { value: "Hello, Ada!" },
};
const SUMMING: Guest = {
  label: `sum of ${SUM_TO} numbers`,
  declaration: {
    source:
      `let sum = 0;\nfor (let i = 0; i < ${SUM_TO}; i++) sum += i;\nexport default sum;`,
  },
  options: {},
  expected: { value: (SUM_TO * (SUM_TO - 1)) / 2 },
};
const LOOPING: Guest = {
  label: "`for(;;){}`",
  declaration: { source: "for(;;){}" },
  options: { timeoutMs: RUNAWAY_TIMEOUT_MS },
  expected: { code: "TIMEOUT" },
};
const LONG_BUILTIN: Guest = {
  label: "one long built-in call (`indexOf` over 2e9)",
  declaration: {
    source: "export default Array.prototype.indexOf.call({ length: 2e9 }, 1);",
  },
  options: { timeoutMs: RUNAWAY_TIMEOUT_MS },
  expected: { code: "TIMEOUT" },
};
const PROMISE_CATCH: Guest = {
  label: "promise-catch loop",
  declaration: {
    source: "function spin() { for (;;) {} }\n" +
      "function again() { return Promise.resolve().then(spin).catch(again); }\n" +
      "export default () => again();",
  },
  options: { timeoutMs: RUNAWAY_TIMEOUT_MS },
  expected: { code: "TIMEOUT" },
};
const ALLOCATING: Guest = {
  label: "3000 strings of 100 kB",
  declaration: {
    source: "const a = [];\n" +
      'for (let i = 0; i < 3000; i++) a.push("x".repeat(1e5));\n' +
      "export default a.length;",
  },
  options: { memoryLimitBytes: ALLOC_LIMIT_BYTES },
  expected: { code: "OUT_OF_MEMORY" },
};

/** What a result was, in a word: `ok` or its failure code. */
function outcome(result: SandboxResult): string {
  return result.ok ? "ok" : result.error.code;
}

/** Whether a result is what the guest should give. */
function expected(guest: Guest, result: SandboxResult): boolean {
  if ("code" in guest.expected) return outcome(result) === guest.expected.code;
  return result.ok &&
    JSON.stringify(result.value) === JSON.stringify(guest.expected.value);
}

/** Results that were not what their guest should give, by outcome. */
class Surprises {
  readonly #seen = new Map<string, number>();

  note(where: string, guest: Guest, result: SandboxResult): void {
    if (expected(guest, result)) return;
    const key = `${where} / ${guest.label}: ${outcome(result)}`;
    this.#seen.set(key, (this.#seen.get(key) ?? 0) + 1);
  }

  get count(): number {
    let total = 0;
    for (const n of this.#seen.values()) total += n;
    return total;
  }

  describe(): string {
    return this.#seen.size === 0
      ? "none"
      : [...this.#seen].map(([key, n]) => `${key} ×${n}`).join("; ");
  }
}

/** The nearest-rank percentile `p` (0–100). */
function percentile(values: number[], p: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[rank - 1]!;
}

/** The order of `sides` for `round`: every other round reversed. */
function interleave<T>(sides: readonly T[], round: number): readonly T[] {
  return round % 2 === 0 ? sides : [...sides].reverse();
}

const us = (ms: number) => `${Math.round(ms * 1000)} µs`;
const ms = (value: number) => `${value.toFixed(1)} ms`;
const mb = (bytes: number) => `${(bytes / MB).toFixed(1)} MB`;
const times = (value: number) => `${value.toFixed(2)}×`;
const met = (ok: boolean) => ok ? "met" : "**not met**";

/** The pids of this process's children, or of those whose command has `marker`. */
async function childPids(marker?: string): Promise<number[]> {
  const pids: number[] = [];
  try {
    for await (const entry of Deno.readDir("/proc")) {
      if (!/^\d+$/.test(entry.name)) continue;
      try {
        const stat = await Deno.readTextFile(`/proc/${entry.name}/stat`);
        const ppid = Number(
          stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1],
        );
        if (ppid !== Deno.pid) continue;
        if (marker !== undefined) {
          const command = await Deno.readTextFile(
            `/proc/${entry.name}/cmdline`,
          );
          if (!command.includes(marker)) continue;
        }
        pids.push(Number(entry.name));
      } catch {
        // The process ended while it was read.
      }
    }
  } catch {
    // No /proc.
  }
  return pids.sort((a, b) => a - b);
}

const CLOCK_TICKS = await clockTicksPerSecond();

/** CPU ticks of this process and of each child, by pid. */
async function cpuNow(): Promise<Map<number, number>> {
  const pids = [Deno.pid, ...await childPids()];
  const ticks = await Promise.all(pids.map(cpuTicks));
  return new Map(pids.map((pid, i) => [pid, ticks[i]!]));
}

/** Cores kept busy between two `cpuNow()` readings `wallMs` apart. */
function coresUsed(
  before: Map<number, number>,
  after: Map<number, number>,
  wallMs: number,
): number {
  let ticks = 0;
  for (const [pid, now] of after) ticks += now - (before.get(pid) ?? now);
  return ticks / CLOCK_TICKS / (wallMs / 1000);
}

/**
 * Samples `cpuNow()` every 100 ms until stopped, so children that end
 * meanwhile (replaced runners) still count, up to their last sample.
 * Children that start meanwhile count from zero. Resolves once the first
 * sample is taken.
 */
async function cpuMeter(): Promise<{ stop(): Promise<number> }> {
  const first = await cpuNow();
  const start = performance.now();
  const last = new Map<number, number>(first);
  const sample = async () => {
    for (const [pid, ticks] of await cpuNow()) last.set(pid, ticks);
  };
  let pending = Promise.resolve();
  const timer = setInterval(() => {
    pending = pending.then(sample);
  }, 100);
  return {
    async stop() {
      clearInterval(timer);
      await pending.then(sample);
      const wallMs = performance.now() - start;
      for (const pid of last.keys()) if (!first.has(pid)) first.set(pid, 0);
      return coresUsed(first, last, wallMs);
    },
  };
}

/**
 * In-thread loaders in Web Workers of this process, one run per worker at
 * a time: the control for parallel runs without subprocesses or pipes.
 */
async function workerLoaders(size: number): Promise<Runner & Disposable> {
  const url = new URL("./_pool_loader_worker.ts", import.meta.url);
  const workers = Array.from(
    { length: size },
    () => new Worker(url, { type: "module" }),
  );
  await Promise.all(workers.map((worker) =>
    new Promise<void>((resolve) => {
      worker.onmessage = () => resolve();
    })
  ));
  const idle = [...workers];
  const waiting: ((worker: Worker) => void)[] = [];
  return {
    async run(declaration) {
      const worker = idle.pop() ??
        await new Promise<Worker>((resolve) => waiting.push(resolve));
      try {
        return await new Promise<SandboxResult>((resolve) => {
          worker.onmessage = (event) => resolve(event.data);
          worker.postMessage({ source: declaration.source });
        });
      } finally {
        const next = waiting.shift();
        if (next === undefined) idle.push(worker);
        else next(worker);
      }
    },
    [Symbol.dispose]() {
      for (const worker of workers) worker.terminate();
    },
  };
}

// ---------------------------------------------------------------------------
// 1. Per-run latency.

async function perRunMs(
  runner: Runner,
  guest: Guest,
  runs: number,
  surprises: Surprises,
  where: string,
): Promise<number> {
  const start = performance.now();
  for (let i = 0; i < runs; i++) {
    surprises.note(
      where,
      guest,
      await runner.run(guest.declaration, guest.options),
    );
  }
  return (performance.now() - start) / runs;
}

/**
 * Runs of each guest on each side before the rounds that count. The pool's
 * runners are processes of their own, each taking half the runs, whose
 * JIT and engine warm up over their first few hundred: after 30 runs the
 * trivial guest took 368 µs a run and the guest importing `greet`, run
 * after it, 264 µs; after 500, 241 and 249 µs. Both sides get the same.
 */
const WARM_UP_RUNS = 500;

async function latency(
  pool: QuickJSPool,
  loader: Runner,
  surprises: Surprises,
): Promise<string[]> {
  const sides: [string, Runner][] = [["pool", pool], ["in-thread", loader]];
  const lines = [
    `### Per-run latency, one run at a time (pool of 2 against the in-thread loader; ${WARM_UP_RUNS} runs of each guest on each side first, then ${ROUNDS} rounds × ${RUNS} runs)`,
    "",
    "| guest | pool | in-thread | pool / in-thread | pool − in-thread | target: pool ≤ 1.5 × in-thread + 0.2 ms |",
    "| --- | ---: | ---: | ---: | ---: | --- |",
  ];
  for (const guest of [TRIVIAL, IMPORTING]) {
    for (const [name, runner] of sides) {
      await perRunMs(runner, guest, WARM_UP_RUNS, surprises, name);
    }
    const perRound: Record<string, number[]> = { pool: [], "in-thread": [] };
    const ratios: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const took: Record<string, number> = {};
      for (const [name, runner] of interleave(sides, round)) {
        took[name] = await perRunMs(runner, guest, RUNS, surprises, name);
        perRound[name]!.push(took[name]!);
      }
      ratios.push(took.pool! / took["in-thread"]!);
    }
    const pooled = median(perRound.pool!);
    const inThread = median(perRound["in-thread"]!);
    const bound = 1.5 * inThread + 0.2;
    lines.push(
      `| ${guest.label} | ${us(pooled)} | ${us(inThread)} | ${
        times(median(ratios))
      } | ${us(pooled - inThread)} | ${met(pooled <= bound)} (bound ${
        us(bound)
      }) |`,
    );
  }
  return lines;
}

// ---------------------------------------------------------------------------
// 2. Throughput.

/** Runs `total` runs of `guest` from `concurrency` callers; returns runs/s. */
async function runsPerSecond(
  runner: Runner,
  guest: Guest,
  concurrency: number,
  total: number,
  surprises: Surprises,
  where: string,
): Promise<number> {
  let next = 0;
  const caller = async () => {
    while (next++ < total) {
      surprises.note(
        where,
        guest,
        await runner.run(guest.declaration, guest.options),
      );
    }
  };
  const start = performance.now();
  await Promise.all(Array.from({ length: concurrency }, caller));
  return total / ((performance.now() - start) / 1000);
}

async function throughput(
  pool: QuickJSPool,
  loader: Runner,
  surprises: Surprises,
): Promise<string[]> {
  await using pool4 = await createQuickJSPool({
    catalog: await createDiskCatalog(PACKS),
    size: 4,
  });
  using workers = await workerLoaders(2);
  const sides: { name: string; runner: Runner; concurrency: number }[] = [
    { name: "in-thread loader, concurrency 1", runner: loader, concurrency: 1 },
    { name: "pool of 2, concurrency 1", runner: pool, concurrency: 1 },
    { name: "pool of 2, concurrency 2", runner: pool, concurrency: 2 },
    { name: "pool of 2, concurrency 4", runner: pool, concurrency: 4 },
    { name: "pool of 4, concurrency 4", runner: pool4, concurrency: 4 },
    {
      name: "control: 2 loaders in 2 Workers, concurrency 1",
      runner: workers,
      concurrency: 1,
    },
    {
      name: "control: 2 loaders in 2 Workers, concurrency 2",
      runner: workers,
      concurrency: 2,
    },
  ];
  for (const side of sides) {
    await runsPerSecond(
      side.runner,
      SUMMING,
      side.concurrency,
      side.concurrency * 3,
      surprises,
      side.name,
    );
  }
  const rates: Record<string, number[]> = {};
  const ratios: Record<string, number[]> = {};
  const cores: Record<string, number[]> = {};
  for (let round = 0; round < ROUNDS; round++) {
    const rate: Record<string, number> = {};
    for (const side of interleave(sides, round)) {
      const before = await cpuNow();
      const start = performance.now();
      rate[side.name] = await runsPerSecond(
        side.runner,
        SUMMING,
        side.concurrency,
        RATE_RUNS,
        surprises,
        side.name,
      );
      const wallMs = performance.now() - start;
      (cores[side.name] ??= []).push(
        coresUsed(before, await cpuNow(), wallMs),
      );
      (rates[side.name] ??= []).push(rate[side.name]!);
    }
    for (const side of sides) {
      const base = side.name.startsWith("control")
        ? "control: 2 loaders in 2 Workers, concurrency 1"
        : "pool of 2, concurrency 1";
      (ratios[side.name] ??= []).push(rate[side.name]! / rate[base]!);
    }
  }
  const lines = [
    `### Throughput of a CPU-bound guest (${SUMMING.label}; ${ROUNDS} rounds × ${RATE_RUNS} runs per side; ${navigator.hardwareConcurrency} CPUs)`,
    "",
    "| side | runs/s | ms per run | ÷ its concurrency 1 (pool of 2, or control) | CPU cores used (this process + children) |",
    "| --- | ---: | ---: | ---: | ---: |",
  ];
  for (const side of sides) {
    const rate = median(rates[side.name]!);
    lines.push(
      `| ${side.name} | ${rate.toFixed(1)} | ${ms(1000 / rate)} | ${
        times(median(ratios[side.name]!))
      } | ${median(cores[side.name]!).toFixed(2)} |`,
    );
  }
  const scaling = median(ratios["pool of 2, concurrency 2"]!);
  const control = median(
    ratios["control: 2 loaders in 2 Workers, concurrency 2"]!,
  );
  lines.push(
    "",
    `Concurrency 2 ÷ concurrency 1 on the pool of 2: ${
      times(scaling)
    } (target ≥ 1.70×: ${
      met(scaling >= 1.7)
    }); the control, the same runs on two Worker threads, scaled ${
      times(control)
    } in the same rounds, so the machine gave about ${
      control.toFixed(1)
    } cores to spare.`,
  );
  return lines;
}

// ---------------------------------------------------------------------------
// 3. Event-loop lag.

/** Samples how late a 10 ms interval fires, until stopped. */
function lagSampler(): { stop(): { lags: number[]; elapsedMs: number } } {
  const lags: number[] = [];
  const start = performance.now();
  let last = start;
  const timer = setInterval(() => {
    const now = performance.now();
    lags.push(Math.max(0, now - last - TICK_MS));
    last = now;
  }, TICK_MS);
  return {
    stop() {
      clearInterval(timer);
      return { lags, elapsedMs: performance.now() - start };
    },
  };
}

/** Starts `count` subprocesses that only spin, for a control; kill them after. */
function spinners(count: number): Deno.ChildProcess[] {
  return Array.from({ length: count }, () =>
    new Deno.Command(Deno.execPath(), {
      args: ["eval", "for (;;) {}"],
      stdin: "null",
      stdout: "null",
      stderr: "null",
    }).spawn());
}

/**
 * Keeps two callers busy for `durationMs`, each alternating a looping and
 * an allocating guest, then waits for the runs in flight.
 */
async function churn(
  runner: Runner | null,
  durationMs: number,
  surprises: Surprises,
  where: string,
): Promise<number> {
  if (runner === null) {
    await new Promise((resolve) => setTimeout(resolve, durationMs));
    return 0;
  }
  const end = performance.now() + durationMs;
  let runs = 0;
  const caller = async (first: number) => {
    for (let i = first; performance.now() < end; i++) {
      const guest = i % 2 === 0 ? LOOPING : ALLOCATING;
      surprises.note(
        where,
        guest,
        await runner.run(guest.declaration, guest.options),
      );
      runs++;
    }
  };
  await Promise.all([caller(0), caller(1)]);
  return runs;
}

async function eventLoopLag(
  pool: QuickJSPool,
  loader: Runner,
  surprises: Surprises,
): Promise<string[]> {
  const rounds = Math.max(2, Math.ceil(ROUNDS / 2));
  const sides: { name: string; runner: Runner | null; spin: number }[] = [
    { name: "idle host (no runs)", runner: null, spin: 0 },
    {
      name: 'control: no runs, two `deno eval "for(;;){}"` subprocesses',
      runner: null,
      spin: 2,
    },
    { name: "pool of 2", runner: pool, spin: 0 },
    { name: "in-thread loader", runner: loader, spin: 0 },
  ];
  const samples: Record<string, number[]> = {};
  const fired: Record<string, number> = {};
  const expectedTicks: Record<string, number> = {};
  const runs: Record<string, number> = {};
  const cores: Record<string, number[]> = {};
  const replaced: Record<string, number> = {};
  for (let round = 0; round < rounds; round++) {
    for (const { name, runner, spin } of interleave(sides, round)) {
      const spinning = spinners(spin);
      const meter = await cpuMeter();
      const sampler = lagSampler();
      const replacedBefore = pool.replacements;
      runs[name] = (runs[name] ?? 0) +
        await churn(runner, LAG_MS, surprises, name);
      const { lags, elapsedMs } = sampler.stop();
      (cores[name] ??= []).push(await meter.stop());
      replaced[name] = (replaced[name] ?? 0) + pool.replacements -
        replacedBefore;
      for (const child of spinning) child.kill("SIGKILL");
      await Promise.all(spinning.map((child) => child.status));
      (samples[name] ??= []).push(...lags);
      fired[name] = (fired[name] ?? 0) + lags.length;
      expectedTicks[name] = (expectedTicks[name] ?? 0) +
        Math.floor(elapsedMs / TICK_MS);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
  const lines = [
    `### Host event-loop lag of a ${TICK_MS} ms interval (${rounds} rounds × ${LAG_MS} ms per side; two callers alternating ${LOOPING.label} with timeoutMs ${RUNAWAY_TIMEOUT_MS} and ${ALLOCATING.label} with memoryLimitBytes 16 MiB)`,
    "",
    "| side | runs | pool runners replaced | ticks fired / due | lag p50 | lag p99 | lag max | target p99 < 20 ms | CPU cores used (this process + children) |",
    "| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | ---: |",
  ];
  for (const { name } of sides) {
    const lags = samples[name]!;
    const p99 = percentile(lags, 99);
    lines.push(
      `| ${name} | ${runs[name]} | ${
        name === "pool of 2" ? replaced[name] : ""
      } | ${fired[name]} / ${expectedTicks[name]} | ${
        ms(percentile(lags, 50))
      } | ${ms(p99)} | ${ms(Math.max(...lags))} | ${
        name === "pool of 2" ? met(p99 < 20) : ""
      } | ${median(cores[name]!).toFixed(2)} |`,
    );
  }
  return lines;
}

// ---------------------------------------------------------------------------
// 4. Deadline overshoot and replacement.

async function deadlines(surprises: Surprises): Promise<string[]> {
  await using pool = await createQuickJSPool({
    catalog: await createDiskCatalog(PACKS),
    size: 1,
  });
  const guests = [LOOPING, LONG_BUILTIN, PROMISE_CATCH];
  const overshoot: Record<string, number[]> = {};
  const readyAgain: Record<string, number[]> = {};
  const killed: Record<string, number> = {};
  for (let i = 0; i < RUNAWAY_RUNS; i++) {
    for (const guest of interleave(guests, i)) {
      const before = pool.replacements;
      const start = performance.now();
      const result = await pool.run(guest.declaration, guest.options);
      const answered = performance.now();
      surprises.note("pool of 1", guest, result);
      // The next run waits for the runner, or its replacement, to be ready.
      surprises.note("pool of 1", TRIVIAL, await pool.run(TRIVIAL.declaration));
      const deadline = start + RUNAWAY_TIMEOUT_MS;
      (overshoot[guest.label] ??= []).push(answered - deadline);
      (readyAgain[guest.label] ??= []).push(performance.now() - deadline);
      killed[guest.label] = (killed[guest.label] ?? 0) +
        (pool.replacements - before);
    }
  }
  // A run queued behind a killed run, with a deadline shorter than a
  // runner's start: whether it still gets to run.
  const queued: Record<string, number> = {};
  const queuedBefore = pool.replacements;
  for (let i = 0; i < 3; i++) {
    await pool.run(LONG_BUILTIN.declaration, LONG_BUILTIN.options);
    const result = await pool.run(TRIVIAL.declaration, { timeoutMs: 100 });
    queued[outcome(result)] = (queued[outcome(result)] ?? 0) + 1;
  }
  const queuedKills = pool.replacements - queuedBefore - 3;
  const lines = [
    `### Deadline overshoot of runaway guests (pool of 1, timeoutMs ${RUNAWAY_TIMEOUT_MS}, ${RUNAWAY_RUNS} runs each, kinds interleaved)`,
    "",
    "Overshoot: the result's arrival − (start + timeoutMs). Ready again: from the deadline until a trivial run, sent right after the result, completes.",
    "",
    "| runaway guest | runner killed | overshoot p50 | overshoot p99 | overshoot max | target p99 ≤ 100 ms | ready again p50 | ready again p99 |",
    "| --- | ---: | ---: | ---: | ---: | --- | ---: | ---: |",
  ];
  for (const guest of guests) {
    const over = overshoot[guest.label]!;
    const ready = readyAgain[guest.label]!;
    lines.push(
      `| ${guest.label} | ${killed[guest.label]} / ${RUNAWAY_RUNS} | ${
        ms(percentile(over, 50))
      } | ${ms(percentile(over, 99))} | ${ms(Math.max(...over))} | ${
        met(percentile(over, 99) <= 100)
      } | ${ms(percentile(ready, 50))} | ${ms(percentile(ready, 99))} |`,
    );
  }
  lines.push(
    "",
    `A trivial run with timeoutMs 100 sent right after a killed run, 3 times: ${
      Object.entries(queued).map(([code, n]) => `${code} ×${n}`).join(", ")
    }; runners killed for it: ${queuedKills}.`,
  );
  return lines;
}

// ---------------------------------------------------------------------------
// 5. Memory.

async function residentBytes(pid: number): Promise<number> {
  try {
    const status = await Deno.readTextFile(`/proc/${pid}/status`);
    const match = status.match(/VmRSS:\s+(\d+) kB/);
    return match === null ? 0 : Number(match[1]) * 1024;
  } catch {
    return 0;
  }
}

interface MemorySnapshot {
  host: number;
  runners: number;
  pids: number[];
}

async function snapshot(pool: QuickJSPool): Promise<MemorySnapshot> {
  // One trivial run per runner, at once: every runner is up and idle.
  await Promise.all(
    Array.from({ length: pool.size }, () => pool.run(TRIVIAL.declaration)),
  );
  await new Promise((resolve) => setTimeout(resolve, 100));
  const pids = await childPids("quickjs_runner");
  let runners = 0;
  for (const pid of pids) runners += await residentBytes(pid);
  return { host: Deno.memoryUsage().rss, runners, pids };
}

async function memory(surprises: Surprises): Promise<string[]> {
  await using pool = await createQuickJSPool({
    catalog: await createDiskCatalog(PACKS),
    size: 2,
  });
  for (let i = 0; i < 10; i++) await pool.run(IMPORTING.declaration);
  const before = await snapshot(pool);
  const replacedBefore = pool.replacements;
  const outcomes: Record<string, number> = {};
  let next = 0;
  const caller = async () => {
    while (next++ < MEMORY_RUNS) {
      const result = await pool.run(ALLOCATING.declaration, ALLOCATING.options);
      surprises.note("pool of 2", ALLOCATING, result);
      outcomes[outcome(result)] = (outcomes[outcome(result)] ?? 0) + 1;
    }
  };
  await Promise.all([caller(), caller()]);
  const replaced = pool.replacements - replacedBefore;
  const after = await snapshot(pool);
  const growth = after.host + after.runners - before.host - before.runners;
  const bound = ALLOC_LIMIT_BYTES * pool.size + 64 * MB;
  const found = before.pids.length > 0;
  return [
    `### Resident memory around ${MEMORY_RUNS} runs of ${ALLOCATING.label} (memoryLimitBytes 16 MiB, pool of 2, two callers)`,
    "",
    "| | before | after | growth |",
    "| --- | ---: | ---: | ---: |",
    `| host (Deno.memoryUsage().rss) | ${mb(before.host)} | ${
      mb(after.host)
    } | ${mb(after.host - before.host)} |`,
    `| runner processes (VmRSS, ${before.pids.length} → ${after.pids.length} found) | ${
      found ? mb(before.runners) : "n/a"
    } | ${found ? mb(after.runners) : "n/a"} | ${
      found ? mb(after.runners - before.runners) : "n/a"
    } |`,
    `| host + runners | ${mb(before.host + before.runners)} | ${
      mb(after.host + after.runners)
    } | ${mb(growth)} |`,
    "",
    `Results: ${
      Object.entries(outcomes).map(([code, n]) => `${code} ×${n}`).join(", ")
    }; runners replaced meanwhile: ${replaced} (a replaced runner starts afresh, so its RSS drops). Target growth ≤ 16 MiB × 2 + 64 MB = ${
      mb(bound)
    }: ${met(growth <= bound)}.`,
  ];
}

// ---------------------------------------------------------------------------

const surprises = new Surprises();
const started = performance.now();
console.log(
  `Deno ${Deno.version.deno}, V8 ${Deno.version.v8}, ${navigator.hardwareConcurrency} CPUs, load average ${await loadAverage()}.\n`,
);
{
  const catalog = await createDiskCatalog(PACKS);
  await using pool = await createQuickJSPool({ catalog, size: 2 });
  using loader = await createQuickJSLoader({ catalog });
  console.log((await latency(pool, loader, surprises)).join("\n") + "\n");
  console.log((await throughput(pool, loader, surprises)).join("\n") + "\n");
  console.log((await eventLoopLag(pool, loader, surprises)).join("\n") + "\n");
}
console.log((await deadlines(surprises)).join("\n") + "\n");
console.log((await memory(surprises)).join("\n") + "\n");
console.log(
  `Unexpected results: ${surprises.describe()}. Whole benchmark: ${
    ((performance.now() - started) / 1000).toFixed(0)
  } s, load average ${await loadAverage()}.`,
);
