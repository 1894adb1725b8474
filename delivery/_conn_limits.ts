/**
 * The connection guard's limits: their defaults, their checks, and the
 * most connections that fit under the process's file descriptor limit.
 *
 * Deno raises the soft descriptor limit (`RLIMIT_NOFILE`) to the hard one
 * when it starts and has no API to read either. On Linux the limit is in
 * `/proc/self/limits`, but Deno 2.9.6 lets a process read that file only
 * with `--allow-all`. Without it the limit stays unknown until an accept
 * fails for lack of descriptors, and the guard learns it then.
 *
 * @module
 */

import { readIntegerOption, TIMEOUT_MS_RANGE } from "../protocol/options.ts";

/** How long a client may take to send a request head, by default. */
export const DEFAULT_HEADER_TIMEOUT_MS = 10_000;
/** How long a connection may move no bytes, by default. */
export const DEFAULT_IDLE_TIMEOUT_MS = 30_000;
/** The most connections open at once, when the descriptor limit allows. */
export const DEFAULT_MAX_CONNECTIONS = 4096;
/**
 * A forwarded connection holds three descriptors: the client's socket, the
 * guard's socket to the inner server, and the inner server's end of it.
 */
export const DESCRIPTORS_PER_CONNECTION = 3;
/**
 * Descriptors left for everything else: standard streams, the runtime's
 * own, the listeners, the packs folder watcher and a re-scan's files.
 */
const RESERVED_DESCRIPTORS = 64;
/** The most connections anyone may ask for. */
const MAX_CONNECTIONS = 1_000_000;

/** The connection guard's limits. */
export interface ConnLimits {
  headerTimeoutMs: number;
  idleTimeoutMs: number;
  maxConnections: number;
}

/**
 * Reads the connection guard's limits as `serveDelivery` takes them, with
 * their defaults.
 *
 * @throws {TypeError} When a limit is not a number.
 * @throws {RangeError} When a limit is not an integer in range.
 */
export function readConnLimits(options: Partial<ConnLimits>): ConnLimits {
  const where = "serve the packs";
  return {
    headerTimeoutMs: readIntegerOption(
      where,
      "headerTimeoutMs",
      options.headerTimeoutMs,
      DEFAULT_HEADER_TIMEOUT_MS,
      TIMEOUT_MS_RANGE,
    ),
    idleTimeoutMs: readIntegerOption(
      where,
      "idleTimeoutMs",
      options.idleTimeoutMs,
      DEFAULT_IDLE_TIMEOUT_MS,
      TIMEOUT_MS_RANGE,
    ),
    maxConnections: readIntegerOption(
      where,
      "maxConnections",
      options.maxConnections,
      maxConnectionsFor(descriptorLimit()),
      { min: 1, max: MAX_CONNECTIONS },
    ),
  };
}

/**
 * The soft descriptor limit of this process, when it may be read.
 *
 * @returns The limit, or undefined when unknown (not Linux, no
 * `--allow-all`, or unlimited).
 */
export function descriptorLimit(): number | undefined {
  const path = "/proc/self/limits";
  // Without read permission, reading would prompt on a terminal.
  if (Deno.permissions.querySync({ name: "read", path }).state !== "granted") {
    return undefined;
  }
  try {
    const soft = /^Max open files\s+(\d+)/m.exec(Deno.readTextFileSync(path));
    return soft ? Number(soft[1]) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The most connections that fit under a descriptor limit, each counted as
 * forwarded, and at most {@linkcode DEFAULT_MAX_CONNECTIONS}.
 *
 * @param limit The descriptor limit, if known.
 * @returns At least 1.
 */
export function maxConnectionsFor(limit: number | undefined): number {
  if (limit === undefined) return DEFAULT_MAX_CONNECTIONS;
  const fit = Math.floor(
    (limit - RESERVED_DESCRIPTORS) / DESCRIPTORS_PER_CONNECTION,
  );
  return Math.max(1, Math.min(DEFAULT_MAX_CONNECTIONS, fit));
}

/**
 * Whether an accept or connect failed because the process or the system is
 * out of descriptors (EMFILE, ENFILE, or WSAEMFILE on Windows).
 *
 * @param error What the call threw.
 */
export function isOutOfDescriptors(error: unknown): boolean {
  return error instanceof Error &&
    /\(os error (?:23|24|10024)\)$/.test(error.message);
}
