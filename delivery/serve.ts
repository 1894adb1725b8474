/**
 * Serves a packs folder over HTTP with `Deno.serve`: the on-disk catalog,
 * the delivery handler, and an optional watcher that re-scans the folder
 * when it changes. A connection guard in front times request heads,
 * closes idle connections and bounds how many are open; when accepting a
 * connection fails, it keeps serving.
 *
 * @module
 */

import {
  createDiskCatalog,
  type DiskCatalog,
  type DiskCatalogOptions,
} from "../catalog/disk_catalog.ts";
import type { EntitlementPolicy } from "../catalog/types.ts";
import type { PackDiagnostic, PackSummary } from "../protocol/mod.ts";
import { CordonError } from "../protocol/cordon_error.ts";
import { callSink } from "../protocol/hook_calls.ts";
import {
  DEFAULT_DELIVERY_PREFIX,
  type DeliveryHandlerOptions,
  type DeliveryRequestInfo,
} from "./handler.ts";
import { localPath } from "../catalog/local_path.ts";
import { buildDeliveryHandler } from "./_handler.ts";
import { readCorsRequestHeaders } from "./_cors.ts";
import { watchPacksFolder } from "./_watch.ts";
import { serveRelistening } from "./_conn_relisten.ts";
import { serveGuarded } from "./_conn_guard.ts";
import { type ConnLimits, readConnLimits } from "./_conn_limits.ts";
import {
  MAX_TIMER_MS,
  type OptionKeys,
  readIntegerOption,
  readOptions,
  TIMEOUT_MS_RANGE,
} from "../protocol/options.ts";
import { DEFAULT_CATALOG_TIMEOUT_MS } from "./_catalog_deadline.ts";

