/**
 * Builds the programs the sandboxes start, from the self-contained
 * functions of this folder, as `data:` URLs: nothing is written to disk, so
 * nothing is left in temp folders, and the child needs no read permission
 * to load its own main module.
 *
 * @module
 */

import { createMarshallers } from "../protocol/marshal.ts";
import { type GuestRealmSettings, prepareGuestRealm } from "./_guest_realm.ts";
import { processBootstrap } from "./_process_bootstrap.ts";
import { workerBootstrap } from "./_worker_bootstrap.ts";
import { workerHostMain } from "./_worker_host_main.ts";

/**
 * Globals that no sandbox realm keeps: Node compat globals (QuickJS has
 * none either), nested workers (a second stage that could `import()`),
 * `BroadcastChannel` (a channel between runs of one process) and the
 * storage APIs that Deno persists on disk between processes (`caches`,
 * `localStorage`, `sessionStorage`).
 */
const COMMON_REMOVED_GLOBALS: readonly string[] = [
  "process",
  "Buffer",
  "global",
  "setImmediate",
  "clearImmediate",
  "Worker",
  "BroadcastChannel",
  "caches",
  "CacheStorage",
  "Cache",
  "localStorage",
  "sessionStorage",
];

/**
 * The worker tier also removes `Deno`: its guests share a process with the
 * host's stdin and stdout, which `Deno.stdin` and `Deno.stdout` would open
 * to them without any permission.
 */
export const WORKER_REALM: GuestRealmSettings = Object.freeze({
  removeGlobals: Object.freeze([...COMMON_REMOVED_GLOBALS, "Deno"]),
});

/** The process tier keeps `Deno`, so `allowRead` and the like mean something. */
export const PROCESS_REALM: GuestRealmSettings = Object.freeze({
  removeGlobals: Object.freeze([...COMMON_REMOVED_GLOBALS]),
});

// deno-lint-ignore no-explicit-any
function call(fn: (...args: any[]) => unknown, ...args: string[]): string {
  return `(${fn.toString()})(${args.join(", ")});\n`;
}

/** Base64 rather than percent-encoding: Deno reads it faster at start-up. */
function dataUrl(source: string): string {
  const bytes = new TextEncoder().encode(source);
  let binary = "";
  for (let i = 0; i < bytes.length; i += 0x8000) {
    binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return "data:text/javascript;base64," + btoa(binary);
}

/**
 * The realm's module importer, as source text: kept out of this folder's
 * code so the module graph has no dynamic import it cannot analyse.
 */
const IMPORTER_SOURCE = "(url) => import(url)";

/** The guest worker's module source. */
export const WORKER_BOOTSTRAP_SOURCE: string = call(
  workerBootstrap,
  prepareGuestRealm.toString(),
  createMarshallers.toString(),
  JSON.stringify(WORKER_REALM),
  IMPORTER_SOURCE,
);

const HOST_URLS = new Map<boolean, string>();

/**
 * The worker host's main module.
 *
 * @param keepReady Whether the host keeps a fresh worker started.
 * @returns A `data:` URL.
 */
export function workerHostUrl(keepReady: boolean): string {
  let url = HOST_URLS.get(keepReady);
  if (url === undefined) {
    url = dataUrl(
      call(
        workerHostMain,
        JSON.stringify(WORKER_BOOTSTRAP_SOURCE),
        String(keepReady),
      ),
    );
    HOST_URLS.set(keepReady, url);
  }
  return url;
}

/** The process tier's main module, as a `data:` URL. */
export const PROCESS_BOOTSTRAP_URL: string = dataUrl(
  call(
    processBootstrap,
    prepareGuestRealm.toString(),
    createMarshallers.toString(),
    JSON.stringify(PROCESS_REALM),
    IMPORTER_SOURCE,
  ),
);

/** V8 flags every sandbox child gets: no `eval`, no `new Function`. */
export function v8Flags(memoryLimitBytes: number): string {
  const mib = Math.ceil(memoryLimitBytes / (1024 * 1024));
  return `--v8-flags=--max-old-space-size=${mib},--disallow-code-generation-from-strings`;
}
