// This module is browser compatible.

/**
 * How a thrown error is named in a message: by its name alone where the
 * error's own message must not be quoted (it may name a path of the
 * machine), or with the first line of that message where what was thrown
 * is a fault of cordon's own code, which the message must let be found.
 *
 * @module
 */

/** An OS error's POSIX code: `ENOSPC`, `EROFS`, `ENAMETOOLONG`. */
const POSIX_CODE = /^E[A-Z0-9]{1,15}$/;
/** Node's own code: `ERR_ACCESS_DENIED`, its permission model's refusal. */
const NODE_CODE = /^ERR_[A-Z0-9_]{1,60}$/;

/**
 * The code, of the shape `pattern` gives, of an error the runtime throws as
 * a plain `Error`, or `undefined`.
 */
function plainErrorCode(error: Error, pattern: RegExp): string | undefined {
  const { code } = error as { code?: unknown };
  return error.name === "Error" && typeof code === "string" &&
      pattern.test(code)
    ? code
    : undefined;
}

/**
 * The POSIX code (`ENOSPC`, `EROFS`, `ENAMETOOLONG`) of an OS error the
 * runtime has no class for and throws as a plain `Error`, or `undefined`.
 */
export function posixCodeOf(error: Error): string | undefined {
  return plainErrorCode(error, POSIX_CODE);
}

/**
 * The name of a thrown error, for a message: its class, or the code of an
 * error the runtime throws as a plain `Error`, whose name alone says
 * nothing (an OS error's POSIX code, or Node's own `ERR_` code); `"Error"`
 * for a thrown value that is no error.
 */
export function errorName(error: unknown): string {
  if (!(error instanceof Error)) return "Error";
  return posixCodeOf(error) ?? plainErrorCode(error, NODE_CODE) ??
    error.name;
}

/** The most characters of a thrown error's message kept in a summary. */
const MAX_SUMMARY_CHARS = 500;

/**
 * A thrown value as `Name: message`, on one line and cut short, for the
 * message of a failure that cordon's own code caused; a value that is no
 * error is only named. Only for faults of cordon's code: an error of the
 * system (a file that could not be read) may name a path, and is named
 * with {@linkcode errorName} alone.
 *
 * @example
 * ```ts
 * import assert from "node:assert/strict";
 *
 * assert.equal(thrownSummary(new TypeError("x is not a function\nat …")), "TypeError: x is not a function");
 * assert.equal(thrownSummary("text"), "Error");
 * ```
 */
export function thrownSummary(error: unknown): string {
  const name = errorName(error);
  if (!(error instanceof Error)) return name;
  const message = String(error.message).split("\n")[0]!;
  return message === ""
    ? name
    : `${name}: ${
      message.length > MAX_SUMMARY_CHARS
        ? `${message.slice(0, MAX_SUMMARY_CHARS)}…`
        : message
    }`;
}
