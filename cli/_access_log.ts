/**
 * The delivery server's access log line. What the client sent goes through
 * {@linkcode operatorText}, so it cannot move the cursor, recolour or clear
 * a terminal, forge a line, or reorder what a reader sees.
 *
 * @module
 */

import type { DeliveryRequestInfo } from "../delivery/handler.ts";
import { operatorText } from "../protocol/operator_text.ts";

/** The longest request target kept in a log line, in characters. */
export const MAX_LOGGED_TARGET_CHARS = 512;
/** The longest request method kept in a log line, in characters. */
export const MAX_LOGGED_METHOD_CHARS = 32;

/**
 * Formats one access log line: method, target, status, error code when
 * there is one, and the handler's time, such as
 * `GET /api/sandbox-modules/abc 404 MODULE_NOT_FOUND 0.3ms`. The method and
 * target are escaped and bounded by {@linkcode operatorText}.
 *
 * @param info What the handler answered.
 * @returns The line, without a line break.
 */
export function accessLogLine(info: DeliveryRequestInfo): string {
  const code = info.code === undefined ? "" : ` ${info.code}`;
  return `${operatorText(info.method, MAX_LOGGED_METHOD_CHARS)} ${
    operatorText(info.path, MAX_LOGGED_TARGET_CHARS)
  } ${info.status}${code} ${info.durationMs.toFixed(1)}ms`;
}
