/**
 * The delivery server CLI: serves a packs folder (by default the fixture
 * packs shipped with cordon) on 127.0.0.1:8000, prints what it found, logs
 * one line per request and shuts down cleanly on SIGINT or SIGTERM.
 *
 * ```sh
 * deno run --allow-read --allow-net=127.0.0.1,localhost \
 *   --v8-flags=--max-semi-space-size=2 \
 *   jsr:@cordon/cordon/cli/serve --packs ./packs --watch
 * ```
 *
 * `--max-semi-space-size=2` (MiB, what `deno task serve` sets) caps V8's
 * young generation: discovery keeps most of what it allocates, so V8 grows
 * the young generation to its largest and keeps it. At 10,000 packs it
 * holds the server's RSS after a start near 139 MiB (146 MB) instead of
 * 196 MiB; the delivery bench measured 0.99 to 1.03 times the server CPU
 * per request with the cap (docs/catalog.md has the figures).
 *
 * Run it with `--help` for its flags. Its exit code is 0 after SIGINT or
 * SIGTERM, 1 when the server cannot start and 2 for bad flags. After a
 * signal, requests in flight get `--shutdown-timeout-ms` (10 s) to finish
 * before they are cut; SIGHUP is not handled and ends the process at once.
 *
 * @module
 */

import { fileURLToPath } from "node:url";
import { readOptions } from "../protocol/options.ts";
import {
  type CatalogChange,
  type DeliveryServer,
  serveDelivery,
} from "../delivery/serve.ts";
import {
  CordonError,
  type ErrorCode,
  operatorText,
  type PackDiagnostic,
} from "../protocol/mod.ts";
import { MAX_TIMER_MS } from "../protocol/options.ts";
import { accessLogLine } from "./_access_log.ts";
import {
  count,
  enterTaskStartDir,
  type FlagSpec,
  isOsError,
  messageOf,
  parseOrAnswer,
  readFlags,
  readIntegerFlag,
} from "./_flags.ts";
import { programOutput } from "./_program.ts";

/** The code of a server that cannot take its address. */
const LISTEN_FAILED: ErrorCode = "DELIVERY_LISTEN_FAILED";

/**
 * How long requests in flight get to finish after SIGINT or SIGTERM: well
 * under the stop timeouts of supervisors (systemd's 90 s, Kubernetes' 30 s),
 * so the server exits on its own rather than being killed.
 */
const DEFAULT_SHUTDOWN_TIMEOUT_MS = 10_000;

/** The flags of the delivery server CLI, parsed. */
export interface ServeArgs {
  /** `--packs DIR`: the packs folder, when given. */
  packsDir?: string;
  /** `--port N`: the port (0 picks a free one). */
  port: number;
  /** `--hostname H`: the address to listen on. */
  hostname: string;
  /** `--watch`: re-scan the packs folder when it changes. */
  watch: boolean;
  /** `--index FILE`: keep a discovery index there between starts. */
  indexPath?: string;
  /** `--quiet`: no line per request. */
  quiet: boolean;
  /** Off with `--no-connection-guard`: serve on bare `Deno.serve`. */
  connectionGuard: boolean;
  /** `--header-timeout-ms N`: the guard's request head deadline. */
  headerTimeoutMs?: number;
  /** `--idle-timeout-ms N`: the guard's idle deadline. */
  idleTimeoutMs?: number;
  /** `--max-connections N`: the most connections the guard keeps open. */
  maxConnections?: number;
  /** `--shutdown-timeout-ms N`: how long requests in flight get to finish. */
  shutdownTimeoutMs?: number;
  /** `--help`: print the usage and exit. */
  help: boolean;
}

