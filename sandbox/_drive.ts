/**
 * The steps every run of both tiers takes around the tier's own work:
 * telemetry, the import scan, the concurrency gate, cancellation before
 * start, and the result's shape and metrics.
 *
 * @module
 */

import {
  createLogCollector,
  type FailureDetail,
  failureResult,
  type LogCollector,
  runFailures,
  successResult,
} from "../protocol/run_result.ts";
import type {
  JsonValue,
  RunMetrics,
  SandboxResult,
} from "../protocol/sandbox_result.ts";
import type { CheckedRun } from "./_options.ts";
import { scanGuestImports } from "./_scan_imports.ts";
import type { Slots } from "../protocol/slots.ts";
import { startRunTelemetry } from "../protocol/run_telemetry.ts";

/** How a tier's work ended. */
export type Answer =
  | { ok: true; value: JsonValue; exitCode?: number }
  | { ok: false; error: FailureDetail; exitCode?: number };

/**
 * A failed answer.
 *
 * @param error The failure.
 * @param exitCode The child's exit code, when one ended.
 * @returns The answer.
 */
export function failed(error: FailureDetail, exitCode?: number): Answer {
  return exitCode === undefined
    ? { ok: false, error }
    : { ok: false, error, exitCode };
}

/** What {@linkcode driveRun} needs from a tier. */
export interface DriveOptions {
  /** The tier, for metrics and telemetry. */
  tier: "worker" | "process";
  /** The checked run. */
  run: CheckedRun;
  /** The tier's concurrency gate. */
  slots: Slots;
  /** What a run turned away by a closed gate reports. */
  disposed(): boolean;
  /**
   * The tier's work, with a slot held. `run` is the checked run, with
   * `parseOnly` set when the source must only be parsed.
   */
  execute(logs: LogCollector, run: CheckedRun): Promise<Answer>;
}

/**
 * Runs the common steps around a tier's work.
 *
 * @param options The tier's part.
 * @returns The result, recorded in telemetry.
 */
export async function driveRun(options: DriveOptions): Promise<SandboxResult> {
  const began = performance.now();
  const telemetry = startRunTelemetry(options.tier);
  const logs = createLogCollector(options.run.maxLogBytes);
  let answer: Answer;
  try {
    answer = await attempt(options, logs);
  } catch (error) {
    telemetry.endThrown(error);
    throw error;
  }
  const metrics: RunMetrics = {
    tier: options.tier,
    durationMs: performance.now() - began,
  };
  if (answer.exitCode !== undefined) metrics.exitCode = answer.exitCode;
  return telemetry.end(
    answer.ok
      ? successResult(answer.value, logs, metrics)
      : failureResult(answer.error, logs, metrics),
  );
}

async function attempt(
  options: DriveOptions,
  logs: LogCollector,
): Promise<Answer> {
  const { signal } = options.run;
  if (signal?.aborted) return failed(runFailures.aborted());
  if (options.run.refused !== undefined) return failed(options.run.refused);
  const scan = await scanGuestImports(options.run.source);
  if (scan.kind === "denied") return failed(scan.failure);
  const slot = await options.slots.acquire(signal);
  if (slot === "busy") {
    return failed(
      runFailures.busy(`${options.tier} sandbox`, options.slots.maxQueued),
    );
  }
  if (slot === "ended") {
    return failed(
      options.disposed()
        ? runFailures.disposed(`${options.tier} sandbox`)
        : runFailures.aborted(),
    );
  }
  try {
    if (signal?.aborted) return failed(runFailures.aborted());
    if (scan.kind === "clean") return await options.execute(logs, options.run);
    // The engine only parses; if it accepts what the lexer could not read,
    // the lexer's failure stands, since the imports were not checked.
    const parsed = await options.execute(logs, {
      ...options.run,
      parseOnly: true,
    });
    return parsed.ok ? failed(scan.failure, parsed.exitCode) : parsed;
  } finally {
    options.slots.release();
  }
}
