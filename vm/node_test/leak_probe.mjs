// The leak probes' measures, on Deno and Node alike: a reading of what this
// process holds (open file descriptors, threads, living children, resident
// memory), the check that it is back to a baseline once everything is
// disposed, and the check of every answer a caller sees. The leak tests of
// loader/, sandbox/, vm/ and plugin/ use it, on both runtimes. This file is
// JavaScript so that Node runs it as is; it reads Linux's /proc.

import assert from "node:assert/strict";
import fs from "node:fs";
import process from "node:process";
import { fileURLToPath } from "node:url";

const MiB = 1024 * 1024;

/**
 * How much this process's resident memory may grow across the probe of a
 * tier, unless the test says otherwise: about three times the most it was
 * seen to grow. Measured on Linux (2 cores, no forced collection) after a
 * mix of about 50 runs or calls and 20 lifecycles: on Deno 2.9, -200 to
 * +20 MiB for every tier whose guests run in other processes; on Node 20,
 * +1 to +33 MiB for the pool (its runners are worker threads of this
 * process, each with a WebAssembly memory) and +2 to +21 MiB for the vm
 * and plugin tiers.
 */
export const RESIDENT_GROWTH_BOUND_BYTES = 96 * MiB;

/**
 * The name Deno gives the threads of its blocking pool (file reads,
 * process spawns), which it keeps for 10 s after their last task: they
 * come and go whatever a tier does. Node has no such threads.
 */
const BLOCKING_POOL_THREAD = "tokio-runtime-w";
/** Blocking pool threads this process may hold beyond its baseline. */
const BLOCKING_POOL_SLACK = 4;

/** Whether `/proc` can be read: Linux, where CI runs. */
export const HAS_PROC = fs.existsSync("/proc/self/task");

/** This process's children that have not ended. */
export function livingChildren() {
  const children = [];
  for (const name of fs.readdirSync("/proc")) {
    if (!/^[0-9]+$/.test(name)) continue;
    let stat;
    try {
      stat = fs.readFileSync(`/proc/${name}/stat`, "utf8");
    } catch {
      continue; // it ended while the folder was read
    }
    const [state, ppid] = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    // A zombie has ended; it only waits to be reaped.
    if (Number(ppid) === process.pid && state !== "Z") {
      children.push(Number(name));
    }
  }
  return children;
}

