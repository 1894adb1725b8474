// This module is browser compatible.

/**
 * What a browser says of its network. A request that fails without an
 * answer tells a page only "Failed to fetch" (a Web Worker's script that
 * did not load, not even that), whether the browser is offline, its server
 * is down or a policy refused it; so where `navigator.onLine` is false the
 * remote and staged catalogs and the pool's Web Worker runners say that
 * first, and a page that went offline does not read that its server is
 * down. The other causes follow: a server on the same machine may still
 * answer an offline browser, and Deno and Node do not report it.
 *
 * @module
 */

/** What a failure says first while the runtime reports it is offline. */
const OFFLINE_NOTE =
  "this browser reports that it is offline (navigator.onLine is false): connect it to a network and run again";

/**
 * The causes of a request that failed without an answer, led by a note
 * that the browser is offline where the runtime reports it has no network.
 *
 * @param remedy The causes to check, as a lower-case clause.
 * @returns `remedy`, or where `navigator.onLine` is false the note,
 * `; otherwise ` and `remedy`.
 *
 * @example
 * ```ts
 * import { withOfflineNote } from "./network_status.ts";
 *
 * console.log(withOfflineNote("check that the server is running"));
 * ```
 */
export function withOfflineNote(remedy: string): string {
  const { navigator } = globalThis as { navigator?: { onLine?: unknown } };
  return navigator?.onLine === false
    ? `${OFFLINE_NOTE}; otherwise ${remedy}`
    : remedy;
}
