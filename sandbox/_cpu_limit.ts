/**
 * A CPU time limit the kernel holds for a process tier child. The caller's
 * timer ends a run at `timeoutMs`, but only when the caller's event loop
 * turns; a guest in `for (;;) {}` runs on its child's main thread, which
 * nothing in that child can stop. So on Linux each run's child also starts
 * under util-linux's `prlimit --cpu=SOFT:HARD`: past SOFT seconds of CPU
 * over all its threads the kernel sends SIGXCPU, which ends it, and past
 * HARD (a guest that listens for SIGXCPU) SIGKILL. `prlimit` executes the
 * runtime in its own process, so the child's pid is the runtime's.
 *
 * @module
 */

import { helperCheck } from "./system_helper.ts";

/** Where util-linux installs `prlimit`, which sets resource limits. */
export const PRLIMIT = "/usr/bin/prlimit";

/**
 * CPU seconds a child may use besides its run's `timeoutMs`: its start-up,
 * and V8's compiler and garbage collector threads, which count too.
 */
const STARTUP_CPU_SECONDS = 1;

/**
 * Whether children can start under `prlimit --cpu`: whether this process
 * may run `prlimit` and a limit can be set under the one this process has.
 * It executes itself: a caller whose own hard limit is lower than
 * unlimited is refused, as its children would be.
 */
const canUsePrlimit = helperCheck(PRLIMIT, [
  "--cpu=unlimited:unlimited",
  "--",
  PRLIMIT,
  "--version",
]);

/**
 * The soft CPU limit, in whole seconds, of a child whose run may take
 * `timeoutMs`: the deadline rounded up, twice over (V8's helper threads
 * can use a second core beside the guest), plus start-up. Generous on
 * purpose: the caller's timer is the precise limit, this one holds only
 * while the caller's event loop does not turn.
 *
 * @example
 * ```ts
 * import { cpuLimitSeconds } from "./_cpu_limit.ts";
 * import assert from "node:assert/strict";
 *
 * assert.equal(cpuLimitSeconds(500), 3);
 * ```
 *
 * @param timeoutMs The run's time limit.
 * @returns Seconds of CPU time.
 */
export function cpuLimitSeconds(timeoutMs: number): number {
  return 2 * Math.ceil(timeoutMs / 1000) + STARTUP_CPU_SECONDS;
}

/**
 * The command and arguments that start `executable` with `args` under a
 * CPU limit for a run of `timeoutMs` (see {@linkcode cpuLimitSeconds};
 * SIGKILL one second past it), or `null` where that cannot be done (not
 * Linux, no `prlimit`, or no permission to run it).
 *
 * @param executable The program to run.
 * @param args Its arguments.
 * @param timeoutMs The run's time limit.
 * @returns The command to spawn and its arguments, or `null`.
 */
export function withCpuLimit(
  executable: string,
  args: readonly string[],
  timeoutMs: number,
): [command: string, args: string[]] | null {
  if (!canUsePrlimit()) return null;
  const soft = cpuLimitSeconds(timeoutMs);
  return [PRLIMIT, [`--cpu=${soft}:${soft + 1}`, "--", executable, ...args]];
}