/** The usage text `--help` prints. */
export const USAGE: string = `Serve sandbox modules from a packs folder.

Usage: deno run --allow-read --allow-net=127.0.0.1,localhost \\
         --v8-flags=--max-semi-space-size=2 cli/serve.ts [flags]

Flags:
  --packs DIR      The packs folder to serve (default: cordon's fixture packs)
  --port N         The port to listen on; 0 picks a free one (default: 8000)
  --hostname H     The address to listen on (default: 127.0.0.1)
  --watch          Re-scan the packs folder when it changes
  --index FILE     Keep a discovery index in FILE, so a restart over an
                   unchanged packs folder reads and hashes no pack again
                   (needs --allow-read and --allow-write on FILE's folder;
                   FILE inside the packs folder is refused)
  --quiet          Do not log a line per request
  --header-timeout-ms N
                   Close a connection that takes longer to send a request
                   head (default: 10000)
  --idle-timeout-ms N
                   Close a connection that moves no bytes this long
                   (default: 30000)
  --max-connections N
                   Keep at most N connections open, closing the one idle
                   longest for a new one (default: what fits under the
                   file descriptor limit, at most 4096)
  --no-connection-guard
                   Serve on bare Deno.serve, without the three limits
                   above (faster); only behind a reverse proxy that
                   enforces them
  --shutdown-timeout-ms N
                   After SIGINT or SIGTERM, give requests in flight this
                   long to finish, then cut them and exit (default: 10000);
                   a second signal cuts them at once
  -h, --help       Print this help

Routes: GET|HEAD /api/sandbox-modules (the listing) and
        GET|HEAD /api/sandbox-modules/:id (one module's bytes).

Relative paths are read from the folder deno task was started in (INIT_CWD),
not the folder of deno.json, where the task runs.

SIGHUP is not handled: it ends the process at once, as its default action
does (use --watch to pick up changed packs).

Exit code: 0 after SIGINT or SIGTERM (also when requests in flight were
cut), 1 when the server cannot start, 2 for bad flags.`;

const FLAGS: FlagSpec = {
  options: {
    packs: { type: "string" },
    port: { type: "string" },
    hostname: { type: "string" },
    watch: { type: "boolean" },
    index: { type: "string" },
    quiet: { type: "boolean" },
    "header-timeout-ms": { type: "string" },
    "idle-timeout-ms": { type: "string" },
    "max-connections": { type: "string" },
    "no-connection-guard": { type: "boolean" },
    "shutdown-timeout-ms": { type: "string" },
    help: { type: "boolean", short: "h" },
  },
  allowPositionals: false,
  emptyValues: false,
  owner: "this server",
};

/**
 * Parses the CLI flags with `node:util`'s `parseArgs` in strict mode.
 * Values go as `--flag value` or `--flag=value`.
 *
 * @param args The command-line arguments, such as `Deno.args`.
 * @returns The parsed flags with their defaults.
 * @throws {TypeError} When a flag is unknown, repeated, or lacks a value
 * (a value that starts with a dash goes as `--flag=-x`).
 * @throws {RangeError} When `--port` is not an integer from 0 to 65535,
 * or a limit of the connection guard or `--shutdown-timeout-ms` is not a
 * whole number in range.
 * @throws {TypeError} When a limit of the connection guard is given with
 * `--no-connection-guard`.
 *
 * @example
 * ```ts
 * import { parseServeArgs } from "@cordon/cordon/cli/serve";
 * import assert from "node:assert/strict";
 *
 * const args = parseServeArgs(["--packs", "./packs", "--port=0", "--watch"]);
 * assert.equal(args.packsDir, "./packs");
 * assert.equal(args.port, 0);
 * assert.equal(args.hostname, "127.0.0.1");
 * assert.equal(args.watch, true);
 * assert.throws(() => parseServeArgs(["--pack", "x"]), TypeError);
 * ```
 */
export function parseServeArgs(args: readonly string[]): ServeArgs {
  const { values, switches } = readFlags(args, FLAGS);
  const port = readIntegerFlag("--port", values.get("port") ?? "8000", {
    min: 0,
    max: 65535,
  })!;
  const packsDir = values.get("packs");
  const indexPath = values.get("index");
  const shutdownTimeoutMs = readIntegerFlag(
    "--shutdown-timeout-ms",
    values.get("shutdown-timeout-ms"),
    { min: 0, max: MAX_TIMER_MS },
  );
  return {
    ...(packsDir === undefined ? {} : { packsDir }),
    ...(indexPath === undefined ? {} : { indexPath }),
    ...(shutdownTimeoutMs === undefined ? {} : { shutdownTimeoutMs }),
    port,
    hostname: values.get("hostname") ?? "127.0.0.1",
    watch: switches.has("watch"),
    quiet: switches.has("quiet"),
    help: switches.has("help"),
    ...readGuardFlags(values, switches),
  };
}

function readGuardFlags(
  values: ReadonlyMap<string, string>,
  switches: ReadonlySet<string>,
): Pick<
  ServeArgs,
  "connectionGuard" | "headerTimeoutMs" | "idleTimeoutMs" | "maxConnections"