/** CPU time (user + system) this process has used, in clock ticks. */
function cpuTicks() {
  const stat = fs.readFileSync("/proc/self/stat", "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return Number(fields[11]) + Number(fields[12]);
}

/** The names of this process's threads. */
function threadNames() {
  const names = [];
  for (const task of fs.readdirSync("/proc/self/task")) {
    try {
      names.push(
        fs.readFileSync(`/proc/self/task/${task}/comm`, "utf8").trim(),
      );
    } catch {
      // It ended while the folder was read.
    }
  }
  return names;
}

/**
 * Checks that this process stays idle for one second: a guest left
 * computing on one of its threads (a terminated worker that loops on)
 * uses about 100 ticks. Returns the ticks used.
 */
async function assertIdle(where) {
  const before = cpuTicks();
  await new Promise((resolve) => setTimeout(resolve, 1000));
  const used = cpuTicks() - before;
  assert.ok(used < 40, `${where}: ${used} CPU ticks while idle`);
  return used;
}

/**
 * Checks, once everything a test made is disposed, that nothing it
 * started runs on: no child process (a killed one is given up to two
 * minutes to be reaped, which only a child left running uses up) and no
 * busy thread of this process.
 */
export async function assertNothingLeftRunning(where) {
  for (let i = 0; i < 6000 && livingChildren().length > 0; i++) {
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  assert.deepEqual(livingChildren(), [], `${where}: children left running`);
  await assertIdle(where);
}

/**
 * What this process holds now: open file descriptors, threads (and those
 * besides Deno's blocking pool: the main thread, the runtime's own, and
 * one per worker), children that have not ended, resident bytes.
 */
export function takeReading() {
  const status = fs.readFileSync("/proc/self/status", "utf8");
  const threads = threadNames();
  return {
    fds: fs.readdirSync("/proc/self/fd").length,
    threads: threads.length,
    ownThreads: threads.filter((name) => name !== BLOCKING_POOL_THREAD).length,
    children: livingChildren(),
    residentBytes: Number(/^VmRSS:\s*(\d+) kB$/m.exec(status)[1]) * 1024,
  };
}

/**
 * Checks that this process is back to `baseline`: the same open file
 * descriptors and children, no thread more but Deno's blocking pool's
 * (within a small slack), its resident memory grown by less than
 * `residentGrowthBytes`, and idle over one second (a guest left computing
 * on a thread of this process uses about 100 ticks). Returns a line that
 * gives both readings, for the test's output.
 */
export async function assertBackToBaseline(
  baseline,
  where,
  residentGrowthBytes = RESIDENT_GROWTH_BOUND_BYTES,
) {
  const after = takeReading();
  assert.deepEqual(after.children, [], `${where}: children left running`);
  assert.equal(after.fds, baseline.fds, `${where}: open file descriptors`);
  assert.ok(
    after.ownThreads <= baseline.ownThreads,
    `${where}: ${after.ownThreads} threads besides a blocking pool's, ${baseline.ownThreads} before`,
  );
  assert.ok(
    after.threads <= baseline.threads + BLOCKING_POOL_SLACK,
    `${where}: ${after.threads} threads, ${baseline.threads} before`,
  );
  const grown = after.residentBytes - baseline.residentBytes;
  assert.ok(
    grown < residentGrowthBytes,
    `${where}: resident memory grew by ${(grown / MiB).toFixed(1)} MiB`,
  );
  const used = await assertIdle(where);
  const mib = (bytes) => (bytes / MiB).toFixed(1);
  return `${where}: fds ${baseline.fds} -> ${after.fds}, threads ${baseline.threads} -> ${after.threads} (${baseline.ownThreads} -> ${after.ownThreads} besides a blocking pool), children ${baseline.children.length} -> ${after.children.length}, RSS ${
    mib(baseline.residentBytes)
  } -> ${mib(after.residentBytes)} MiB, ${used} ticks idle`;
}

/**
 * The codes of the registry: the Node build does not export it, so they
 * are read from its one home, the keys of ERROR_CODES.
 */
const CODES = new Set(
  [
    ...fs.readFileSync(
      new URL("../../protocol/error_codes.ts", import.meta.url),
      "utf8",
    ).matchAll(/\b([A-Z][A-Z0-9_]+): entry\(/g),
  ].map((match) => match[1]),
);

const ROOT = fileURLToPath(new URL("../../", import.meta.url));

/**
 * Checks one answer, given as `{ ok, value }` or `{ ok: false, error }`:
 * the one expected (`{ value }` or `{ code }`), a failure's code from the
 * registry, and no host path in its text.
 */
export function assertResult(result, expected, where) {
  if (!result.ok) {
    const { code, name, message } = result.error;
    assert.ok(CODES.has(code), `${where}: unknown code ${code}`);
    for (const needle of [ROOT, "file://", process.execPath]) {
      assert.ok(
        !`${name} ${message}`.includes(needle),
        `${where}: the answer carries ${needle}: ${message}`,
      );
    }
  }
  const got = result.ok ? { value: result.value } : { code: result.error.code };
  assert.deepEqual(
    got,
    expected,
    `${where}: ${JSON.stringify(result).slice(0, 300)}`,
  );
}

/** Calls `fn` with a signal aborted before (0) or `abortAfterMs` into it. */
export async function withSignal(abortAfterMs, fn) {
  const controller = new AbortController();
  let timer;
  if (abortAfterMs === 0) controller.abort();
  else if (abortAfterMs !== undefined) {
    timer = setTimeout(() => controller.abort(), abortAfterMs);
  }
  try {
    return await fn(controller.signal);
  } finally {
    clearTimeout(timer);
  }
}
