// This module is browser compatible.

import type { ErrorCode } from "./error_codes.ts";
import type {
  JsonValue,
  LogEntry,
  RunMetrics,
  SandboxFailure,
  SandboxSuccess,
} from "./sandbox_result.ts";

/** The default cap on captured console output, in bytes of UTF-8. */
export const DEFAULT_MAX_LOG_BYTES = 64 * 1024;

/**
 * The largest `maxLogBytes` any tier accepts: the captured lines are held
 * in the host's memory until the run ends.
 */
export const MAX_LOG_BYTES = 64 * 1024 * 1024;

/**
 * The largest `maxResultBytes` (the bound on the JSON text of a run's
 * result on the QuickJS, worker and process tiers, whose default is
 * 4 MiB): a result whose text is longer fails with
 * `RESULT_NOT_SERIALIZABLE` ({@linkcode runFailures}`.resultTooLarge()`),
 * with the run's logs.
 * The text reaches the host as UTF-8 (at most 3 bytes a code unit) and
 * becomes one string there, and V8, in Deno, Node and Chromium, makes no
 * string longer than 2 ** 29 - 24 code units nor decodes more bytes than
 * that at once: 3 * 2 ** 27 keeps a result and its envelope below both.
 *
 * @example
 * ```ts
 * import { MAX_RESULT_JSON_CHARS, runFailures } from "@cordon/cordon/protocol";
 * import assert from "node:assert/strict";
 *
 * const failure = runFailures.resultTooLarge(MAX_RESULT_JSON_CHARS);
 * assert.equal(failure.code, "RESULT_NOT_SERIALIZABLE");
 * ```
 */
export const MAX_RESULT_JSON_CHARS = 2 ** 27;

/**
 * What a sandbox child process (a worker or process tier run, a plugin
 * realm) may hold besides its `memoryLimitBytes` before the host ends it
 * with `OUT_OF_MEMORY`: the runtime, its code and V8's young generation.
 * V8's heap limit does not count `ArrayBuffer` contents, so on Linux the
 * host reads the child's resident memory every
 * {@linkcode RESIDENT_POLL_MS} ms and holds it to the limit plus this.
 */
export const RESIDENT_MARGIN_BYTES = 128 * 1024 * 1024;

/** How often the host reads a sandbox child's resident memory, in ms. */
export const RESIDENT_POLL_MS = 50;

/** Captured console output with a byte cap. */
export interface LogCollector {
  /** Records one entry unless the cap is reached; later entries are dropped. */
  push(level: LogEntry["level"], message: string): void;
  /** The entries kept so far. */
  readonly logs: LogEntry[];
  /** Whether anything was dropped. */
  readonly truncated: boolean;
}

// Stateless, so one serves every collector.
const encoder = new TextEncoder();

/**
 * Creates a log collector that keeps entries while their messages fit in
 * `maxLogBytes` of UTF-8, and drops the rest, setting `truncated`. An empty
 * message counts as one byte, so the cap bounds the number of entries too.
 *
 * @param maxLogBytes The cap, in bytes.
 * @returns A new collector.
 *
 * @example
 * ```ts
 * import { createLogCollector } from "@cordon/cordon/protocol";
 * import assert from "node:assert/strict";
 *
 * const collector = createLogCollector(5);
 * collector.push("log", "abc");
 * collector.push("log", "def");
 * assert.deepEqual(collector.logs, [{ level: "log", message: "abc" }]);
 * assert.equal(collector.truncated, true);
 * ```
 */
export function createLogCollector(
  maxLogBytes: number = DEFAULT_MAX_LOG_BYTES,
): LogCollector {
  const logs: LogEntry[] = [];
  let used = 0;
  let truncated = false;
  return {
    push(level, message) {
      if (truncated) return;
      // Counting UTF-16 units first spares encoding huge messages.
      // At least one byte: a guest calling console.log() in a loop would
      // otherwise fill the host's memory with empty entries.
      const size = message.length > maxLogBytes
        ? message.length
        : Math.max(1, encoder.encode(message).length);
      if (used + size > maxLogBytes) {
        truncated = true;
        return;
      }
      used += size;
      logs.push({ level, message });
    },
    logs,
    get truncated() {
      return truncated;
    },
  };
}

/**
 * Builds a successful result.
 *
 * @param value The guest's value, already JSON data.
 * @param logs The collected logs.
 * @param metrics How the run went.
 * @returns The result.
 *
 * @example
 * ```ts
 * import { createLogCollector, successResult } from "@cordon/cordon/protocol";
 * import assert from "node:assert/strict";
 *
 * const result = successResult(1, createLogCollector(), { tier: "worker", durationMs: 2 });
 * assert.equal(result.value, 1);
 * ```
 */
export function successResult(
  value: JsonValue,
  logs: LogCollector,
  metrics: RunMetrics,
): SandboxSuccess {
  return {
    ok: true,
    value,
    logs: logs.logs,
    logsTruncated: logs.truncated,
    metrics,
  };
}

