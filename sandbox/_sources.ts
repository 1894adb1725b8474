/**
 * Builds the programs the sandboxes start, from the self-contained
 * functions of this folder, as `data:` URLs: nothing is written to disk, so
 * nothing is left in temp folders, and the child needs no read permission
 * to load its own main module.
 *
 * @module
 */

import { DENY_CODE_GENERATION_SOURCE } from "../realm/deny_code_generation.ts";
import {
  COARSEN_PERFORMANCE_SOURCE,
  COARSEN_TEMPORAL_NOW_SOURCE,
} from "../realm/coarse_clocks.ts";
import { REMOVE_LEGACY_REGEXP_STATICS_SOURCE } from "../realm/legacy_regexp_statics.ts";
import { createMarshallers } from "../realm/marshal.ts";
import { compactSource } from "./_compact_source.ts";
import {
  type GuestRealmSettings,
  markGuestSource,
  prepareGuestRealm,
} from "./_guest_realm.ts";
import { processBootstrap } from "./_process_bootstrap.ts";
import { workerBootstrap } from "./_worker_bootstrap.ts";
import { workerHostMain } from "./_worker_host_main.ts";

/**
 * Globals that no sandbox realm keeps: Node compat globals, nested workers
 * (a second stage that could `import()`), `BroadcastChannel` (a channel
 * between runs of one process) and the storage APIs that Deno persists on
 * disk between processes (`caches`, `localStorage`, `sessionStorage`).
 * And `navigator`, as on the QuickJS and vm tiers: its user agent names the
 * host's Deno and its version, the worker tier's only other source of it,
 * and its other fields the host's platform, locale and core count.
 * And `createImageBitmap` (with `ImageBitmap`): Deno allocates the bitmap
 * it resizes to in Rust, outside the V8 heap, and aborts the whole process
 * when that fails (a 2**31 pixels square one did), so a guest could end the
 * worker host and every run on it; QuickJS and the vm tier have none.
 * `global` stays: it is the realm's `globalThis`, as on the QuickJS and vm
 * tiers, and bundles of npm packages read it.
 * And the classes of `performance` and its entries: Deno's `performance`,
 * its marks and measures read the host's clock to the microsecond, a clock
 * for timing attacks that no other tier has; the realm's `performance` is
 * replaced before this list is removed by one that reads whole
 * milliseconds (see {@linkcode COARSEN_PERFORMANCE}).
 */
const COMMON_REMOVED_GLOBALS: readonly string[] = [
  "process",
  "Buffer",
  "setImmediate",
  "clearImmediate",
  "Worker",
  "BroadcastChannel",
  "caches",
  "CacheStorage",
  "Cache",
  "localStorage",
  "sessionStorage",
  "navigator",
  "Navigator",
  "WorkerNavigator",
  "createImageBitmap",
  "ImageBitmap",
  "Performance",
  "PerformanceEntry",
  "PerformanceMark",
  "PerformanceMeasure",
  "PerformanceObserver",
  "PerformanceObserverEntryList",
];

/**
 * The worker tier also removes `Deno`: its guests share a process with the
 * host's stdin and stdout, which `Deno.stdin` and `Deno.stdout` would open
 * to them without any permission. And it removes `postMessage`, so the
 * worker's channel to its host carries only what the bootstrap sends.
 */
export const WORKER_REALM: GuestRealmSettings = Object.freeze({
  removeGlobals: Object.freeze([
    ...COMMON_REMOVED_GLOBALS,
    "Deno",
    "postMessage",
  ]),
});

/** The process tier keeps `Deno`, so `allowRead` and the like mean something. */
export const PROCESS_REALM: GuestRealmSettings = Object.freeze({
  removeGlobals: Object.freeze([...COMMON_REMOVED_GLOBALS]),
});

/**
 * A function's source as an expression, without comments and indentation.
 * The parentheses also tell V8 to compile it as soon as its script is
 * compiled, rather than parse it twice (once to skip it, once on its first
 * call): every injected function is called at once.
 */
// deno-lint-ignore no-explicit-any
function expression(fn: (...args: any[]) => unknown): string {
  return `(${compactSource(fn.toString())})`;
}

// deno-lint-ignore no-explicit-any
function call(fn: (...args: any[]) => unknown, ...args: string[]): string {
  return `${expression(fn)}(${args.join(", ")});\n`;
}

