// This module is browser compatible.

/**
 * The QuickJS loader: runs a declaration's guest ES module in a fresh
 * QuickJS context with the import policy, hardening and limits, in Deno and
 * in browsers alike.
 *
 * @module
 */

import { hasOwnKey } from "../protocol/host_fields.ts";
import type { QuickJSSyncVariant } from "quickjs-emscripten-core";
import singlefileVariant from "@jitl/quickjs-singlefile-browser-release-sync";
import type { SandboxModuleCatalog } from "../catalog/types.ts";
import { readCatalogOption } from "./_catalog_option.ts";
import { CordonError } from "../protocol/cordon_error.ts";
import type { DeclarationInput } from "../protocol/declaration.ts";
import {
  type ReadDeclaration,
  readDeclaration,
} from "../protocol/read_declaration.ts";
import type { Requester } from "../protocol/delivery.ts";
import {
  createLogCollector,
  type FailureDetail,
  failureResult,
  runFailures,
  successResult,
} from "../protocol/run_result.ts";
import type { JsonValue, SandboxResult } from "../protocol/sandbox_result.ts";
import { startRunTelemetry } from "../protocol/run_telemetry.ts";
import type { Executor } from "./_executor.ts";
import {
  type OptionKeys,
  readingOption,
  readOptions,
} from "../protocol/options.ts";
import {
  DEFAULT_LIMITS,
  LIMIT_KEYS,
  readLimits,
  type RunLimits,
} from "./_limits.ts";
import {
  inputRefusal,
  prepareRun,
  readRunSettings,
  type RunSettings,
} from "./_prepare.ts";
import {
  DEFAULT_RUN_INPUT_BOUNDS,
  readRunInputBounds,
  RUN_INPUT_BOUND_KEYS,
  type RunInputBoundOptions,
  type RunInputBounds,
} from "../protocol/run_inputs.ts";
import { startExecutor } from "./_start_executor.ts";
import { unsupportedVariant } from "./_variant_support.ts";

/**
 * A quickjs-emscripten synchronous build variant: the default export of
 * `@jitl/quickjs-singlefile-browser-release-sync`,
 * `@jitl/quickjs-wasmfile-release-sync` or another release `-sync` build
 * of quickjs-emscripten 0.32 on QuickJS. `createQuickJSLoader` refuses any
 * other build (asyncify, debug, quickjs-ng, asm.js, another version) with
 * `QUICKJS_VARIANT_UNSUPPORTED`.
 */
export interface QuickJSVariant {
  /** Always `"sync"`. */
  readonly type: "sync";
  /** Imports the variant's FFI bindings. */
  readonly importFFI: () => Promise<unknown>;
  /** Imports the variant's Emscripten module loader. */
  readonly importModuleLoader: () => Promise<unknown>;
}

/** The limits of a run, with their units in their names. */
export interface QuickJSLimits {
  /** Wall time of a run's code, in milliseconds. */
  readonly timeoutMs: number;
  /** Memory of a run's QuickJS runtime, in bytes. */
  readonly memoryLimitBytes: number;
  /** Stack of a run's QuickJS runtime, in bytes. */
  readonly maxStackSizeBytes: number;
  /** Captured console output, in bytes of UTF-8. */
  readonly maxLogBytes: number;
}

/**
 * The default limits of {@linkcode createQuickJSLoader}: 5 s, 64 MiB of
 * memory, 256 KiB of stack and 64 KiB of logs per run.
 *
 * @example
 * ```ts
 * import { QUICKJS_LOADER_DEFAULTS } from "@cordon/cordon/loader";
 * import assert from "node:assert/strict";
 *
 * assert.equal(QUICKJS_LOADER_DEFAULTS.timeoutMs, 5000);
 * ```
 */
export const QUICKJS_LOADER_DEFAULTS: QuickJSLimits = DEFAULT_LIMITS;