/** The error part of a failed result. */
export interface FailureDetail {
  /** The stable error code. */
  code: ErrorCode;
  /** The error's name. */
  name: string;
  /** What happened and what to do next. */
  message: string;
}

/**
 * Builds a failed result.
 *
 * @param error The code, name and message.
 * @param logs The collected logs.
 * @param metrics How the run went.
 * @returns The result.
 *
 * @example
 * ```ts
 * import { createLogCollector, failureResult, runFailures } from "@cordon/cordon/protocol";
 * import assert from "node:assert/strict";
 *
 * const result = failureResult(runFailures.timeout(50), createLogCollector(), {
 *   tier: "worker",
 *   durationMs: 51,
 * });
 * assert.equal(result.error.code, "TIMEOUT");
 * ```
 */
export function failureResult(
  error: FailureDetail,
  logs: LogCollector,
  metrics: RunMetrics,
): SandboxFailure {
  return {
    ok: false,
    error: { code: error.code, name: error.name, message: error.message },
    logs: logs.logs,
    logsTruncated: logs.truncated,
    metrics,
  };
}

/**
 * The failures every tier reports with the same code, name and message.
 *
 * @example
 * ```ts
 * import { runFailures } from "@cordon/cordon/protocol";
 * import assert from "node:assert/strict";
 *
 * assert.equal(runFailures.aborted().code, "ABORTED");
 * ```
 */
export const runFailures: {
  timeout(timeoutMs: number): FailureDetail;
  preparationTimeout(timeoutMs: number): FailureDetail;
  aborted(): FailureDetail;
  outOfMemory(memoryLimitBytes?: number): FailureDetail;
  stackOverflow(): FailureDetail;
  disposed(what: string): FailureDetail;
  busy(what: string, maxQueued: number): FailureDetail;
  requesterBusy(what: string, maxQueuedPerRequester: number): FailureDetail;
  resultTooLarge(maxResultBytes: number): FailureDetail;
} = Object.freeze({
  timeout: (timeoutMs: number): FailureDetail => ({
    code: "TIMEOUT",
    name: "TimeoutError",
    message:
      `The run exceeded its time limit of ${timeoutMs} ms: make the code finish sooner or raise timeoutMs`,
  }),
  // The time limit passed while the catalog fetched the declared packs or
  // checked entitlement: no guest code ran, so the cause is the server.
  preparationTimeout: (timeoutMs: number): FailureDetail => ({
    code: "TIMEOUT",
    name: "TimeoutError",
    message:
      `The run exceeded its time limit of ${timeoutMs} ms before its code started, waiting for the catalog (fetching the declared packs or checking entitlement): check that the delivery server and any proxy in front of it answer in time, or raise timeoutMs`,
  }),
  aborted: (): FailureDetail => ({
    code: "ABORTED",
    name: "AbortError",
    message: "The run was aborted by its caller",
  }),
  outOfMemory: (memoryLimitBytes?: number): FailureDetail => ({
    code: "OUT_OF_MEMORY",
    name: "OutOfMemoryError",
    message: memoryLimitBytes === undefined
      ? "The run exceeded its memory limit: use less memory or raise memoryLimitBytes"
      : `The run exceeded its memory limit of ${memoryLimitBytes} bytes: use less memory or raise memoryLimitBytes`,
  }),
  stackOverflow: (): FailureDetail => ({
    code: "STACK_OVERFLOW",
    name: "StackOverflowError",
    message:
      "The run exceeded its stack limit: reduce recursion depth or raise maxStackSizeBytes",
  }),
  disposed: (what: string): FailureDetail => ({
    code: "SANDBOX_DISPOSED",
    name: "CordonError",
    message: `Cannot use a disposed ${what}: create a new one`,
  }),
  // Refused before it waited: the queue of runs waiting for a runner is
  // full. Nothing ran, so the same run may be sent again.
  busy: (what: string, maxQueued: number): FailureDetail => ({
    code: "SANDBOX_BUSY",
    name: "CordonError",
    message:
      `The ${what} has as many runs waiting for a runner as its maxQueued allows (${maxQueued}): retry once runs finish, or raise maxQueued`,
  }),
  // One requester's runs fill its own share of the queue: others may still wait.
  requesterBusy: (
    what: string,
    maxQueuedPerRequester: number,
  ): FailureDetail => ({
    code: "SANDBOX_BUSY",
    name: "CordonError",
    message:
      `The ${what} has as many runs of this requester waiting for a runner as its maxQueuedPerRequester allows (${maxQueuedPerRequester}): retry once this requester's runs finish, or raise maxQueuedPerRequester`,
  }),
  // A result whose JSON text holds more bytes of UTF-8 than maxResultBytes.
  resultTooLarge: (maxResultBytes: number): FailureDetail => ({
    code: "RESULT_NOT_SERIALIZABLE",
    name: "RangeError",
    message:
      `Cannot return a value whose JSON text holds more than maxResultBytes (${maxResultBytes}) bytes of UTF-8 from a sandbox: return less data, or raise maxResultBytes`,
  }),
});
