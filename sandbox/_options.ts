/**
 * Defaults and checks of sandbox options: a wrong shape is a `TypeError`,
 * an out-of-range limit a `RangeError`.
 *
 * @module
 */

import { readContextJson } from "../protocol/context_json.ts";
import { operatorQuote } from "../protocol/operator_text.ts";
import {
  readRunInputBounds,
  RUN_INPUT_BOUND_KEYS,
  type RunInputBounds,
  sourceOverBound,
} from "../protocol/run_inputs.ts";
import { readDeclaration } from "../protocol/read_declaration.ts";
import {
  DEFAULT_MAX_LOG_BYTES,
  type FailureDetail,
  MAX_LOG_BYTES,
} from "../protocol/run_result.ts";
import {
  copyListOption,
  DEFAULT_MAX_QUEUED,
  MAX_QUEUED_RANGE,
  MAX_TIMER_MS,
  MAX_V8_HEAP_BYTES,
  type OptionKeys,
  readingOption,
  readIntegerOption,
  readOptions,
} from "../protocol/options.ts";

/** The default time limit of a run, in milliseconds. */
export const DEFAULT_TIMEOUT_MS = 5_000;
/** The default V8 heap cap of a run, in bytes. */
export const DEFAULT_MEMORY_LIMIT_BYTES = 128 * 1024 * 1024;
/** The smallest heap cap V8 starts with reliably. */
export const MIN_MEMORY_LIMIT_BYTES = 16 * 1024 * 1024;
/** The largest heap cap accepted. */
export const MAX_MEMORY_LIMIT_BYTES = MAX_V8_HEAP_BYTES;
/** The largest delay a timer accepts. */
export const MAX_TIMEOUT_MS = MAX_TIMER_MS;
export { DEFAULT_MAX_LOG_BYTES, MAX_LOG_BYTES };

/** The default number of runs at once. */
export function defaultConcurrency(): number {
  const cores = globalThis.navigator?.hardwareConcurrency;
  return typeof cores === "number" && cores >= 1 ? Math.floor(cores) : 1;
}

/** What option messages say was being done. */
const WHERE = "configure the sandbox";

/**
 * Checks a time limit in milliseconds, by the loader's integer-option rule.
 *
 * @param value The option's value.
 * @param name The option's name, for the message.
 * @returns The value.
 * @throws {TypeError} When it is not a number.
 * @throws {RangeError} When it is not an integer in 1..2147483647.
 */
export function checkTimeoutMs(value: unknown, name: string): number {
  return readIntegerOption(WHERE, name, value, 0, {
    min: 1,
    max: MAX_TIMEOUT_MS,
    unit: "milliseconds",
  });
}

/**
 * Checks an integer option, by the loader's integer-option rule.
 *
 * @param value The option's value.
 * @param name The option's name, for the message.
 * @param min The smallest value accepted.
 * @param max The largest value accepted.
 * @param unit The unit, such as `"bytes"`; none for a count.
 * @returns The value.
 * @throws {TypeError} When it is not a number.
 * @throws {RangeError} When it is not an integer in `min..max`.
 */
export function checkInteger(
  value: unknown,
  name: string,
  min: number,
  max: number,
  unit?: string,
): number {
  return readIntegerOption(WHERE, name, value, 0, { min, max, unit });
}

/**
 * Reads a sandbox's `maxQueued` option: its default when absent.
 *
 * @throws {TypeError} When it is not a number.
 * @throws {RangeError} When it is not an integer in 0..1000000000.
 */
export function readMaxQueued(value: unknown): number {
  return readIntegerOption(
    WHERE,
    "maxQueued",
    value,
    DEFAULT_MAX_QUEUED,
    MAX_QUEUED_RANGE,
  );
}

/**
 * Reads a sandbox's `timeoutMs` option: its default when absent.
 *
 * @throws {TypeError} When it is not a number.
 * @throws {RangeError} When it is not an integer in 1..2147483647.
 */
export function readTimeoutMs(value: unknown): number {
  return value === undefined
    ? DEFAULT_TIMEOUT_MS
    : checkTimeoutMs(value, "timeoutMs");
}

/**
 * Reads a sandbox's `maxLogBytes` option: its default when absent.
 *
 * @throws {TypeError} When it is not a number.
 * @throws {RangeError} When it is not an integer in 0..MAX_LOG_BYTES.
 */
export function readMaxLogBytes(value: unknown): number {
  return value === undefined
    ? DEFAULT_MAX_LOG_BYTES
    : checkInteger(value, "maxLogBytes", 0, MAX_LOG_BYTES, "bytes");
}

/**
 * Reads a sandbox's `memoryLimitBytes` option: its default when absent.
 *
 * @throws {TypeError} When it is not a number.
 * @throws {RangeError} When it is not an integer between
 * MIN_MEMORY_LIMIT_BYTES and MAX_MEMORY_LIMIT_BYTES.
 */
