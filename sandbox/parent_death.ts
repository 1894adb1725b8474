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

import { helperCheck } from "./system_helper.ts";

/** Where util-linux installs `setpriv`, which sets `PR_SET_PDEATHSIG`. */
export const SETPRIV = "/usr/bin/setpriv";

/**
 * Whether children can start under `setpriv --pdeathsig KILL`: whether
 * this process may run `setpriv` and it knows the option. A setpriv older
 * than the option refuses it; a newer one stops at `--version` and sets
 * nothing.
 */
const canUseSetpriv = helperCheck(SETPRIV, [
  "--pdeathsig",
  "KILL",
  "--version",
]);

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