> {
  const limits = {
    headerTimeoutMs: readIntegerFlag(
      "--header-timeout-ms",
      values.get("header-timeout-ms"),
      { min: 1, max: MAX_TIMER_MS },
    ),
    idleTimeoutMs: readIntegerFlag(
      "--idle-timeout-ms",
      values.get("idle-timeout-ms"),
      { min: 1, max: MAX_TIMER_MS },
    ),
    maxConnections: readIntegerFlag(
      "--max-connections",
      values.get("max-connections"),
      { min: 1, max: 1_000_000 },
    ),
  };
  const given = Object.entries(limits).filter(([, v]) => v !== undefined);
  const connectionGuard = !switches.has("no-connection-guard");
  if (!connectionGuard && given.length > 0) {
    throw new TypeError(
      `Cannot read the flags: ${
        given.map(([name]) => flagName(name)).join(", ")
      } needs the connection guard, which --no-connection-guard turns off`,
    );
  }
  return {
    connectionGuard,
    ...Object.fromEntries(given),
  };
}

/** `headerTimeoutMs` → `--header-timeout-ms`. */
function flagName(option: string): string {
  return `--${option.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;
}

/** Where {@linkcode runServer} writes. */
export interface RunServerOptions {
  /**
   * Writes one line of output.
   *
   * @default {console.log}
   */
  print?: (line: string) => void;
  /**
   * Writes one line of error output.
   *
   * @default {console.error}
   */
  printError?: (line: string) => void;
  /**
   * Stops the server when aborted, as SIGINT and SIGTERM do.
   *
   * @default {undefined}
   */
  signal?: AbortSignal;
}

/**
 * Runs the delivery server CLI until SIGINT, SIGTERM or `signal` stops it.
 * The requests in flight then get `--shutdown-timeout-ms` to finish (a
 * second SIGINT or SIGTERM ends that wait); when it runs out, it warns
 * and returns with them still open, and the process must exit to cut
 * them, as the command does.
 *
 * @param args The command-line arguments, such as `Deno.args`.
 * @param options Where to write, and a signal to stop.
 * @returns The exit code: 0 after a stop (or `--help`), 1 when the server
 * cannot start, 2 for bad flags.
 *
 * @example
 * ```ts ignore
 * import { runServer } from "@cordon/cordon/cli/serve";
 *
 * Deno.exit(await runServer(["--packs", "./packs", "--port", "8080"]));
 * ```
 */
export async function runServer(
  args: readonly string[],
  options: RunServerOptions = {},
): Promise<number> {
  const { print = console.log, printError = console.error, signal } =
    readOptions("run the serve command", options, {
      print: true,
      printError: true,
      signal: true,
    });
  const parsed = parseOrAnswer(parseServeArgs, args, USAGE, {
    print,
    printError,
  });
  if (typeof parsed === "number") return parsed;
  let packsDir = parsed.packsDir;
  if (packsDir === undefined) {
    const fixtures = new URL("../fixtures/packs/", import.meta.url);
    if (fixtures.protocol !== "file:") {
      printError(
        `error: Cannot find the built-in fixture packs: this server runs from a ${fixtures.protocol} URL, not a local folder; pass --packs DIR`,
      );
      return 2;
    }
    packsDir = fileURLToPath(fixtures);
  }
  const hidden = await hiddenPrefixes(packsDir);
  const scrub = (text: string) =>
    hidden.reduce((out, prefix) => out.replaceAll(prefix, "<packs>"), text);

  const stop = new AbortController();
  // The first signal stops the server; a second one cuts what is in flight.
  const cut = new AbortController();
  const onSignal = () => stop.signal.aborted ? cut.abort() : stop.abort();
  const signals: Deno.Signal[] = Deno.build.os === "windows"
    ? ["SIGINT"]
    : ["SIGINT", "SIGTERM"];
  for (const name of signals) Deno.addSignalListener(name, onSignal);
  signal?.addEventListener("abort", onSignal, { once: true });
  try {
    let server;
    try {
      server = await serveDelivery({
        packsDir,
        hostname: parsed.hostname,
        port: parsed.port,
        watch: parsed.watch,
        ...(parsed.indexPath === undefined
          ? {}
          : { indexPath: parsed.indexPath }),
        // Coded as the other failures it prints, so a log search or an
        // alert can tell an index it ignored from one it cannot write.
        onIndexWarning: ({ code, message }) =>
          printError(scrub(`warning: ${code}: ${message}`)),
        connectionGuard: parsed.connectionGuard,
        headerTimeoutMs: parsed.headerTimeoutMs,
        idleTimeoutMs: parsed.idleTimeoutMs,
        maxConnections: parsed.maxConnections,
        signal: stop.signal,
        ...(parsed.quiet
          ? {}
          : { onRequest: (info) => print(accessLogLine(info)) }),
        onRescan: (change) => {
          for (const line of describeChange(change)) print(scrub(line));
        },
        onRescanError: (error) =>
          printError(
            scrub(`rescan failed, keeping the packs: ${messageOf(error)}`),
          ),
        onPacksLost: (error) =>
          printError(
            `Packs folder lost (${error.name}): serving the last packs found until it is back`,
          ),
        onPacksFound: () => print("Packs folder found again"),
        onAcceptError: (error) => printError(scrub(oneLine(error.message))),
      });
    } catch (error) {
      if (stop.signal.aborted) return 0;
      printError(scrub(oneLine(startFailureLine(error))));
      return 1;
    }
    print(`Listening on ${server.url}`);
    const packs = server.catalog.summaries();
    print(`${count(packs.length, "pack")} installed:`);
    for (const pack of packs) {
      print(
        `  ${pack.name}@${pack.version} (${
          count(pack.modules.length, "module")
        })`,
      );
    }
    const rejected = server.catalog.diagnostics();
    if (rejected.length > 0) {
      print(`${count(rejected.length, "problem")} rejected packs:`);
      for (const line of describeRejected(rejected)) print(scrub(line));
    }
    if (parsed.watch) print("Watching the packs folder for changes");
    print("Press Ctrl-C to stop");
    const graceMs = parsed.shutdownTimeoutMs ?? DEFAULT_SHUTDOWN_TIMEOUT_MS;
    if (!await stoppedWithin(server, stop.signal, cut.signal, graceMs)) {
      printError(
        `warning: Requests still in flight ${
          cut.signal.aborted
            ? "at a second signal"
            : `${graceMs} ms after the stop`
        } were cut; raise --shutdown-timeout-ms to give them longer`,
      );
    }
    print("Stopped");
    return 0;
  } finally {
    for (const name of signals) Deno.removeSignalListener(name, onSignal);
    signal?.removeEventListener("abort", onSignal);
  }
}

/**
 * Waits until the server has stopped, giving the requests in flight when
 * `stopping` aborts `graceMs` to finish, or until `cut` aborts: a client
 * that reads an answer slowly, or pipelines requests it never reads,
 * would otherwise hold the process past any supervisor's stop timeout.
 *
 * @returns Whether the server stopped; false when its requests were left
 * in flight, which end with the process.
 */
async function stoppedWithin(
  server: DeliveryServer,
  stopping: AbortSignal,
  cut: AbortSignal,
  graceMs: number,
): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  let onCut: (() => void) | undefined;
  const startGrace = () => timer = setTimeout(onCut!, graceMs);
  const graceOver = new Promise<false>((resolve) => {
    onCut = () => resolve(false);
    cut.addEventListener("abort", onCut, { once: true });
    if (stopping.aborted) startGrace();
    else stopping.addEventListener("abort", startGrace, { once: true });
  });
  try {
    const stopped = server.finished.then(() => server.shutdown()).then(
      () => true,
    );
    // Once the grace is over nobody waits for the stop: a late failure of
    // it must not surface as an unhandled rejection.
    stopped.catch(() => {});
    return await Promise.race([stopped, graceOver]);
  } finally {
    stopping.removeEventListener("abort", startGrace);
    clearTimeout(timer);
    cut.removeEventListener("abort", onCut!);
  }
}

/**
 * Why the server did not start, in one coded line: a coded error (the
 * packs folder) as it is, the runtime's refusal of the address as
 * `DELIVERY_LISTEN_FAILED`.
 */
function startFailureLine(error: unknown): string {
  if (error instanceof CordonError) {
    return `error: ${error.code}: ${error.message}`;
  }
  const message = `Cannot start the delivery server: ${messageOf(error)}${
    listenHint(error)
  }`;
  return isOsError(error) || isHostnameRefusal(error)
    ? `error: ${LISTEN_FAILED}: ${message}`
    : `error: ${message}`;
}

/** What to pass instead, for an address the runtime refused. */
function listenHint(error: unknown): string {
  if (error instanceof Deno.errors.AddrInUse) {
    return "; pass a free --port, or --port 0 to pick one";
  }
  return isHostnameRefusal(error) ||
      error instanceof Deno.errors.AddrNotAvailable
    ? "; pass a --hostname this machine has, such as 127.0.0.1"
    : "";
}

/**
 * Whether the runtime refused `--hostname` itself: a `URIError` for a name
 * it cannot parse, or a plain `Error` (none of `Deno.errors`) for one the
 * resolver does not know. Discovery's failures are coded, and the flags
 * are checked before, so no other plain error comes from starting.
 */
function isHostnameRefusal(error: unknown): boolean {
  return error instanceof URIError ||
    (error instanceof Error && error.constructor === Error);
}

/**
 * A folder name reaches these lines as written in the packs folder, so it
 * is escaped: it cannot forge a line or repaint the terminal. The message
 * is the catalog's, which escapes what it quotes; escaped twice, a name
 * would print its backslashes doubled.
 */
function describeRejected(rejected: readonly PackDiagnostic[]): string[] {
  return rejected.map((d) =>
    `  ${operatorText(d.pack)}: ${d.code}: ${d.message}`
  );
}

function describeChange(change: CatalogChange): string[] {
  const parts: string[] = [];
  if (change.added.length > 0) parts.push(`added ${change.added.join(", ")}`);
  if (change.removed.length > 0) {
    parts.push(`removed ${change.removed.join(", ")}`);
  }
  if (change.changed.length > 0) {
    parts.push(`changed ${change.changed.join(", ")}`);
  }
  const lines = [
    `Packs rescanned: ${parts.length === 0 ? "no change" : parts.join("; ")}`,
  ];
  if (change.rejected.length > 0) {
    lines.push(`${count(change.rejected.length, "problem")} rejected packs:`);
    lines.push(...describeRejected(change.rejected));
  }
  return lines;
}

/** Error output is one line per event, whatever an error message holds. */
function oneLine(text: string): string {
  return text.replace(/\s*[\r\n]+\s*/g, " ");
}

/** The absolute forms of the packs folder, to keep them out of output. */
async function hiddenPrefixes(packsDir: string): Promise<string[]> {
  const prefixes = new Set<string>();
  try {
    prefixes.add(await Deno.realPath(packsDir));
  } catch {
    // Reported when the catalog reads the folder.
  }
  if (packsDir.startsWith("/")) prefixes.add(packsDir.replace(/\/+$/, ""));
  else {
    try {
      prefixes.add(`${Deno.cwd()}/${packsDir}`.replace(/\/+$/, ""));
    } catch {
      // No cwd permission: nothing to hide beyond the real path.
    }
  }
  return [...prefixes].filter((p) => p.length > 1).sort((a, b) =>
    b.length - a.length
  );
}

/**
 * Runs the CLI so that nothing ends it with a stack trace: an error that
 * escapes while serving is logged as one line and serving goes on; one
 * that escapes `runServer` itself is logged as one line and exits 1.
 * Neither line names a file: such an error has not been through the
 * packs folder scrub, so any absolute path in it is hidden.
 */
async function main(): Promise<number> {
  const output = programOutput();
  const print = (text: string) =>
    output.printError(
      oneLine(text).replace(
        /(?<=^|[\s'"(])(?:file:\/\/)?\/[^\s'"]*/g,
        "<path>",
      ),
    );
  const logEscaped = (event: ErrorEvent | PromiseRejectionEvent) => {
    event.preventDefault();
    const error = "reason" in event ? event.reason : event.error;
    print(`error: Unexpected: ${messageOf(error)}`);
  };
  globalThis.addEventListener("error", logEscaped);
  globalThis.addEventListener("unhandledrejection", logEscaped);
  let code: number;
  try {
    enterTaskStartDir(output.printError);
    const { print: printLine, printError } = output;
    code = await runServer(Deno.args, { print: printLine, printError });
  } catch (error) {
    print(`error: ${messageOf(error)}`);
    code = 1;
  }
  return code === 0 && output.outputFailed ? 1 : code;
}

if (import.meta.main) {
  Deno.exit(await main());
}
