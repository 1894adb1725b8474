/**
 * Bounds a child process by the memory it really holds. V8's heap limit
 * (`--max-old-space-size`) does not count `ArrayBuffer` contents, which
 * live outside the heap, so a guest that fills typed arrays would pass its
 * `memoryLimitBytes` by gigabytes and take the machine's memory until its
 * timeout. On Linux the host reads the child's resident memory from
 * `/proc` while it runs and ends a child that holds more than the limit
 * and a runtime's own share. The worker and process sandboxes and the vm
 * tier's realm processes share this watch, on Deno and on Node. It runs on
 * the caller's event loop, so a caller that blocks its loop delays it: the
 * worker tier's host and the process around a vm `worker` realm also hold
 * their own resident memory to {@linkcode residentBoundBytes} beside the
 * guest (see `_worker_host_main.ts` and `vm/_realm_main.ts`), and this watch
 * is their backstop.
 *
 * @module
 */

import { readFileSync } from "node:fs";
import {
  RESIDENT_MARGIN_BYTES,
  RESIDENT_POLL_MS,
} from "../protocol/run_result.ts";

let procReadable: boolean | undefined;

/**
 * Whether this process may read `/proc` (Linux, and on Deno a granted
 * read: a query, so that reading never prompts). Checked once per process.
 */
function canReadProc(): boolean {
  if (procReadable !== undefined) return procReadable;
  const deno = (globalThis as { Deno?: typeof Deno }).Deno;
  try {
    const query = deno?.permissions.querySync({ name: "read", path: "/proc" });
    procReadable = query?.state !== undefined && query.state !== "granted"
      ? false
      : readFileSync("/proc/self/status").byteLength > 0;
  } catch {
    // Not Linux, or no permission API answer: do not read.
    procReadable = false;
  }
  return procReadable;
}

/** A process's resident memory in bytes, or `null` when it cannot be read. */
function residentBytes(pid: number): number | null {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "latin1");
    const kib = /^VmRSS:\s*(\d+) kB$/m.exec(status)?.[1];
    return kib === undefined ? null : Number(kib) * 1024;
  } catch {
    return null;
  }
}

/**
 * Calls `onOver` once when the child `pid` holds more than
 * `memoryLimitBytes` plus `RESIDENT_MARGIN_BYTES`, reading it every
 * `RESIDENT_POLL_MS` ms until the returned function is called. Does
 * nothing where `/proc` cannot be read.
 *
 * @example
 * ```ts
 * import { watchResidentMemory } from "./resident_memory.ts";
 *
 * const child = new Deno.Command(Deno.execPath(), {
 *   args: ["eval", "await new Promise((r) => setTimeout(r, 50))"],
 * }).spawn();
 * const stop = watchResidentMemory(child.pid, 64 * 1024 * 1024, () => {
 *   child.kill("SIGKILL");
 * });
 * await child.status;
 * stop();
 * ```
 *
 * @param pid The child's process id.
 * @param memoryLimitBytes The run's memory limit.
 * @param onOver Ends the child and answers `OUT_OF_MEMORY`.
 * @returns Stops the watch; calling it again is harmless.
 */
export function watchResidentMemory(
  pid: number,
  memoryLimitBytes: number,
  onOver: () => void,
): () => void {
  const bound = residentBoundBytes(memoryLimitBytes);
  if (bound === null) return () => {};
  const timer = setInterval(() => {
    const resident = residentBytes(pid);
    if (resident !== null && resident > bound) {
      clearInterval(timer);
      onOver();
    }
  }, RESIDENT_POLL_MS);
  return () => clearInterval(timer);
}

/**
 * The resident memory a sandbox child may hold under `memoryLimitBytes`:
 * the limit plus `RESIDENT_MARGIN_BYTES`, or `null` where resident memory
 * is not bounded (`/proc` cannot be read).
 *
 * @example
 * ```ts
 * import { residentBoundBytes } from "./resident_memory.ts";
 * import assert from "node:assert/strict";
 *
 * const bound = residentBoundBytes(64 * 1024 * 1024);
 * assert.ok(bound === null || bound > 64 * 1024 * 1024);
 * ```
 *
 * @param memoryLimitBytes The run's memory limit.
 * @returns The bound in bytes, or `null`.
 */
export function residentBoundBytes(memoryLimitBytes: number): number | null {
  return canReadProc() ? memoryLimitBytes + RESIDENT_MARGIN_BYTES : null;
}

/**
 * The resident memory of the child `pid`, in bytes, read from `/proc`, or
 * `null` where it cannot be read (not Linux, no read permission for
 * `/proc`, or the process has ended).
 *
 * @example
 * ```ts
 * import { readResidentBytes } from "./resident_memory.ts";
 * import assert from "node:assert/strict";
 *
 * const bytes = readResidentBytes(Deno.pid);
 * assert.ok(bytes === null || bytes > 0);
 * ```
 *
 * @param pid The process id.
 * @returns Its resident bytes, or `null`.
 */
export function readResidentBytes(pid: number): number | null {
  return canReadProc() ? residentBytes(pid) : null;
}