/**
 * A `data:` URL of a module's source that percent-encodes only what a URL
 * cannot carry as it is: `%`, `#`, control and non-ASCII characters, and
 * the spaces at either end that URL parsing would strip. Deno takes time
 * in proportion to the length of a main module's URL to start it, and
 * base64 makes the URL a third longer, full percent-encoding half longer.
 */
function dataUrl(source: string): string {
  return "data:text/javascript," +
    source.replace(
      /[%#\p{Cc}\u{80}-\u{10FFFF}]|^ +| +$/gu,
      (match) => encodeURIComponent(match),
    );
}

/**
 * The realm's module importer, as source text: kept out of this folder's
 * code so the module graph has no dynamic import it cannot analyse.
 */
const IMPORTER_SOURCE = "(url) => import(url)";

/**
 * Runs first in a guest realm. V8's flag is what denies code generation
 * there (see {@linkcode v8Flags}); this gives the `EvalError` the words it
 * has on the QuickJS and vm tiers, which say what to write instead.
 */
const DENY_CODE_GENERATION = `${DENY_CODE_GENERATION_SOURCE}();\n`;

/**
 * Also runs first: V8 keeps on `RegExp` what Deno's and cordon's own code
 * matched in the realm, which the guest must not read
 * (`realm/legacy_regexp_statics.ts`).
 */
const REMOVE_LEGACY_REGEXP_STATICS =
  `${REMOVE_LEGACY_REGEXP_STATICS_SOURCE}();\n`;

/**
 * Also runs first: `Temporal.Now` reads the host's clock to the
 * microsecond; it reads `Date.now()` instead (`realm/coarse_clocks.ts`).
 */
const COARSEN_TEMPORAL_NOW = `${COARSEN_TEMPORAL_NOW_SOURCE}();\n`;

/**
 * Also runs first: `performance` keeps `now()` and `timeOrigin` only, in
 * whole milliseconds (`realm/coarse_clocks.ts`), for the packages that time
 * their work with it; its captures are made before guest code exists.
 */
const COARSEN_PERFORMANCE = `${COARSEN_PERFORMANCE_SOURCE}();\n`;

/** The guest worker's main module. */
export const WORKER_BOOTSTRAP_SOURCE: string = DENY_CODE_GENERATION +
  REMOVE_LEGACY_REGEXP_STATICS + COARSEN_TEMPORAL_NOW + COARSEN_PERFORMANCE +
  call(
    workerBootstrap,
    expression(prepareGuestRealm),
    expression(createMarshallers),
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
    url = hostUrl(keepReady);
    HOST_URLS.set(keepReady, url);
  }
  return url;
}

function hostUrl(keepReady: boolean): string {
  return dataUrl(
    call(
      workerHostMain,
      JSON.stringify(WORKER_BOOTSTRAP_SOURCE),
      expression(markGuestSource),
      String(keepReady),
    ),
  );
}

/**
 * The process tier's importer, in a module of its own with a short URL: a
 * module loaded with `import()` costs Deno time in proportion to the length
 * of the importing module's URL, and the main module's `data:` URL is long.
 */
const PROCESS_IMPORTER_URL = `data:text/javascript,${
  encodeURIComponent(`export default ${IMPORTER_SOURCE};`)
}`;

/** The process tier's main module, as a `data:` URL. */
function processBootstrapUrl(): string {
  return dataUrl(
    `import importer from ${JSON.stringify(PROCESS_IMPORTER_URL)};\n` +
      DENY_CODE_GENERATION +
      REMOVE_LEGACY_REGEXP_STATICS +
      COARSEN_TEMPORAL_NOW +
      COARSEN_PERFORMANCE +
      call(
        processBootstrap,
        expression(prepareGuestRealm),
        expression(createMarshallers),
        expression(markGuestSource),
        JSON.stringify(PROCESS_REALM),
        "importer",
      ),
  );
}

/** The process tier's main module, as a `data:` URL. */
export const PROCESS_BOOTSTRAP_URL: string = processBootstrapUrl();

/** V8 flags every sandbox child gets: no `eval`, no `new Function`. */
export function v8Flags(memoryLimitBytes: number): string {
  const mib = Math.ceil(memoryLimitBytes / (1024 * 1024));
  return `--v8-flags=--max-old-space-size=${mib},--disallow-code-generation-from-strings`;
}