/** Options of {@linkcode serveDelivery}. */
export interface ServeDeliveryOptions {
  /** The packs folder to serve: a path, or a `file:` URL. */
  packsDir: string | URL;
  /**
   * The address to listen on.
   *
   * @default {"127.0.0.1"}
   */
  hostname?: string | undefined;
  /**
   * The port to listen on; `0` picks a free one (read it from `addr`).
   *
   * @default {8000}
   */
  port?: number | undefined;
  /**
   * The route prefix of the delivery handler.
   *
   * @default {"/api/sandbox-modules"}
   */
  prefix?: string | undefined;
  /**
   * Re-scan the packs folder when anything in it changes. Watching goes on
   * when the folder is deleted and recreated, renamed away and back, or
   * swapped by re-pointing a symlink; while it is gone the server keeps
   * listing the packs it had, and delivers the module bodies it still holds
   * (others answer `PACK_FILE_CHANGED` until the folder is back). A rescan
   * reads only the packs whose files changed.
   *
   * @default {false}
   */
  watch?: boolean | undefined;
  /**
   * How long the folder must stay quiet before a re-scan, in milliseconds.
   * A folder that keeps changing is re-scanned at the latest ten times
   * this after its first change.
   *
   * @default {200}
   */
  watchDebounceMs?: number | undefined;
  /**
   * Who may have which pack; see `createDiskCatalog`.
   *
   * @default {undefined} (everyone may have every installed pack)
   */
  entitlement?: EntitlementPolicy | undefined;
  /**
   * Tells who is asking; see {@linkcode DeliveryHandlerOptions.requester}.
   *
   * @default {undefined}
   */
  requester?: DeliveryHandlerOptions["requester"] | undefined;
  /**
   * Request headers scripts on other origins may send; see
   * {@linkcode DeliveryHandlerOptions.corsRequestHeaders}.
   *
   * @default {[]}
   */
  corsRequestHeaders?: readonly string[] | undefined;
  /**
   * How long one request waits for the `entitlement` policy and the
   * `requester` hook, in milliseconds; see
   * {@linkcode DeliveryHandlerOptions.catalogTimeoutMs}.
   *
   * @default {10000}
   */
  catalogTimeoutMs?: number | undefined;
  /**
   * The largest module file accepted, in bytes.
   *
   * @default {1048576}
   */
  maxModuleBytes?: number | undefined;
  /**
   * A file (a path, or a `file:` URL) where discovery keeps its index
   * between starts, so a restart
   * over an unchanged packs folder reads and hashes nothing again; see
   * `createDiskCatalog`'s `indexPath`. Needs `--allow-read` and
   * `--allow-write` on the file and its folder. A file inside the packs
   * folder is refused (`DISCOVERY_INDEX_INSIDE_PACKS`).
   *
   * @default {undefined} (no index file)
   */
  indexPath?: string | URL | undefined;
  /**
   * Called with each warning about the discovery index (it could not be
   * used, or not written); the server serves on.
   *
   * @default {undefined} (`console.warn` of the message)
   */
  onIndexWarning?: DiskCatalogOptions["onIndexWarning"] | undefined;
  /**
   * Puts the connection guard in front of `Deno.serve`: it closes
   * connections that do not finish a request head in `headerTimeoutMs` or
   * move no bytes for `idleTimeoutMs`, and keeps at most `maxConnections`
   * open. It copies every byte through JavaScript, which costs throughput
   * (see the delivery guide); turn it off only behind a reverse proxy that
   * enforces such limits itself. The guard's inner server listens on
   * 127.0.0.1, so it needs `--allow-net` for that address too.
   *
   * @default {true}
   */
  connectionGuard?: boolean | undefined;
  /**
   * With the guard: how long a client may take to send a request head, in
   * milliseconds, counted from when the connection opens and, on a
   * keep-alive connection, from the first byte of each later head.
   *
   * @default {10000}
   */
  headerTimeoutMs?: number | undefined;
  /**
   * With the guard: how long a connection may move no bytes either way, in
   * milliseconds, also while it waits for an answer.
   *
   * @default {30000}
   */
  idleTimeoutMs?: number | undefined;
  /**
   * With the guard: the most client connections open at once. At the
   * limit, a new connection closes the open one with no request in flight
   * that moved bytes least recently, or is closed itself when every one
   * has a request in flight. When the process runs out of file descriptors
   * anyway, the limit drops to what it holds.
   *
   * @default {4096} or what fits under the descriptor limit at three
   * descriptors per connection, when the process may read that limit
   * (on Linux with `--allow-all`)
   */
  maxConnections?: number | undefined;
  /**
   * Called when accepting a connection fails, for example when clients
   * hold every file descriptor the process may open, and, with the guard,
   * when it cannot reach its inner server. The server serves on: the
   * guard tries again (and lowers `maxConnections` when descriptors ran
   * out); without it, the server closes its idle connections (also those
   * that never finished a request), lets requests in flight finish, and
   * listens again on the same address.
   *
   * @default {undefined}
   */
  onAcceptError?: ((error: Error) => void) | undefined;
  /**
   * Called once per request, for access logs.
   *
   * @default {undefined}
   */
  onRequest?: ((info: DeliveryRequestInfo) => void) | undefined;
  /**
   * Called after each re-scan that `watch` started, with what changed.
   * Like every `on` hook here, it is not waited for: what it throws, and
   * what a promise it returns rejects with, are dropped (a failing
   * `onRescan` is no failed re-scan).
   *
   * @default {undefined}
   */
  onRescan?: ((change: CatalogChange) => void) | undefined;
  /**
   * Called when a re-scan that `watch` started fails, or the watching
   * itself fails on a change (a fault of cordon, with what was thrown); the
   * server keeps the packs it had.
   *
   * @default {undefined}
   */
  onRescanError?: ((error: unknown) => void) | undefined;
  /**
   * Called once when `watch` finds the packs folder gone, with why (the
   * error's name, such as `NotFound`; its message holds no path).
   *
   * @default {undefined}
   */
  onPacksLost?: ((error: Error) => void) | undefined;
  /**
   * Called once when the packs folder is back after `onPacksLost`, before
   * its re-scan.
   *
   * @default {undefined}
   */
  onPacksFound?: (() => void) | undefined;
  /** Shuts the server down when aborted. */
  signal?: AbortSignal | undefined;
}

/** What a re-scan changed, by pack. */
export interface CatalogChange {
  /** Packs installed now that were not before, as `name@version`. */
  added: string[];
  /** Packs gone, as `name@version`. */
  removed: string[];
  /** Packs whose graph digest changed, as `name@version`. */
  changed: string[];
  /** What discovery rejects now, folders relative to the packs folder. */
  rejected: PackDiagnostic[];
}

