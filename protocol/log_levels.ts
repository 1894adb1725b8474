// This module is browser compatible.

/**
 * The console methods whose calls every tier captures; a line of any other
 * level a realm sends is not kept.
 *
 * @example Tell a captured level
 * ```ts
 * import assert from "node:assert/strict";
 * import { isLogLevel, LOG_LEVELS } from "@cordon/cordon/protocol";
 *
 * assert.ok(LOG_LEVELS.includes("warn"));
 * assert.equal(isLogLevel("warn"), true);
 * assert.equal(isLogLevel("trace"), false);
 * ```
 */
export const LOG_LEVELS: readonly ["log", "info", "warn", "error", "debug"] =
  Object.freeze(["log", "info", "warn", "error", "debug"] as const);

/** A console method whose calls are captured: one of {@linkcode LOG_LEVELS}. */
export type LogLevel = typeof LOG_LEVELS[number];

/**
 * Whether `level` is one of {@linkcode LOG_LEVELS}.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 * import { isLogLevel } from "@cordon/cordon/protocol";
 *
 * assert.equal(isLogLevel("log"), true);
 * assert.equal(isLogLevel("out-of-memory"), false);
 * ```
 */
export function isLogLevel(level: string): level is LogLevel {
  return (LOG_LEVELS as readonly string[]).includes(level);
}
