/**
 * Test helpers that read Linux `/proc` to measure the CPU time of the
 * processes a sandbox started. Used by tests only; it holds no tests, and
 * its `_test.ts` name keeps it out of the published package.
 *
 * @module
 */

import { readResidentBytes } from "./resident_memory.ts";

/** The pids whose parent is `parent`. */
export function childPids(parent: number = Deno.pid): number[] {
  const pids: number[] = [];
  for (const entry of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    const fields = statFields(Number(entry.name));
    if (fields !== undefined && Number(fields[1]) === parent) {
      pids.push(Number(entry.name));
    }
  }
  return pids;
}

/**
 * The fields of `/proc/<pid>/stat` after the command name, or `undefined`
 * when the process is gone.
 */
function statFields(pid: number): string[] | undefined {
  try {
    const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  } catch {
    return undefined;
  }
}

/**
 * User plus system CPU time of a process in clock ticks (1/100 s on
 * Linux), or 0 when it is gone or a zombie.
 */
export function cpuTicks(pid: number): number {
  const fields = statFields(pid);
  if (fields === undefined || fields[0] === "Z") return 0;
  return Number(fields[11]) + Number(fields[12]);
}

/** Whether a process exists and is not a zombie. */
export function isRunning(pid: number): boolean {
  const fields = statFields(pid);
  return fields !== undefined && fields[0] !== "Z";
}

/**
 * CPU ticks the given processes and the current children of this process
 * use during `ms` milliseconds.
 */
export async function ticksDuring(
  pids: readonly number[],
  ms: number,
): Promise<number> {
  const watched = new Set([...pids, ...childPids()]);
  const before = new Map([...watched].map((pid) => [pid, cpuTicks(pid)]));
  await new Promise((resolve) => setTimeout(resolve, ms));
  for (const pid of childPids()) watched.add(pid);
  let used = 0;
  for (const pid of watched) {
    used += Math.max(0, cpuTicks(pid) - (before.get(pid) ?? 0));
  }
  return used;
}

/**
 * CPU ticks the given processes and the children of this process use
 * until `work` settles: a measure that spans a whole run, however long a
 * loaded machine makes its start. It looks every 20 ms, so a process that
 * ends with the run still counts the ticks it was last seen with.
 */
export async function ticksUntil(
  pids: readonly number[],
  work: Promise<unknown>,
): Promise<number> {
  const watched = new Set([...pids, ...childPids()]);
  const before = new Map([...watched].map((pid) => [pid, cpuTicks(pid)]));
  const last = new Map(before);
  let settled = false;
  work.then(() => settled = true, () => settled = true);
  while (!settled) {
    for (const pid of childPids()) watched.add(pid);
    for (const pid of watched) {
      const ticks = cpuTicks(pid);
      if (ticks > 0) last.set(pid, ticks);
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  let used = 0;
  for (const [pid, ticks] of last) {
    used += Math.max(0, ticks - (before.get(pid) ?? 0));
  }
  return used;
}

/**
 * The children of this process that are not in `before`, once there is at
 * least one; fails after `ms` when none has started. A child's start takes
 * as long as the machine's load makes it, so tests wait for it rather than
 * for a fixed time.
 */
export async function newChildren(
  before: ReadonlySet<number>,
  ms: number,
): Promise<number[]> {
  const deadline = Date.now() + ms;
  for (;;) {
    const started = childPids().filter((pid) => !before.has(pid));
    if (started.length > 0) return started;
    if (Date.now() >= deadline) {
      throw new Error(`No child process started within ${ms} ms`);
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/**
 * Blocks this thread, as a caller busy with synchronous work does, until
 * `pid` has ended or `ms` have passed, reading its resident memory every
 * 20 ms; nothing of this process's event loop runs meanwhile. The thread
 * sleeps between reads rather than spinning.
 *
 * @returns The most the process held resident while it was watched, in
 * bytes, and whether it ended within `ms`.
 */
export function blockWhileRunning(
  pid: number,
  ms: number,
): { peakBytes: number; ended: boolean } {
  const sleeper = new Int32Array(new SharedArrayBuffer(4));
  const deadline = Date.now() + ms;
  let peakBytes = 0;
  while (Date.now() < deadline) {
    const bytes = readResidentBytes(pid);
    if (bytes === null || !isRunning(pid)) {
      return { peakBytes, ended: true };
    }
    peakBytes = Math.max(peakBytes, bytes);
    Atomics.wait(sleeper, 0, 0, 20);
  }
  return { peakBytes, ended: false };
}
