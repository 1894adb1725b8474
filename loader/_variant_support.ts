// This module is browser compatible.

/**
 * Which quickjs-emscripten builds the loader runs on, and the error that
 * refuses any other. Every guarantee of the loader (the memory cap, the
 * snapshot, the hardened intrinsics, the answers of the fixture table)
 * rests on what the release sync builds of quickjs-emscripten 0.32 do; a
 * build that does otherwise is refused when the loader is created, never
 * run with a guarantee quietly lost.
 *
 * @module
 */

import { CordonError } from "../protocol/cordon_error.ts";

/** What to pass instead, said at the end of every refusal. */
const SUPPORTED =
  "pass a release sync build of quickjs-emscripten 0.32 on QuickJS, such as @jitl/quickjs-wasmfile-release-sync, or omit variant for the default @jitl/quickjs-singlefile-browser-release-sync";

/**
 * The refusal of a variant the loader cannot keep its guarantees on.
 *
 * @param reason Why, after "this variant".
 * @param cause The error the variant failed with, if any.
 * @returns A `CordonError` with the code `QUICKJS_VARIANT_UNSUPPORTED`.
 */
export function unsupportedVariant(
  reason: string,
  cause?: unknown,
): CordonError {
  return new CordonError(
    "QUICKJS_VARIANT_UNSUPPORTED",
    `Cannot create the QuickJS loader: this variant ${reason}; ${SUPPORTED}`,
    cause === undefined ? undefined : { cause },
  );
}

/**
 * The first line of what a build threw, whole. A thrown object with a
 * string `message` counts as an error: Emscripten ends a program with an
 * `ExitStatus` that is no `Error`.
 */
export function thrownLine(error: unknown): string {
  const message = typeof error === "object" && error !== null
    ? (error as { message?: unknown }).message
    : undefined;
  const text = typeof message === "string" ? message : String(error);
  return text.split("\n", 1)[0]!;
}

/** The first line of an error's message, cut short, for a refusal that names it. */
export function firstLine(error: unknown): string {
  return thrownLine(error).slice(0, 200);
}
