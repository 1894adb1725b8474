// This module is browser compatible.

/**
 * Starts what a QuickJS run needs, the engine and the import scanner, for
 * the in-thread loader and for a pool's runner alike, and says in one place
 * why they could not start where the runtime refuses to compile
 * WebAssembly (a Content-Security-Policy without `'wasm-unsafe-eval'`).
 *
 * @module
 */

import type { QuickJSSyncVariant } from "quickjs-emscripten-core";
import { initScanner } from "../policy/scan_module.ts";
import { CordonError } from "../protocol/cordon_error.ts";
import { Executor } from "./_executor.ts";
import {
  firstLine,
  thrownLine,
  unsupportedVariant,
} from "./_variant_support.ts";
import singlefileVariant from "@jitl/quickjs-singlefile-browser-release-sync";

const DEFAULT_VARIANT = singlefileVariant as unknown as QuickJSSyncVariant;

const { Module: WasmModule } = WebAssembly;

/** The smallest valid WebAssembly module: its magic number and version. */
const EMPTY_WASM_MODULE = new Uint8Array([0, 97, 115, 109, 1, 0, 0, 0]);

/** Why a runtime that refuses WebAssembly cannot run QuickJS. */
export const WASM_REFUSED_MESSAGE =
  "Cannot start the QuickJS engine: this context refuses to compile WebAssembly, as a Content-Security-Policy without 'wasm-unsafe-eval' does; add 'wasm-unsafe-eval' to the script-src of the page and of the pool's runner script";

/**
 * Whether this runtime compiles WebAssembly at all. Asked only after a
 * start failed, since the failure itself (an Emscripten abort) does not
 * say why in a form worth parsing.
 */
function compilesWasm(): boolean {
  try {
    new WasmModule(EMPTY_WASM_MODULE);
    return true;
  } catch {
    return false;
  }
}

/**
 * Deno's refusal of a read, which a build that loads its `.wasm` file meets
 * on a host without `--allow-read` (the build is fine, the host is not), in
 * the runtime's words without Emscripten's `Aborted(...)` around them; or
 * `undefined` for any other failure.
 */
function permissionRefusal(error: unknown): string | undefined {
  return /\b(?:NotCapable|PermissionDenied)\b[^)]*/.exec(thrownLine(error))
    ?.[0];
}

/**
 * What an Emscripten abort of the default build's start says went wrong
 * (`Aborted(<what>). Build with -sASSERTIONS ...`), or `undefined` for a
 * failure that is no such abort: the WebAssembly did not compile or
 * instantiate, which the runtime decides, not the build.
 */
function startAbort(error: unknown): string | undefined {
  return /^Aborted\((.*)\)\. Build with/.exec(thrownLine(error))?.[1]
    ?.slice(0, 200);
}

/** Why the default build did not start, with `what` the runtime said. */
function wasmStartFailure(what: string, error: unknown): CordonError {
  return new CordonError(
    "SANDBOX_UNAVAILABLE",
    `Cannot start the QuickJS engine: its WebAssembly did not start (${what}); the runtime may lack the memory for a WebAssembly instance, or a script replaced WebAssembly's functions (load cordon before scripts you do not control); try again once memory is free, or remove what replaced them`,
    { cause: error },
  );
}

/**
 * Creates an executor whose first engine holds runs of up to
 * `memoryLimitBytes`, once the import scanner is ready too.
 *
 * @throws {CordonError} `SANDBOX_UNAVAILABLE` when the runtime refuses to
 * compile WebAssembly, to read a build's WebAssembly file, or to start the
 * default build's WebAssembly (Emscripten aborts); `QUICKJS_VARIANT_UNSUPPORTED` when a build other
 * than the default fails to start; any other failure as it came.
 */
export async function startExecutor(
  variant: QuickJSSyncVariant,
  memoryLimitBytes: number,
): Promise<Executor> {
  try {
    const [executor] = await Promise.all([
      Executor.create(variant, memoryLimitBytes),
      initScanner(),
    ]);
    return executor;
  } catch (error) {
    if (!compilesWasm()) {
      throw new CordonError("SANDBOX_UNAVAILABLE", WASM_REFUSED_MESSAGE);
    }
    if (error instanceof CordonError) throw error;
    if (variant === DEFAULT_VARIANT) {
      const abort = startAbort(error);
      throw abort === undefined ? error : wasmStartFailure(abort, error);
    }
    const refusal = permissionRefusal(error);
    if (refusal !== undefined) {
      throw new CordonError(
        "SANDBOX_UNAVAILABLE",
        `Cannot start the QuickJS engine: the runtime may not read its WebAssembly file (${refusal}); grant read access to it, or omit variant for the default build, which holds its WebAssembly in its code`,
        { cause: error },
      );
    }
    // Another build failed on its way to a hardened engine: one of another
    // quickjs-emscripten version, a debug build (its sanitizer needs memory
    // the cap does not leave), one for another environment, or no build.
    throw unsupportedVariant(`failed to start: ${firstLine(error)}`, error);
  }
}