export function readMemoryLimitBytes(value: unknown): number {
  return value === undefined ? DEFAULT_MEMORY_LIMIT_BYTES : checkInteger(
    value,
    "memoryLimitBytes",
    MIN_MEMORY_LIMIT_BYTES,
    MAX_MEMORY_LIMIT_BYTES,
    "bytes",
  );
}

/**
 * Checks a list of permission grants, which become one comma-separated
 * Deno flag, so no entry may hold a comma.
 *
 * @param value The option's value.
 * @param name The option's name, for the message.
 * @returns A copy of the list.
 * @param where What was being done, for the message when reading the
 * list throws.
 * @throws {TypeError} When it is not an array of non-empty strings without
 * commas or NUL characters (an entry with a comma is quoted in the
 * message), or reading it throws.
 */
export function checkGrantList(
  value: unknown,
  name: string,
  where = "create the process sandbox",
): string[] {
  // Copied before it is checked, so the grants used are the grants
  // checked, whatever the array's own methods or a getter answer later.
  const copy = copyListOption(where, name, value);
  if (copy === null) {
    throw new TypeError(`${name} must be an array of strings`);
  }
  return copy.map((entry: unknown, index) => {
    if (typeof entry !== "string" || entry === "" || entry.includes("\0")) {
      throw new TypeError(
        `${name}[${index}] must be a non-empty string without commas or NUL characters`,
      );
    }
    if (entry.includes(",")) {
      // Deno has no escape for a comma in a list flag: passed on, the
      // grant would name two paths, neither the one asked for.
      throw new TypeError(
        `${name}[${index}] ${
          operatorQuote(entry)
        } holds a comma, which the child's permission flag reads as a separator between two grants: grant a folder above it whose path holds none, or move it`,
      );
    }
    return entry;
  });
}

/**
 * Prefixes of the variables that the child's runtime, its TLS and HTTP
 * stack or the system's dynamic loader read as the child starts or
 * connects, compared in upper case. Handed to a guest's process they act
 * outside the sandbox: `NODE_OPTIONS=--require data:...` runs a script
 * before the bootstrap, `LD_PRELOAD` a native library, `HTTP_PROXY` sends
 * the requests `allowNet` lets through to a host it does not name, and
 * `DENO_*` changes the child's flags, caches and certificates.
 */
const RUNTIME_VARIABLE_PREFIXES: readonly string[] = Object.freeze([
  "DENO_",
  "NODE_",
  "LD_",
  "RUST_",
  "OTEL_",
  "MALLOC_",
  "GLIBC_",
  "SSL_CERT_",
]);

/**
 * Names of such variables without a prefix of their own (upper case).
 * `SSLKEYLOGFILE` makes the child write each TLS session's keys to the file
 * it names, a write no `allowWrite` grant covers.
 */
const RUNTIME_VARIABLE_NAMES: ReadonlySet<string> = new Set([
  "HTTP_PROXY",
  "HTTPS_PROXY",
  "ALL_PROXY",
  "NO_PROXY",
  "SSLKEYLOGFILE",
]);

/** Whether the runtime or the system reads `name` for the child itself. */
function readByRuntime(name: string): boolean {
  const upper = name.toUpperCase();
  return RUNTIME_VARIABLE_NAMES.has(upper) ||
    RUNTIME_VARIABLE_PREFIXES.some((prefix) => upper.startsWith(prefix));
}

/**
 * Checks environment variables for a child.
 *
 * @param value The option's value.
 * @param where What was being done, for the message when reading it throws.
 * @returns A copy.
 * @throws {TypeError} When names or values are not strings of the right form,
 * a name is one the runtime reads for the child itself, or reading it throws.
 */
export function checkEnv(
  value: unknown,
  where = "create the process sandbox",
): Record<string, string> {
  // A revoked Proxy throws from Array.isArray as from Object.entries.
  const isArray = readingOption(where, "env", () => Array.isArray(value));
  if (typeof value !== "object" || value === null || isArray) {
    throw new TypeError("env must be an object of string values");
  }
  const env: Record<string, string> = {};
  const entries = readingOption(where, "env", () => Object.entries(value));
  for (const [name, entry] of entries) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) {
      throw new TypeError(
        `env name ${JSON.stringify(name)} must be letters, digits and _`,
      );
    }
    if (readByRuntime(name)) {
      throw new TypeError(
        `env.${name} is refused: Deno or the system reads it as the guest's process starts or connects, where it could run code before the sandbox, send requests past allowNet, write files past allowWrite or change the child's limits; pass the value under another name`,
      );
    }
    if (typeof entry !== "string" || entry.includes("\0")) {
      throw new TypeError(
        `env.${name} must be a string without NUL characters`,
      );
    }
    env[name] = entry;
  }
  return env;
}