/** Options of {@linkcode createQuickJSLoader}. */
export interface QuickJSLoaderOptions extends RunInputBoundOptions {
  /** Where declared packs and their modules come from. */
  catalog: SandboxModuleCatalog;
  /**
   * The quickjs-emscripten sync build variant to instantiate. The default
   * embeds the WebAssembly module in JavaScript, so it needs no file or
   * network access and bundles for browsers as one file.
   *
   * @default {@jitl/quickjs-singlefile-browser-release-sync}
   */
  variant?: QuickJSVariant | undefined;
  /**
   * The default wall-time limit of a run, in milliseconds.
   *
   * @default {5000}
   */
  timeoutMs?: number | undefined;
  /**
   * The default memory limit of a run's QuickJS runtime, in bytes.
   *
   * @default {67108864}
   */
  memoryLimitBytes?: number | undefined;
  /**
   * The default stack limit of a run's QuickJS runtime, in bytes.
   *
   * @default {262144}
   */
  maxStackSizeBytes?: number | undefined;
  /**
   * The default cap on captured console output, in bytes of UTF-8.
   *
   * @default {65536}
   */
  maxLogBytes?: number | undefined;
}

/** Options of {@linkcode QuickJSLoader.run}. */
export interface QuickJSRunOptions extends RunInputBoundOptions {
  /**
   * The JSON value a function default export is called with. It enters the
   * context as JSON text, parsed there.
   *
   * @default {null}
   */
  context?: JsonValue | undefined;
  /** Aborts the run; it then resolves to an `ABORTED` result. */
  signal?: AbortSignal | undefined;
  /**
   * Who the run is for. When given, before any code runs, the catalog's
   * entitlement policy is asked, once per declared pack, whether this
   * requester may have it, as delivery asks it over HTTP, before a
   * `packVersion` or `graphDigest` pin is compared; a refusal ends the run
   * with `PACK_FORBIDDEN`, naming the pack and nothing more. A server that
   * runs code for many users passes it on every run; without it the policy
   * is not asked (a remote catalog's server already decided for the one
   * requester it authenticates, and a remote catalog refuses every other
   * requester a run names).
   */
  requester?: Requester | undefined;
  /** The wall-time limit of this run's code, in milliseconds. */
  timeoutMs?: number | undefined;
  /** The memory limit of this run, in bytes. */
  memoryLimitBytes?: number | undefined;
  /** The stack limit of this run, in bytes. */
  maxStackSizeBytes?: number | undefined;
  /** The cap on this run's captured console output, in bytes. */
  maxLogBytes?: number | undefined;
}

/** Runs declarations in QuickJS. Dispose it to release its WebAssembly memory. */
export interface QuickJSLoader extends Disposable {
  /**
   * Runs a declaration's guest module in a fresh QuickJS context. Guest
   * failures, denials and exhausted limits resolve as failed results.
   *
   * @param declaration The guest source and the packs it may import, or
   * the source alone (a declaration without packages).
   * @param options The context value, a signal and per-run limits.
   * @returns The result: the default export (called with `context` and
   * awaited when it is a function) as JSON data, or a failure with a stable
   * code.
   * @throws {TypeError} When an option has the wrong type or is unknown.
   * @throws {RangeError} When a limit is out of range.
   * @throws {CordonError} `SANDBOX_DISPOSED` after the loader was disposed.
   */
  run(
    declaration: DeclarationInput | string,
    options?: QuickJSRunOptions,
  ): Promise<SandboxResult>;
  /** Whether the loader was disposed. */
  readonly disposed: boolean;
}

class QuickJSLoaderImpl implements QuickJSLoader {
  readonly #catalog: SandboxModuleCatalog;
  readonly #limits: RunLimits;
  readonly #bounds: RunInputBounds;
  readonly #executor: Executor;
  #disposed = false;

