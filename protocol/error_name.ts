// This module is browser compatible.

/**
 * How a thrown error is named in a message whose text must not quote the
 * error's own message (which may name a path of the machine).
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