/**
 * Where a delivery server listens: the fields of Deno's `Deno.NetAddr`,
 * written out so the declarations of the Node build name no Deno type.
 */
export interface DeliveryAddress {
  /** The transport: `"tcp"` for a delivery server (the union is Deno's). */
  readonly transport: "tcp" | "udp";
  /** The address listened on, such as `127.0.0.1` or `::1`. */
  readonly hostname: string;
  /** The port listened on. */
  readonly port: number;
}

/**
 * A running delivery server. The caller owns it and must shut it down
 * (`await using` does).
 */
export interface DeliveryServer extends AsyncDisposable {
  /** The listening address; `addr.port` is the real port when `port` was 0. */
  readonly addr: DeliveryAddress;
  /** The URL of the catalog listing, such as `http://127.0.0.1:8000/api/sandbox-modules`. */
  readonly url: string;
  /** The catalog being served. */
  readonly catalog: DiskCatalog;
  /** Resolves when the server has stopped; a failed accept does not stop it. */
  readonly finished: Promise<void>;
  /**
   * Discovers the packs folder again now.
   *
   * @returns What changed.
   * @throws {CordonError} `SANDBOX_DISPOSED` once the server is shut down
   * or disposed.
   */
  rescan(): Promise<CatalogChange>;
  /**
   * Stops the watcher and the server, letting open requests finish.
   * Calling it again is harmless.
   *
   * @returns When the server has stopped.
   */
  shutdown(): Promise<void>;
}

/**
 * Discovers a packs folder and serves it with the delivery handler on
 * `Deno.serve`. Needs `--allow-read` (the packs folder) and `--allow-net`
 * (the listening address).
 *
 * A process serving a large packs folder is smaller with V8's young
 * generation capped: run it with `--v8-flags=--max-semi-space-size=2`, as
 * `deno task serve` does. Discovery keeps most of what it allocates, so by
 * default V8 grows the young generation to its largest and keeps it; at
 * 10,000 packs that is about 57 MiB of the RSS after a start. With the
 * cap the server used 0.99 to 1.03 times the CPU per request in the
 * delivery bench (docs/catalog.md has the figures). The flag must be given
 * when the process starts; the library cannot set it.
 *
 * @param options The packs folder, address, watch mode and hooks.
 * @returns The running server, once it listens.
 * @throws {TypeError} When an option has the wrong shape or is unknown, or
 * a limit of the connection guard is given with `connectionGuard: false`.
 * @throws {RangeError} When `port`, `watchDebounceMs`, `catalogTimeoutMs` or
 * a limit of the connection guard is out of range.
 * @throws {CordonError} `DELIVERY_SERVE_NEEDS_DENO` when the runtime is
 * not Deno (on Node, serve `createDeliveryHandler` with `node:http` through
 * `toNodeListener` of `@cordon/cordon/plugin`); `PATH_UNUSABLE` when the
 * packs folder cannot be read; `DELIVERY_LISTEN_FAILED` when the connection
 * guard's inner server may not listen on 127.0.0.1 (`--allow-net=127.0.0.1`).
 * @throws {Error} The runtime's error when the address cannot be bound.
 * @throws The signal's reason when it aborts before the server listens,
 * reading the packs included.
 *
 * @example
 * ```ts ignore
 * import { serveDelivery } from "@cordon/cordon/delivery";
 *
 * await using server = await serveDelivery({ packsDir: "./packs", port: 0 });
 * const listing = await fetch(server.url);
 * console.log(await listing.json());
 * ```
 */
