// This module is browser compatible.

/**
 * The messages between a QuickJS pool and its runners. The host sends
 * `init` once, then one `run` at a time; a runner answers `ready` once,
 * then one `result` per run. Over a process's pipes each message is one
 * line of JSON; over a worker it is the same object, cloned.
 *
 * @module
 */

import type { Schema } from "../protocol/schema.ts";
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
    contextJson: string | undefined;
  };

/** What a runner sends its host. */
export type RunnerMessage =
  | { kind: "ready" }
  | {
    kind: "result";
    id: number;
    result: SandboxResult;
    /** Set when the runner dropped an engine: replace the runner to get its memory back. */
    recycle: boolean;
  };

/** Reads a runner's message, or `null` when it is not one. */
export type RunnerMessageReader = (data: unknown) => RunnerMessage | null;

/**
 * The reader of runners' messages. A runner runs guest code, so nothing it
 * says is taken on trust: its results are checked against the sandbox
 * result's schema, loaded here, when a pool starts runners, rather than
 * when the loader is imported, so a process that runs in-thread never
 * loads the schema library.
 */
export async function runnerMessageReader(): Promise<RunnerMessageReader> {
  const { SandboxResultSchema } = await import(
    "../protocol/sandbox_result.ts"
  );
  return (data) => readRunnerMessage(data, SandboxResultSchema);
}

function readRunnerMessage(
  data: unknown,
  schema: Schema<SandboxResult>,
): RunnerMessage | null {
  if (typeof data !== "object" || data === null) return null;
  const message = data as Record<string, unknown>;
  if (message.kind === "ready") return { kind: "ready" };
  if (
    message.kind !== "result" || typeof message.id !== "number" ||
    typeof message.recycle !== "boolean"
  ) {
    return null;
  }
  if (!schema.safeParse(message.result).success) return null;
  return {
    kind: "result",
    id: message.id,
    // The data as it came, now checked: the schema's copy of a record
    // assigns its keys, so a key "__proto__" of a guest's value would set
    // the copy's prototype instead of staying a key.
    result: message.result as SandboxResult,
    recycle: message.recycle,
  };
}
