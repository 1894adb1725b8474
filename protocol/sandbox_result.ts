// This module is browser compatible.

import { z } from "./_zod.ts";
import type { Schema } from "./schema.ts";
import { LOG_LEVELS, type LogLevel } from "./log_levels.ts";
import { ERROR_CODES, type ErrorCode } from "./error_codes.ts";

/** A JSON value: what crosses every sandbox boundary. */
export type JsonValue =
  | null
  | boolean
  | number
  | string
  | JsonValue[]
  | { [key: string]: JsonValue };

/** Where guest code ran. */
export type Tier = "quickjs" | "worker" | "process" | "vm";

/** One console call of guest code, formatted as text. */
export interface LogEntry {
  /** The console method. */
  level: LogLevel;
  /** The arguments, formatted and joined with spaces. */
  message: string;
}

/** The error of a failed run. */
export interface SandboxError {
  /**
   * The stable error code: one of {@linkcode ErrorCode}, so a check of
   * `result.error.code` against a code that does not exist fails to compile.
   */
  code: ErrorCode;
  /** The thrown error's name, or the kind of failure. */
  name: string;
  /** What happened and what to do next. */
  message: string;
}

/** How a run went, besides its value. */
export interface RunMetrics {
  /** Where the run happened. */
  tier: Tier;
  /** Wall time of the run in milliseconds, from start to answer. */
  durationMs: number;
  /** The exit code of a subprocess run, when there was one. */
  exitCode?: number;
}

/** Fields every sandbox result has. */
export interface SandboxResultBase {
  /** Captured console output, in order, capped at `maxLogBytes`. */
  logs: LogEntry[];
  /** Whether console output was dropped because of the cap. */
  logsTruncated: boolean;
  /** How the run went. */
  metrics: RunMetrics;
}

/** A run that produced a value. */
export interface SandboxSuccess extends SandboxResultBase {
  /** Always `true`. */
  ok: true;
  /** The guest's default export (or what it resolved to), as JSON data. */
  value: JsonValue;
}

/** A run that failed; guest failures are data, never exceptions. */
export interface SandboxFailure extends SandboxResultBase {
  /** Always `false`. */
  ok: false;
  /** What went wrong, with a stable code. */
  error: SandboxError;
}

/** The answer of every sandbox tier. */
export type SandboxResult = SandboxSuccess | SandboxFailure;

const JsonValueSchema: z.ZodType<JsonValue> = z.lazy(() =>
  z.union([
    z.null(),
    z.boolean(),
    z.number(),
    z.string(),
    z.array(JsonValueSchema),
    z.record(z.string(), JsonValueSchema),
  ])
);

const base = {
  logs: z.array(z.strictObject({
    level: z.enum(LOG_LEVELS),
    message: z.string(),
  })),
  logsTruncated: z.boolean(),
  metrics: z.strictObject({
    tier: z.enum(["quickjs", "worker", "process", "vm"]),
    durationMs: z.number().nonnegative(),
    exitCode: z.number().int().optional(),
  }),
};

const sandboxResult: z.ZodType<SandboxResult> = z
  .discriminatedUnion("ok", [
    z.strictObject({ ok: z.literal(true), value: JsonValueSchema, ...base }),
    z.strictObject({
      ok: z.literal(false),
      error: z.strictObject({
        code: z.enum(Object.keys(ERROR_CODES) as [ErrorCode, ...ErrorCode[]]),
        name: z.string(),
        message: z.string(),
      }),
      ...base,
    }),
  ]);

/**
 * The answer of every sandbox tier: `{ ok: true, value }` or
 * `{ ok: false, error: { code, name, message } }`, with logs and metrics.
 *
 * @example
 * ```ts
 * import { SandboxResultSchema } from "@cordon/cordon/protocol";
 * import assert from "node:assert/strict";
 *
 * const result = SandboxResultSchema.parse({
 *   ok: true, value: 3, logs: [], logsTruncated: false,
 *   metrics: { tier: "quickjs", durationMs: 1.5 },
 * });
 * assert.equal(result.ok, true);
 * ```
 */
export const SandboxResultSchema: Schema<SandboxResult> = sandboxResult;