export async function serveDelivery(
  given: ServeDeliveryOptions,
): Promise<DeliveryServer> {
  requireDeno();
  const options = readOptions(
    "serve the packs",
    given ?? {},
    SERVE_OPTION_KEYS,
  );
  const {
    hostname = "127.0.0.1",
    prefix = DEFAULT_DELIVERY_PREFIX,
    watch = false,
    signal,
  } = options;
  const packsDir = localPath(options.packsDir, {
    where: "serve the packs",
    name: "packsDir",
    kind: "folder",
  });
  if (typeof hostname !== "string" || hostname === "") {
    throw new TypeError(
      "Cannot serve the packs: hostname must be a non-empty string",
    );
  }
  const port = readIntegerOption(
    "serve the packs",
    "port",
    options.port,
    8000,
    {
      min: 0,
      max: 65535,
    },
  );
  if (typeof watch !== "boolean") {
    throw new TypeError("Cannot serve the packs: watch must be true or false");
  }
  const watchDebounceMs = readIntegerOption(
    "serve the packs",
    "watchDebounceMs",
    options.watchDebounceMs,
    200,
    { min: 0, max: MAX_TIMER_MS, unit: "milliseconds" },
  );
  if (signal !== undefined && !(signal instanceof AbortSignal)) {
    throw new TypeError(
      "Cannot serve the packs: signal must be an AbortSignal",
    );
  }
  checkHooks(options);
  const catalogTimeoutMs = readIntegerOption(
    "serve the packs",
    "catalogTimeoutMs",
    options.catalogTimeoutMs,
    DEFAULT_CATALOG_TIMEOUT_MS,
    TIMEOUT_MS_RANGE,
  );
  const corsRequestHeaders = readCorsRequestHeaders(
    options.corsRequestHeaders,
  );
  const limits = readGuardOptions(options);
  signal?.throwIfAborted();

  const catalog = await createDiskCatalog(packsDir, {
    ...(options.entitlement ? { entitlement: options.entitlement } : {}),
    ...(options.maxModuleBytes === undefined
      ? {}
      : { maxModuleBytes: options.maxModuleBytes }),
    ...(options.indexPath === undefined
      ? {}
      : { indexPath: options.indexPath }),
    ...(options.onIndexWarning === undefined
      ? {}
      : { onIndexWarning: options.onIndexWarning }),
  });
  // Reading a large packs folder takes a while: a stop asked for meanwhile
  // is kept before the server listens and says it is.
  signal?.throwIfAborted();
  const handler = buildDeliveryHandler(catalog, {
    prefix,
    requester: options.requester || undefined,
    onRequest: options.onRequest || undefined,
    corsRequestHeaders,
    catalogTimeoutMs,
    // Responses go straight to Deno.serve: see servedByDeno.
    servedByDeno: true,
  });
  // The operator's hooks hear about the server's work and cannot change
  // it: what they throw or reject with is dropped.
  const onAcceptError = (error: Error) =>
    callSink(options.onAcceptError, error);
  const server = limits
    ? await serveGuarded(handler, {
      hostname,
      port,
      ...limits,
      onError: onAcceptError,
    })
    : serveRelistening(handler, { hostname, port, onAcceptError });
  const addr = server.addr;
  const host = addr.hostname.includes(":")
    ? `[${addr.hostname}]`
    : addr.hostname;

  let current = catalog.summaries();
  let rescans: Promise<CatalogChange> = Promise.resolve(emptyChange());
  let stopping: Promise<void> | undefined;
  function rescan(): Promise<CatalogChange> {
    // A server shut down serves nothing more: a change it would answer is
    // a change no client sees, and callers took an empty one for none.
    if (stopping !== undefined) {
      return Promise.reject(
        new CordonError(
          "SANDBOX_DISPOSED",
          "Cannot rescan the packs folder: the server is shut down; serve the packs folder again with a new serveDelivery()",
        ),
      );
    }
    const run = rescans.catch(() => {}).then(async () => {
      await catalog.rescan();
      const next = catalog.summaries();
      const change = diffCatalogs(current, next, catalog.diagnostics());
      current = next;
      return change;
    });
    rescans = run;
    return run;
  }

  const watcher = watch
    ? watchPacksFolder(packsDir, {
      debounceMs: watchDebounceMs,
      onChange: () =>
        rescan().then((change) => callSink(options.onRescan, change)),
      onError: (error) => callSink(options.onRescanError, error),
      onLost: (error) => callSink(options.onPacksLost, error),
      onFound: () => callSink(options.onPacksFound),
    })
    : undefined;

  function shutdown(): Promise<void> {
    stopping ??= (async () => {
      signal?.removeEventListener("abort", onAbort);
      await watcher?.close();
      await server.shutdown();
      await rescans.catch(() => {});
    })();
    return stopping;
  }
  function onAbort(): void {
    shutdown();
  }
  signal?.addEventListener("abort", onAbort, { once: true });
  if (signal?.aborted) onAbort();

  return {
    addr,
    url: `http://${host}:${addr.port}${prefix === "" ? "/" : prefix}`,
    catalog,
    finished: server.finished,
    rescan,
    shutdown,
    [Symbol.asyncDispose]: shutdown,
  };
}

