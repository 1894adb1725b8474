/**
 * Child processes that die with the host. A guest or plugin stuck in a loop
 * never notices on its own that the process that started it is gone, so on
 * Linux every child that runs guest code (the worker and process
 * sandboxes' children, the vm tier's realm processes) starts under
 * util-linux's `setpriv --pdeathsig KILL`: the kernel kills the child when
 * the thread that started it ends, which includes the host dying of
 * SIGKILL. `setpriv` executes the runtime in its own process, so the
 * child's pid is the runtime's. The rule holds on Deno and on Node.
 *
 * @module
 */

import { spawnSync } from "node:child_process";
import process from "node:process";

/** Where util-linux installs `setpriv`, which sets `PR_SET_PDEATHSIG`. */
export const SETPRIV = "/usr/bin/setpriv";

let setprivWorks: boolean | undefined;

/**
 * Whether children can start under `setpriv --pdeathsig KILL`: on Linux,
 * when this process may run `setpriv` (on Deno, asked without a prompt)
 * and that `setpriv` knows the option. Checked once per process, unless
 * the system could not start `setpriv` for now (no file descriptors or
 * processes left): that child starts without it, and the next asks again.
 */
function canUseSetpriv(): boolean {
  if (setprivWorks !== undefined) return setprivWorks;
  if (process.platform !== "linux") return setprivWorks = false;
  const deno = (globalThis as { Deno?: typeof Deno }).Deno;
  const query = deno?.permissions.querySync({ name: "run", command: SETPRIV });
  if (query !== undefined && query.state !== "granted") {
    return setprivWorks = false;
  }
  const answer = probeSetpriv();
  if (answer !== undefined) setprivWorks = answer;
  return answer ?? false;
}

/**
 * Whether `setpriv` knows `--pdeathsig`, or `undefined` when it did not
 * run for a reason a later try may not meet.
 */
function probeSetpriv(): boolean | undefined {
  // A setpriv older than the option refuses it; a newer one stops at
  // `--version` and sets nothing.
  try {
    const probe = spawnSync(SETPRIV, ["--pdeathsig", "KILL", "--version"], {
      stdio: "ignore",
      env: {},
    });
    if (probe.error !== undefined) return lastingRefusal(probe.error);
    // Neither a status nor an error: the system did not start it.
    return typeof probe.status === "number" ? probe.status === 0 : undefined;
  } catch (error) {
    // Not installed, or the runtime refused to start it.
    return lastingRefusal(error);
  }
}

/** `false` when `setpriv` is missing or may not run, else `undefined`. */
function lastingRefusal(error: unknown): false | undefined {
  const code = (error as { code?: unknown } | null)?.code;
  const transient = ["EMFILE", "ENFILE", "EAGAIN", "ENOMEM"].includes(
    String(code),
  );
  return transient ? undefined : false;
}

/**
 * The command and arguments that start `executable` with `args` so that it
 * dies with the thread that starts it: under `setpriv --pdeathsig KILL`
 * where that works, else `executable` itself (then only its closed stdin
 * tells it that its parent is gone). Deno and Node start a child from the
 * JavaScript thread that asks for it, so children started inside a worker
 * end with that worker.
 *
 * @example
 * ```ts
 * import { dyingWithParent } from "./parent_death.ts";
 * import assert from "node:assert/strict";
 *
 * const [command, args] = dyingWithParent(Deno.execPath(), ["--version"]);
 * const { success } = await new Deno.Command(command, { args }).output();
 * assert.ok(success);
 * ```
 *
 * @param executable The program to run.
 * @param args Its arguments.
 * @returns The command to spawn and its arguments.
 */
export function dyingWithParent(
  executable: string,
  args: readonly string[],
): [command: string, args: string[]] {
  return canUseSetpriv()
    ? [SETPRIV, ["--pdeathsig", "KILL", "--", executable, ...args]]
    : [executable, [...args]];
}
