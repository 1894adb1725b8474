// This module is browser compatible.

/**
 * The messages between a QuickJS pool and its runners. The host sends
 * `init` once, then one `run` at a time; a runner answers `ready` once
 * (or `unavailable`, when the runtime cannot host its engine, and no more),
 * then, per run, a `log` for each console line it keeps as the guest logs
 * it, a `truncated` when it drops one at the run's `maxLogBytes`, and one
 * `result`. The lines reach the host while the guest still runs, so a run
 * the pool kills keeps what it logged; a finished run's result carries its
 * logs itself. Over a process's pipes each message is one line of JSON;
 * over a worker it is the same object, cloned.
 *
 * @module
 */

import { isLogLevel, type LogLevel } from "../protocol/log_levels.ts";
import { isSandboxResult } from "../protocol/read_sandbox_result.ts";
import type { SandboxResult } from "../protocol/sandbox_result.ts";
import type { RunLimits } from "./_limits.ts";
import type { PreparedRun } from "./_prepare.ts";

/** What the host sends a runner. */
export type HostMessage =
  | {
    kind: "init";
    /** The memory limit the runner's first engine holds, in bytes. */
    memoryLimitBytes: number;
  }
  | {
    kind: "run";
    id: number;
    prepared: PreparedRun;
    limits: RunLimits;
    contextJson: string;
    /** The bound on the JSON text of the guest's value, in bytes of UTF-8. */
    maxResultBytes: number;
  };

/** What a runner sends its host. */
export type RunnerMessage =
  | { kind: "ready" }
  | {
    /** Sent instead of `ready` when this runtime cannot host the engine. */
    kind: "unavailable";
    /** Why, and what to change. */
    message: string;
    /**
     * `REALM_CODE_ALTERED` when the runner's bundle changed cordon's realm
     * code; otherwise absent, for `SANDBOX_UNAVAILABLE`.
     */
    code?: "REALM_CODE_ALTERED";
  }
  | {
    kind: "log";
    /** The run that logged the line. */
    id: number;
    level: LogLevel;
    message: string;
  }
  | {
    kind: "truncated";
    /** The run whose console output passed its `maxLogBytes`. */
    id: number;
  }
  | {
    kind: "result";
    id: number;
    result: SandboxResult;
    /** Set when the runner dropped an engine: replace the runner to get its memory back. */
    recycle: boolean;
  };

/**
 * Reads a runner's message, or `null` when it is not one. A runner runs
 * guest code, so nothing it says is taken on trust.
 */
export function readRunnerMessage(data: unknown): RunnerMessage | null {
  if (typeof data !== "object" || data === null) return null;
  const message = data as Record<string, unknown>;
  if (message.kind === "ready") return { kind: "ready" };
  if (message.kind === "unavailable") {
    if (typeof message.message !== "string") return null;
    return message.code === "REALM_CODE_ALTERED"
      ? { kind: "unavailable", message: message.message, code: message.code }
      : { kind: "unavailable", message: message.message };
  }
  if (typeof message.id !== "number") return null;
  if (message.kind === "log") return readLog(message.id, message);
  if (message.kind === "truncated") {
    return { kind: "truncated", id: message.id };
  }
  if (
    message.kind !== "result" || typeof message.recycle !== "boolean"
  ) {
    return null;
  }
  if (!isSandboxResult(message.result)) return null;
  return {
    kind: "result",
    id: message.id,
    // The data as it came, now checked: a copy of a record that assigned
    // its keys would turn a key "__proto__" of a guest's value into the
    // copy's prototype.
    result: message.result as SandboxResult,
    recycle: message.recycle,
  };
}

function readLog(
  id: number,
  message: Record<string, unknown>,
): RunnerMessage | null {
  const { level, message: text } = message;
  if (
    typeof level !== "string" || !isLogLevel(level) || typeof text !== "string"
  ) {
    return null;
  }
  return { kind: "log", id, level, message: text };
}