/** A run's arguments, checked. */
export interface CheckedRun {
  /** The guest source; empty when the declaration is refused. */
  source: string;
  /**
   * Why the declaration is refused (`DECLARATION_INVALID`), when it is: the
   * run resolves with this failure, as the QuickJS tier's does.
   */
  refused?: FailureDetail;
  /** The context as JSON text. */
  contextJson: string;
  /** The time limit. */
  timeoutMs: number;
  /** The console budget. */
  maxLogBytes: number;
  /** The bound on the JSON text of the guest's value, in bytes of UTF-8. */
  maxResultBytes: number;
  /** The caller's signal. */
  signal: AbortSignal | undefined;
  /** Whether to parse the source without running it. */
  parseOnly: boolean;
}

/** The per-run options every tier accepts. */
export interface RunOptionsInput {
  /** JSON data passed to a default-exported function. */
  context?: unknown;
  /** The guest's time limit. */
  timeoutMs?: number;
  /** Aborts the run. */
  signal?: AbortSignal;
  /** The console budget. */
  maxLogBytes?: number;
  /** The bound on the source. */
  maxSourceBytes?: number;
  /** The bound on the context's JSON text. */
  maxContextBytes?: number;
  /** The bound on the JSON text of the guest's value. */
  maxResultBytes?: number;
}

const RUN_OPTION_KEYS: OptionKeys<RunOptionsInput> = {
  ...RUN_INPUT_BOUND_KEYS,
  context: true,
  timeoutMs: true,
  signal: true,
  maxLogBytes: true,
};

/**
 * Checks `run()`'s arguments against a sandbox's defaults.
 *
 * @param input The guest source, or a declaration `{ source, packages? }`.
 * @param given The per-run options, with the context.
 * @param defaults The sandbox's tier and defaults.
 * @returns The checked run.
 * @throws {TypeError} For options of a wrong shape, an unknown option or a
 * context that is not JSON data; a declaration is never thrown for: the
 * run carries its failure in `refused`.
 * @throws {RangeError} For an out-of-range limit.
 */
export function checkRun(
  input: unknown,
  given: RunOptionsInput | undefined,
  defaults: {
    tier: string;
    timeoutMs: number;
    maxLogBytes: number;
    bounds: RunInputBounds;
  },
): CheckedRun {
  // Read once, before anything else: the declaration is the author's data,
  // a failed result whatever it is, and never read again.
  const read = readSource(input, defaults.tier);
  const options = readOptions("run the guest", given, RUN_OPTION_KEYS);
  const bounds = readRunInputBounds("run the guest", options, defaults.bounds);
  const timeoutMs = options.timeoutMs === undefined
    ? defaults.timeoutMs
    : checkTimeoutMs(options.timeoutMs, "timeoutMs");
  const maxLogBytes = options.maxLogBytes === undefined
    ? defaults.maxLogBytes
    : checkInteger(
      options.maxLogBytes,
      "maxLogBytes",
      0,
      MAX_LOG_BYTES,
      "bytes",
    );
  const signal = options.signal;
  if (signal !== undefined && !(signal instanceof AbortSignal)) {
    throw new TypeError("signal must be an AbortSignal");
  }
  const context = readContextJson(
    "run the guest",
    options.context,
    bounds.maxContextBytes,
  );
  // The same order as the QuickJS tier's: the declaration, its source's
  // size, then the context's.
  const refused = read.refused ??
    sourceOverBound(read.source, bounds.maxSourceBytes) ??
    (context.ok ? undefined : context.error);
  return {
    source: refused === undefined ? read.source : "",
    ...(refused === undefined ? {} : { refused }),
    contextJson: context.ok ? context.json : "null",
    timeoutMs,
    maxLogBytes,
    maxResultBytes: bounds.maxResultBytes,
    signal,
    parseOnly: false,
  };
}

/**
 * The source of a run's declaration, read once as every tier reads it, or
 * the failure that refuses it. These tiers run guest code without packs: a
 * declaration that names any is refused whatever its source imports.
 */
function readSource(
  input: unknown,
  tier: string,
): { source: string; refused?: FailureDetail } {
  const read = readDeclaration(input);
  if (!read.ok) return { source: "", refused: read.error };
  const { source, packages } = read.declaration;
  if (packages.length === 0) return { source };
  return {
    source: "",
    refused: {
      code: "DECLARATION_INVALID",
      name: "DeclarationError",
      message: `The declaration is invalid at packages: it names ${
        packages.length === 1 ? "a pack" : `${packages.length} packs`
      }, but the ${tier} sandbox runs guest code without packs; pass no packages, or run it on the QuickJS tier`,
    },
  };
}