  constructor(
    catalog: SandboxModuleCatalog,
    limits: RunLimits,
    bounds: RunInputBounds,
    executor: Executor,
  ) {
    this.#catalog = catalog;
    this.#limits = limits;
    this.#bounds = bounds;
    this.#executor = executor;
  }

  get disposed(): boolean {
    return this.#disposed;
  }

  [Symbol.dispose](): void {
    this.#disposed = true;
    this.#executor.dispose();
  }

  async run(
    declaration: DeclarationInput | string,
    options: QuickJSRunOptions = {},
  ): Promise<SandboxResult> {
    if (this.#disposed) {
      const { code, message } = runFailures.disposed("QuickJS loader");
      throw new CordonError(code, message);
    }
    // Read once, before anything else: the declaration is the author's
    // data, a failure whatever it is, and never read again.
    const read = readDeclaration(declaration);
    const settings = readRunSettings(options, this.#limits, this.#bounds);
    const telemetry = startRunTelemetry("quickjs");
    const hold = this.#executor.hold();
    try {
      return telemetry.end(await this.#run(read, settings));
    } catch (error) {
      telemetry.endThrown(error);
      throw error;
    } finally {
      hold[Symbol.dispose]();
    }
  }

  async #run(
    read: ReadDeclaration,
    settings: RunSettings,
  ): Promise<SandboxResult> {
    const started = performance.now();
    const logs = createLogCollector(settings.limits.maxLogBytes);
    const metrics = () => ({
      tier: "quickjs" as const,
      durationMs: performance.now() - started,
    });
    const fail = (detail: FailureDetail) =>
      failureResult(detail, logs, metrics());

    if (settings.signal?.aborted) return fail(runFailures.aborted());
    if (!read.ok) return fail(read.error);
    const refused = inputRefusal(read.declaration, settings);
    if (refused !== null) return fail(refused);
    const prepared = await prepareRun(
      this.#catalog,
      read.declaration,
      settings,
    );
    if (hasOwnKey(prepared, "code")) return fail(prepared);
    const answer = await this.#executor.execute(prepared, settings, logs);
    if (answer === null) return fail(runFailures.disposed("QuickJS loader"));
    if (hasOwnKey(answer, "value")) {
      return successResult(answer.value, logs, metrics());
    }
    return fail(answer);
  }
}

const LOADER_OPTION_KEYS: OptionKeys<QuickJSLoaderOptions> = {
  ...LIMIT_KEYS,
  ...RUN_INPUT_BOUND_KEYS,
  catalog: true,
  variant: true,
};

/**
 * Reads `variant` once into a frozen copy of the three fields a
 * quickjs-emscripten build variant (the default export of an
 * `@jitl/quickjs-*` package) has, after checking their shape: the build
 * checked is the build started, whatever a getter or Proxy would answer
 * on a later read. The default variant is kept as it is, since its
 * identity picks the hardened image shipped for it, and each other variant
 * gets one copy, kept while the variant lives, since work measured on a
 * build (its stack's depth) is kept by the build's identity.
 *
 * @throws {TypeError} When it does not have that shape, or reading it
 * throws.
 */
function readVariant(variant: unknown): VariantCopy {
  if (variant === singlefileVariant) return singlefileVariant;
  if (typeof variant !== "object" || variant === null) throw notAVariant();
  const known = variantCopies.get(variant);
  if (known !== undefined) return known;
  const copy = copyVariant(variant);
  variantCopies.set(variant, copy);
  return copy;
}

type VariantCopy = { type: unknown } & Omit<QuickJSVariant, "type">;

const variantCopies = new WeakMap<object, VariantCopy>();

function copyVariant(variant: object): VariantCopy {
  const { type, importFFI, importModuleLoader } = readingOption(
    "create the QuickJS loader",
    "variant",
    () => {
      const { type, importFFI, importModuleLoader } = variant as Partial<
        Record<keyof QuickJSVariant, unknown>
      >;
      return { type, importFFI, importModuleLoader };
    },
  );
  if (
    typeof importFFI !== "function" || typeof importModuleLoader !== "function"
  ) {
    throw notAVariant();
  }
  return Object.freeze({
    type,
    importFFI: importFFI as QuickJSVariant["importFFI"],
    importModuleLoader: importModuleLoader as QuickJSVariant[
      "importModuleLoader"
    ],
  });
}

function notAVariant(): TypeError {
  return new TypeError(
    "Cannot create the QuickJS loader: variant must be a quickjs-emscripten build variant, the default export of a package such as @jitl/quickjs-wasmfile-release-sync",
  );
}

/**
 * Creates a QuickJS loader over a catalog. The WebAssembly module is
 * instantiated once here; each run gets a fresh QuickJS runtime and context
 * with its own limits, hardened before any pack or guest module evaluates.
 * The caller owns the returned loader and must dispose it.
 *
 * @param options The catalog, the build variant and default limits.
 * @returns The loader.
 * @throws {TypeError} When the catalog is not an object, its
 *   `resolveForExecution`, `authorizeDelivery` or `summaries` is not a
 *   function or reading one throws, or an option has the wrong type or is
 *   unknown.
 * @throws {RangeError} When a limit is out of range.
 * @throws {CordonError} `SANDBOX_UNAVAILABLE` when the runtime refuses to
 * compile WebAssembly (a Content-Security-Policy without `'wasm-unsafe-eval'`)
 * or the default build's WebAssembly does not start (too little memory, or
 * a page script that replaced `WebAssembly.instantiate`);
 * `QUICKJS_VARIANT_UNSUPPORTED` when `variant` is a build the loader cannot
 * keep its guarantees on (see `QuickJSVariant`).
 *
 * @example Run guest code that imports a declared pack
 * ```ts
 * import { createQuickJSLoader } from "@cordon/cordon/loader";
 * import type { SandboxModuleCatalog } from "@cordon/cordon/catalog";
 * import assert from "node:assert/strict";
 *
 * // A catalog with no packs installed: guest code can still run.
 * const catalog: SandboxModuleCatalog = {
 *   resolveForExecution: () => ({ statuses: [], packs: {}, modules: {}, installed: [] }),
 *   authorizeDelivery: () => Promise.resolve({ ok: false, reason: "not-found", code: "MODULE_NOT_FOUND", message: "none" }),
 *   summaries: () => [],
 * };
 * using loader = await createQuickJSLoader({ catalog });
 * const result = await loader.run(
 *   { source: "export default (context) => context.a + 1;" },
 *   { context: { a: 41 } },
 * );
 * assert.equal(result.ok && result.value, 42);
 *
 * const denied = await loader.run({ source: 'import fs from "node:fs"; export default 1;' });
 * assert.equal(!denied.ok && denied.error.code, "IMPORT_NODE_BUILTIN");
 * ```
 */
export async function createQuickJSLoader(
  given: QuickJSLoaderOptions,
): Promise<QuickJSLoader> {
  const where = "create the QuickJS loader";
  const options = readOptions(where, given ?? null, LOADER_OPTION_KEYS);
  const catalog = readCatalogOption(where, options.catalog);
  const variant = readVariant(options.variant ?? singlefileVariant);
  const { type } = variant;
  if (type !== "sync") {
    throw unsupportedVariant(
      `is a quickjs-emscripten ${
        type === "async" ? "asyncify" : JSON.stringify(type)
      } build, whose calls into QuickJS may suspend, and the loader makes only synchronous ones`,
    );
  }
  const limits = readLimits(
    "create the QuickJS loader",
    options,
    DEFAULT_LIMITS,
  );
  const bounds = readRunInputBounds(where, options, DEFAULT_RUN_INPUT_BOUNDS);
  const executor = await startExecutor(
    variant as QuickJSSyncVariant,
    limits.memoryLimitBytes,
  );
  return new QuickJSLoaderImpl(catalog, limits, bounds, executor);
}