/**
 * Refuses to serve outside Deno, before an option is read: the server and
 * the watcher stand on the Deno namespace, and the handler they serve,
 * over the disk catalog or another, is what another runtime serves itself.
 */
function requireDeno(): void {
  if ((globalThis as { Deno?: unknown }).Deno !== undefined) return;
  throw new CordonError(
    "DELIVERY_SERVE_NEEDS_DENO",
    "Cannot serve the packs: serveDelivery() runs on Deno only; on Node, serve createDeliveryHandler(catalog) with node:http through toNodeListener() of @cordon/cordon/plugin, or run serveDelivery() on Deno",
  );
}

/** The guard's limits, or undefined when the guard is off. */
const SERVE_OPTION_KEYS: OptionKeys<ServeDeliveryOptions> = {
  packsDir: true,
  hostname: true,
  port: true,
  prefix: true,
  watch: true,
  watchDebounceMs: true,
  entitlement: true,
  requester: true,
  corsRequestHeaders: true,
  catalogTimeoutMs: true,
  maxModuleBytes: true,
  indexPath: true,
  onIndexWarning: true,
  connectionGuard: true,
  headerTimeoutMs: true,
  idleTimeoutMs: true,
  maxConnections: true,
  onAcceptError: true,
  onRequest: true,
  onRescan: true,
  onRescanError: true,
  onPacksLost: true,
  onPacksFound: true,
  signal: true,
};

const HOOKS = [
  "onAcceptError",
  "onRescan",
  "onRescanError",
  "onPacksLost",
  "onPacksFound",
] as const;

// The hooks run long after the call, where a wrong type would throw inside
// the server instead of here.
function checkHooks(options: Readonly<ServeDeliveryOptions>): void {
  for (const name of HOOKS) {
    const hook = options[name];
    if (hook !== undefined && typeof hook !== "function") {
      throw new TypeError(`Cannot serve the packs: ${name} must be a function`);
    }
  }
}

function readGuardOptions(
  options: Readonly<ServeDeliveryOptions>,
): ConnLimits | undefined {
  const { connectionGuard = true } = options;
  if (typeof connectionGuard !== "boolean") {
    throw new TypeError(
      "Cannot serve the packs: connectionGuard must be true or false",
    );
  }
  if (connectionGuard) return readConnLimits(options);
  const given =
    (["headerTimeoutMs", "idleTimeoutMs", "maxConnections"] as const)
      .filter((name) => options[name] !== undefined);
  if (given.length > 0) {
    throw new TypeError(
      `Cannot serve the packs: ${
        given.join(", ")
      } needs the connection guard; leave connectionGuard on, or set these limits in the reverse proxy`,
    );
  }
  return undefined;
}

function emptyChange(): CatalogChange {
  return { added: [], removed: [], changed: [], rejected: [] };
}

/** Compares two listings pack by pack. */
function diffCatalogs(
  before: readonly PackSummary[],
  after: readonly PackSummary[],
  rejected: PackDiagnostic[],
): CatalogChange {
  const label = (pack: PackSummary) => `${pack.name}@${pack.version}`;
  const old = new Map(before.map((pack) => [pack.name, pack]));
  const change = emptyChange();
  change.rejected = rejected;
  for (const pack of after) {
    const was = old.get(pack.name);
    old.delete(pack.name);
    if (was === undefined) change.added.push(label(pack));
    else if (
      was.version !== pack.version || was.graphDigest !== pack.graphDigest
    ) {
      change.changed.push(
        was.version === pack.version
          ? label(pack)
          : `${label(was)} → ${pack.version}`,
      );
    }
  }
  for (const pack of old.values()) change.removed.push(label(pack));
  return change;
}
