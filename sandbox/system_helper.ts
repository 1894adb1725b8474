/**
 * The util-linux programs a child starts under (`setpriv` for the
 * parent-death signal, `prlimit` for the CPU limit), each asked once per
 * process whether it works, and the errors of a system with no room for
 * another process, which say "later", not "never".
 *
 * @module
 */

import { spawnSync } from "node:child_process";
import process from "node:process";

/**
 * The codes of a system that has no room for another process: the same
 * spawn succeeds once descriptors, processes or memory are freed.
 */
export const SYSTEM_REFUSALS: ReadonlySet<string> = new Set([
  "EMFILE",
  "ENFILE",
  "EAGAIN",
  "ENOMEM",
]);

/**
 * Whether `error` is the system's refusal for now (see
 * {@linkcode SYSTEM_REFUSALS}), by its `code`.
 *
 * @example
 * ```ts
 * import { isSystemRefusal } from "./system_helper.ts";
 * import assert from "node:assert/strict";
 *
 * assert.equal(isSystemRefusal({ code: "EMFILE" }), true);
 * assert.equal(isSystemRefusal({ code: "ENOENT" }), false);
 * ```
 *
 * @param error What a spawn threw or reported.
 * @returns Whether a later try may succeed.
 */
export function isSystemRefusal(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === "string" && SYSTEM_REFUSALS.has(code);
}

/**
 * The message of a child the system refused to start for now (see
 * {@linkcode isSystemRefusal}), alike on every tier that starts one.
 *
 * @example
 * ```ts
 * import { systemRefusedMessage } from "./system_helper.ts";
 * import assert from "node:assert/strict";
 *
 * assert.match(
 *   systemRefusedMessage("process sandbox", "Deno", "EMFILE", "run again"),
 *   /^Cannot start the process sandbox: the system refused its Deno subprocess \(EMFILE\); .* and run again$/,
 * );
 * ```
 *
 * @param subject What could not start: `process sandbox`, `plugin's realm`.
 * @param runtime The runtime of the refused subprocess.
 * @param reason The system's reason, without host paths.
 * @param retry What the caller does once the system has room: `run again`.
 * @returns The message.
 */
export function systemRefusedMessage(
  subject: string,
  runtime: "Deno" | "Node",
  reason: string,
  retry: string,
): string {
  return `Cannot start the ${subject}: the system refused its ${runtime} subprocess (${reason}); free what the system lacks (file descriptors, processes, memory) and ${retry}`;
}

/**
 * A check of whether the helper program at `path` works: on Linux, when
 * this process may run it (on Deno, asked without a prompt) and
 * `path ...args` exits 0. The answer is kept for the life of the process,
 * unless the system could not start the helper for now: that check
 * answers `false`, and the next asks again, so one moment without
 * descriptors does not leave every later child without the helper.
 *
 * @example
 * ```ts
 * import { helperCheck } from "./system_helper.ts";
 * import assert from "node:assert/strict";
 *
 * const works = helperCheck("/no/such/helper", ["--version"]);
 * assert.equal(works(), false);
 * ```
 *
 * @param path The helper's absolute path.
 * @param args Arguments that make it exit 0 when it can do its work.
 * @returns The check.
 */
export function helperCheck(
  path: string,
  args: readonly string[],
): () => boolean {
  let works: boolean | undefined;
  return () => {
    if (works !== undefined) return works;
    const answer = mayRun(path) ? probe(path, args) : false;
    if (answer !== undefined) works = answer;
    return answer ?? false;
  };
}

/** Whether this process may run `path` at all. */
function mayRun(path: string): boolean {
  if (process.platform !== "linux") return false;
  const deno = (globalThis as { Deno?: typeof Deno }).Deno;
  const query = deno?.permissions.querySync({ name: "run", command: path });
  return query === undefined || query.state === "granted";
}

/**
 * Whether `path ...args` exits 0, or `undefined` when the system did not
 * start it for a reason a later try may not meet.
 */
function probe(path: string, args: readonly string[]): boolean | undefined {
  try {
    const run = spawnSync(path, [...args], { stdio: "ignore", env: {} });
    if (run.error !== undefined) {
      return isSystemRefusal(run.error) ? undefined : false;
    }
    // Neither a status nor an error: the system did not start it.
    return typeof run.status === "number" ? run.status === 0 : undefined;
  } catch (error) {
    // Not installed, or the runtime refused to start it.
    return isSystemRefusal(error) ? undefined : false;
  }
}
