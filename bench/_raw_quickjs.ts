/**
 * The raw quickjs-emscripten baseline the benchmarks compare cordon with: a
 * fresh runtime and context per run, the same limits a cordon run has, and
 * a module loader over a map of sources.
 *
 * @module
 */

import type {
  QuickJSContext,
  QuickJSWASMModule,
} from "quickjs-emscripten-core";

/** The limits of a raw run, the same as the cordon runs compared with. */
export const RAW_LIMITS = Object.freeze({
  memoryLimitBytes: 64 * 1024 * 1024,
  stackBytes: 256 * 1024,
  timeoutMs: 5_000,
});

/** How a raw run finds the modules its guest imports. */
export interface RawModuleOptions {
  /** Module sources by the name `normalize` gives. */
  modules: ReadonlyMap<string, string>;
  /** Names an import from `base`; by default the requested name as is. */
  normalize?: (base: string, requested: string) => string;
  /** Runs in the fresh context before the guest, such as a hardening. */
  prepare?: (context: QuickJSContext) => void;
}

/**
 * Evaluates `source` as a module in a fresh runtime and context and returns
 * its default export as data.
 *
 * @param module The QuickJS build.
 * @param source The guest module.
 * @param options Its modules, name resolution and preparation.
 * @returns The default export, dumped.
 * @throws {Error} When the guest throws or rejects.
 */
export function rawRun(
  module: QuickJSWASMModule,
  source: string,
  options: RawModuleOptions,
): unknown {
  const runtime = module.newRuntime();
  runtime.setMemoryLimit(RAW_LIMITS.memoryLimitBytes);
  runtime.setMaxStackSize(RAW_LIMITS.stackBytes);
  const deadline = performance.now() + RAW_LIMITS.timeoutMs;
  runtime.setInterruptHandler(() => performance.now() > deadline);
  runtime.setModuleLoader(
    (name) => options.modules.get(name) ?? { error: new Error(name) },
    options.normalize ?? ((_base, requested) => requested),
  );
  const context = runtime.newContext();
  try {
    options.prepare?.(context);
    const exports = context.unwrapResult(
      context.evalCode(source, "guest.js", { type: "module" }),
    );
    let state = context.getPromiseState(exports);
    while (state.type === "pending") {
      runtime.executePendingJobs();
      state = context.getPromiseState(exports);
    }
    if (state.type === "rejected") {
      const error = context.dump(state.error);
      state.error.dispose();
      throw new Error(`raw run failed: ${JSON.stringify(error)}`);
    }
    const namespace = state.value;
    const value = context.getProp(namespace, "default");
    const out = context.dump(value);
    value.dispose();
    if (!state.notAPromise) namespace.dispose();
    exports.dispose();
    return out;
  } finally {
    context.dispose();
    runtime.dispose();
  }
}
