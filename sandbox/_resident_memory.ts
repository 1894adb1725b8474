/**
 * Bounds a sandbox child by the memory it really holds. V8's heap limit
 * (`--max-old-space-size`) does not count `ArrayBuffer` contents, which
 * live outside the heap, so a guest that fills typed arrays would pass its
 * `memoryLimitBytes` by gigabytes and take the machine's memory until its
 * timeout. On Linux the host reads the child's resident memory from
 * `/proc` while a run is under way and ends a child that holds more than
 * the limit and a runtime's own share.
 *
 * @module
 */

import {
  RESIDENT_MARGIN_BYTES,
  RESIDENT_POLL_MS,
} from "../protocol/run_result.ts";

let procReadable: boolean | undefined;

/**
 * Whether this process may read `/proc` without a prompt (Linux, with read
 * permission for it). Checked once per process.
 */
function canReadProc(): boolean {
  if (procReadable !== undefined) return procReadable;
  procReadable = false;
  if (Deno.build.os !== "linux") return false;
  try {
    const { state } = Deno.permissions.querySync({
      name: "read",
      path: "/proc",
    });
    procReadable = state === "granted" &&
      residentBytes(Deno.pid) !== null;
  } catch {
    // No permission API answer: do not read.
  }
  return procReadable;
}

/** A process's resident memory in bytes, or `null` when it cannot be read. */
function residentBytes(pid: number): number | null {
  try {
    const status = Deno.readTextFileSync(`/proc/${pid}/status`);
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
 * @param pid The child's process id.
 * @param memoryLimitBytes The run's memory limit.
 * @param onOver Ends the child and answers `OUT_OF_MEMORY`.
 * @returns Stops the watch.
 */
export function watchResidentMemory(
  pid: number,
  memoryLimitBytes: number,
  onOver: () => void,
): () => void {
  if (!canReadProc()) return () => {};
  const bound = memoryLimitBytes + RESIDENT_MARGIN_BYTES;
  const timer = setInterval(() => {
    const resident = residentBytes(pid);
    if (resident !== null && resident > bound) {
      clearInterval(timer);
      onOver();
    }
  }, RESIDENT_POLL_MS);
  return () => clearInterval(timer);
}
