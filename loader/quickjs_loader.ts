// This module is browser compatible.

/**
 * The QuickJS loader: runs a declaration's guest ES module in a fresh
 * QuickJS context with the import policy, hardening and limits, in Deno and
 * in browsers alike.
 *
 * @module
 */

import type {
  JSModuleLoadResult,
  JSModuleNormalizeResult,
  JSPromiseState,
  QuickJSContext,
  QuickJSHandle,
  QuickJSRuntime,
  QuickJSSyncVariant,
} from "quickjs-emscripten-core";
import singlefileVariant from "@jitl/quickjs-singlefile-browser-release-sync";
import type { ResolvedModule, SandboxModuleCatalog } from "../catalog/types.ts";
import {
  CordonError,
  createLogCollector,
  type DeclarationInput,
  DeclarationSchema,
  dynamicImportDenial,
  type ErrorCode,
  type FailureDetail,
  failureResult,
  IMPORT_DENIED_ERROR_NAME,
  isErrorCode,
  type JsonValue,
  type LogCollector,
  runFailures,
  type SandboxResult,
  successResult,
} from "../protocol/mod.ts";
import {
  createImportPolicy,
  GUEST_MODULE_NAME,
  type ImportDenied,
  type ImportPolicy,
} from "./import_policy.ts";
import {
  createEngine,
  type Engine,
  IDLE_HOOKS,
  type RunHooks,
} from "./_engine.ts";
import { DEFAULT_LIMITS, readLimits, type RunLimits } from "./_limits.ts";
import { initLexer, scanGuest, scanPackModule } from "./_scan.ts";

/**
 * A quickjs-emscripten synchronous build variant: the default export of
 * `@jitl/quickjs-singlefile-browser-release-sync`,
 * `@jitl/quickjs-wasmfile-release-sync` or another `-sync` variant.
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
export interface QuickJSLoaderOptions {
  /** Where declared packs and their modules come from. */
  catalog: SandboxModuleCatalog;
  /**
   * The quickjs-emscripten sync build variant to instantiate. The default
   * embeds the WebAssembly module in JavaScript, so it needs no file or
   * network access and bundles for browsers as one file.
   *
   * @default {@jitl/quickjs-singlefile-browser-release-sync}
   */
  variant?: QuickJSVariant;
  /**
   * The default wall-time limit of a run, in milliseconds.
   *
   * @default {5000}
   */
  timeoutMs?: number;
  /**
   * The default memory limit of a run's QuickJS runtime, in bytes.
   *
   * @default {67108864}
   */
  memoryLimitBytes?: number;
  /**
   * The default stack limit of a run's QuickJS runtime, in bytes.
   *
   * @default {262144}
   */
  maxStackSizeBytes?: number;
  /**
   * The default cap on captured console output, in bytes of UTF-8.
   *
   * @default {65536}
   */
  maxLogBytes?: number;
}

/** Options of {@linkcode QuickJSLoader.run}. */
export interface QuickJSRunOptions {
  /**
   * The JSON value a function default export is called with. It enters the
   * context as JSON text, parsed there.
   */
  context?: JsonValue;
  /** Aborts the run; it then resolves to an `ABORTED` result. */
  signal?: AbortSignal;
  /** The wall-time limit of this run's code, in milliseconds. */
  timeoutMs?: number;
  /** The memory limit of this run, in bytes. */
  memoryLimitBytes?: number;
  /** The stack limit of this run, in bytes. */
  maxStackSizeBytes?: number;
  /** The cap on this run's captured console output, in bytes. */
  maxLogBytes?: number;
}

/** Runs declarations in QuickJS. Dispose it to release its WebAssembly memory. */
export interface QuickJSLoader extends Disposable {
  /**
   * Runs a declaration's guest module in a fresh QuickJS context. Guest
   * failures, denials and exhausted limits resolve as failed results.
   *
   * @param declaration The guest source and the packs it may import.
   * @param options The context value, a signal and per-run limits.
   * @returns The result: the default export (called with `context` and
   * awaited when it is a function) as JSON data, or a failure with a stable
   * code.
   * @throws {TypeError} When an option has the wrong type.
   * @throws {RangeError} When a limit is out of range.
   * @throws {CordonError} `SANDBOX_DISPOSED` after the loader was disposed.
   */
  run(
    declaration: DeclarationInput,
    options?: QuickJSRunOptions,
  ): Promise<SandboxResult>;
  /** Whether the loader was disposed. */
  readonly disposed: boolean;
}

const MAIN_MODULE_NAME = "cordon:main";
const LINKED_MODULE_NAME = "cordon:linked";
const DENIED_MODULE_NAME = "cordon:denied";
const BOOTSTRAP_SOURCE = `import * as guest from "${GUEST_MODULE_NAME}";
import "${LINKED_MODULE_NAME}";
export { guest };
`;
const PACK_SCAN_CACHE_SIZE = 4096;
/** The memory a failed run may use beyond its limit while its error is described. */
const DESCRIBE_HEADROOM_BYTES = 4 * 1024 * 1024;
const LOG_LEVELS: ReadonlySet<string> = new Set([
  "log",
  "info",
  "warn",
  "error",
  "debug",
]);

/** What the module hooks and interrupt handler share during one run. */
interface RunState {
  phase: "link" | "run" | "done";
  denial: ImportDenied | null;
  interrupt: "timeout" | "aborted" | null;
  deadline: number;
  signal: AbortSignal | undefined;
}

/**
 * How a promise ended: a value or error handle, stopped by a denial or an
 * interrupt, or pending with no job left, so only the deadline can end it.
 */
type Outcome =
  | { kind: "value"; handle: QuickJSHandle }
  | { kind: "error"; handle: QuickJSHandle }
  | { kind: "ended" }
  | { kind: "stalled" };

/** What one run's engine section answers. */
type Answer = FailureDetail | { value: JsonValue } | "stalled";

const now: () => number = () => performance.now();

function isAbortSignal(value: unknown): value is AbortSignal {
  return typeof AbortSignal === "function" && value instanceof AbortSignal;
}

function encodeContext(context: unknown): string | undefined {
  if (context === undefined) return undefined;
  let text: string | undefined;
  try {
    text = JSON.stringify(context);
  } catch (error) {
    throw new TypeError(
      "Cannot run the declaration: context must be a JSON value",
      { cause: error },
    );
  }
  if (text === undefined) {
    throw new TypeError(
      "Cannot run the declaration: context must be a JSON value",
    );
  }
  return text;
}

function declarationInvalid(
  issues: readonly { path: readonly PropertyKey[]; message: string }[],
): FailureDetail {
  const first = issues[0];
  const where = first === undefined || first.path.length === 0
    ? "the declaration"
    : first.path.map(String).join(".");
  return {
    code: "DECLARATION_INVALID",
    name: "DeclarationError",
    message: `The declaration is invalid at ${where}: ${
      first?.message ?? "it does not match the schema"
    }; pass { source, packages } with pack names or { specifier } objects`,
  };
}

function toFailure(denial: ImportDenied): FailureDetail {
  return { code: denial.code, name: denial.name, message: denial.message };
}

class QuickJSLoaderImpl implements QuickJSLoader {
  readonly #catalog: SandboxModuleCatalog;
  readonly #variant: QuickJSSyncVariant;
  readonly #limits: RunLimits;
  readonly #packScans = new Map<string, ImportDenied | null>();
  #engine: Engine | null;
  #replacing: Promise<Engine> | undefined;
  #disposed = false;

  constructor(
    catalog: SandboxModuleCatalog,
    variant: QuickJSSyncVariant,
    limits: RunLimits,
    engine: Engine,
  ) {
    this.#catalog = catalog;
    this.#variant = variant;
    this.#limits = limits;
    this.#engine = engine;
  }

  get disposed(): boolean {
    return this.#disposed;
  }

  [Symbol.dispose](): void {
    // Runs under way keep their own reference; the module goes with them.
    this.#disposed = true;
    this.#engine = null;
    this.#packScans.clear();
  }

  #assertAlive(): void {
    if (this.#disposed) {
      const { code, message } = runFailures.disposed("QuickJS loader");
      throw new CordonError(code, message);
    }
  }

  /** The working engine, replacing a broken one; `null` once disposed. */
  async #currentEngine(): Promise<Engine | null> {
    while (this.#engine !== null && this.#engine.broken) {
      this.#replacing ??= createEngine(this.#variant).finally(() => {
        this.#replacing = undefined;
      });
      const fresh = await this.#replacing;
      if (this.#engine !== null && this.#engine.broken) this.#engine = fresh;
    }
    return this.#engine;
  }

  #scanPack(module: ResolvedModule): ImportDenied | null {
    const key = `${module.id} ${module.digest}`;
    const cached = this.#packScans.get(key);
    if (cached !== undefined) return cached;
    const found = scanPackModule(module.source);
    if (this.#packScans.size >= PACK_SCAN_CACHE_SIZE) this.#packScans.clear();
    this.#packScans.set(key, found);
    return found;
  }

  async run(
    declaration: DeclarationInput,
    options: QuickJSRunOptions = {},
  ): Promise<SandboxResult> {
    this.#assertAlive();
    if (typeof options !== "object" || options === null) {
      throw new TypeError(
        "Cannot run the declaration: options must be an object",
      );
    }
    const limits = readLimits("run the declaration", options, this.#limits);
    const { signal } = options;
    if (signal !== undefined && !isAbortSignal(signal)) {
      throw new TypeError(
        "Cannot run the declaration: signal must be an AbortSignal",
      );
    }
    const contextJson = encodeContext(options.context);
    const started = now();
    const logs = createLogCollector(limits.maxLogBytes);
    const fail = (detail: FailureDetail): SandboxResult =>
      failureResult(detail, logs, {
        tier: "quickjs",
        durationMs: now() - started,
      });

    if (signal?.aborted) return fail(runFailures.aborted());
    const parsed = DeclarationSchema.safeParse(declaration);
    if (!parsed.success) return fail(declarationInvalid(parsed.error.issues));
    const checked = parsed.data;

    if (this.#catalog.prefetch !== undefined) {
      try {
        await this.#catalog.prefetch(checked, { signal });
      } catch (error) {
        if (signal?.aborted) return fail(runFailures.aborted());
        if (error instanceof CordonError) {
          return fail({
            code: error.code,
            name: error.name,
            message: error.message,
          });
        }
        throw error;
      }
    }
    const engine = await this.#currentEngine();
    if (engine === null) {
      return fail(runFailures.disposed("QuickJS loader"));
    }
    if (signal?.aborted) return fail(runFailures.aborted());

    const resolution = this.#catalog.resolveForExecution(checked);
    for (const status of resolution.statuses) {
      if (status.status !== "ok") {
        return fail({
          code: isErrorCode(status.code) ? status.code : "PACK_NOT_INSTALLED",
          name: "PackResolutionError",
          message: status.message,
        });
      }
    }
    const policy = createImportPolicy(resolution);
    const denial = scanGuest(checked.source, policy);
    if (denial !== null) return fail(toFailure(denial));

    const state: RunState = {
      phase: "link",
      denial: null,
      interrupt: null,
      // Set when the guest's modules start loading.
      deadline: Infinity,
      signal,
    };
    let answer: Answer;
    try {
      answer = this.#execute(
        engine,
        checked.source,
        policy,
        contextJson,
        limits,
        state,
        logs,
      );
    } catch (error) {
      // A fault outside QuickJS's own checks (the host's call stack, a trap
      // in the WebAssembly module) leaves the module unusable: replace it.
      engine.broken = true;
      if (error instanceof RangeError) return fail(runFailures.stackOverflow());
      return fail({
        code: "SANDBOX_CRASHED",
        name: "SandboxCrashedError",
        message: `The QuickJS sandbox failed: ${
          error instanceof Error ? error.message : String(error)
        }; the loader replaced its WebAssembly module, so run again`,
      });
    } finally {
      state.phase = "done";
      engine.hooks = IDLE_HOOKS;
      if (!engine.broken) engine.restore();
    }
    if (answer === "stalled") {
      // Nothing can settle the guest's promise any more: its result is
      // known, but it ends at the deadline, as a timeout, like elsewhere.
      await waitForDeadline(state);
      answer = endedBy(state, limits) ?? runFailures.timeout(limits.timeoutMs);
    }
    if ("value" in answer) {
      return successResult(answer.value, logs, {
        tier: "quickjs",
        durationMs: now() - started,
      });
    }
    return fail(answer);
  }

  /** The module loader, normaliser, interrupt and console of one run. */
  #hooksFor(
    source: string,
    policy: ImportPolicy,
    state: RunState,
    logs: LogCollector,
  ): RunHooks {
    return {
      load: (name): JSModuleLoadResult => {
        if (name === GUEST_MODULE_NAME) return source;
        if (name === LINKED_MODULE_NAME) return "";
        const module = policy.moduleByName(name);
        if (module === undefined) {
          return { error: new Error(`Cannot load ${name}`) };
        }
        const found = this.#scanPack(module);
        if (found !== null) {
          state.denial ??= found;
          return { error: new Error(found.message) };
        }
        return module.source;
      },
      normalize: (base, requested): JSModuleNormalizeResult => {
        if (state.phase !== "link") {
          state.denial ??= {
            ok: false,
            name: IMPORT_DENIED_ERROR_NAME,
            ...dynamicImportDenial(requested),
          };
          return DENIED_MODULE_NAME;
        }
        if (base === MAIN_MODULE_NAME) {
          if (requested === LINKED_MODULE_NAME) state.phase = "run";
          return requested;
        }
        const decision = policy.resolve(base, requested);
        if (decision.ok) return decision.name;
        state.denial ??= decision;
        return DENIED_MODULE_NAME;
      },
      interrupt: () => {
        if (state.denial !== null) return true;
        if (state.signal?.aborted) {
          state.interrupt ??= "aborted";
          return true;
        }
        if (now() > state.deadline) {
          state.interrupt ??= "timeout";
          return true;
        }
        return false;
      },
      log: (level, text) => {
        if (LOG_LEVELS.has(level)) {
          logs.push(level as Parameters<LogCollector["push"]>[0], text);
        }
      },
    };
  }

  /**
   * Runs the guest in the engine's hardened context, synchronously, so no
   * other run can interleave before the memory is restored. Handles are
   * not disposed: restoring the memory frees everything the run made.
   */
  #execute(
    engine: Engine,
    source: string,
    policy: ImportPolicy,
    contextJson: string | undefined,
    limits: RunLimits,
    state: RunState,
    logs: LogCollector,
  ): Answer {
    const { runtime, context } = engine;
    engine.hooks = this.#hooksFor(source, policy, state, logs);
    runtime.setMemoryLimit(limits.memoryLimitBytes);
    runtime.setMaxStackSize(limits.maxStackSizeBytes);
    reseed(context, engine.reseedFn);
    const fail = (error: QuickJSHandle | null, loading = false) =>
      this.#failureOf(engine, error, state, limits, loading);
    // A promise's value, or the run's answer when it did not fulfil in time.
    const valueOf = (
      promise: QuickJSHandle,
    ): { handle: QuickJSHandle } | { answer: Answer } => {
      const outcome = settle(runtime, context, promise, state);
      if (outcome.kind === "stalled") return { answer: "stalled" };
      if (outcome.kind !== "value") {
        return {
          answer: fail(outcome.kind === "error" ? outcome.handle : null),
        };
      }
      const ended = endedBy(state, limits);
      return ended === null ? { handle: outcome.handle } : { answer: ended };
    };
    try {
      state.deadline = now() + limits.timeoutMs;
      const evaluated = context.evalCode(BOOTSTRAP_SOURCE, MAIN_MODULE_NAME, {
        type: "module",
      });
      if (evaluated.error) return fail(evaluated.error, true);
      const loaded = valueOf(evaluated.value);
      if ("answer" in loaded) return loaded.answer;
      const guest = context.getProp(loaded.handle, "guest");
      const contextArg = contextJson === undefined
        ? context.undefined
        : context.newString(contextJson);
      const called = context.callFunction(
        engine.runFn,
        context.undefined,
        guest,
        contextArg,
      );
      if (called.error) return fail(called.error);
      const settled = valueOf(called.value);
      if ("answer" in settled) return settled.answer;
      const answer = JSON.parse(context.getString(settled.handle)) as
        | { ok: true; value: JsonValue }
        | { ok: false; error: FailureDetail };
      if (answer.ok) return { value: answer.value };
      return this.#classify(answer.error, limits);
    } catch (error) {
      // The module's state is unknown after a fault outside QuickJS's checks.
      engine.broken = true;
      throw error;
    }
  }

  /**
   * Turns an error handle (or an ended run) into the run's failure. Guest
   * code can still run here (an error's getters), so the deadline stays in
   * force and the memory limit is raised by a bounded headroom only.
   */
  #failureOf(
    engine: Engine,
    error: QuickJSHandle | null,
    state: RunState,
    limits: RunLimits,
    loading: boolean,
  ): FailureDetail {
    const { runtime, context } = engine;
    const phase = state.phase;
    state.phase = "done";
    const ended = endedBy(state, limits);
    if (ended !== null) return ended;
    if (error === null) return runFailures.timeout(limits.timeoutMs);
    // Describing the error must not fail for the limit that raised it.
    runtime.setMemoryLimit(limits.memoryLimitBytes + DESCRIBE_HEADROOM_BYTES);
    const described = context.callFunction(
      engine.describeFn,
      context.undefined,
      error,
    );
    if (described.error) {
      return endedBy(state, limits) ??
        runFailures.outOfMemory(limits.memoryLimitBytes);
    }
    const detail = JSON.parse(context.getString(described.value)) as
      & FailureDetail
      & { stack?: string | null; fileName?: string | null };
    if (detail.name === "SyntaxError" && phase === "link") {
      return syntaxFailure(detail.message, detail.fileName, detail.stack);
    }
    if (detail.name === "SyntaxError" && loading && detail.stack === "") {
      // Linking failed: no code ran, so the error has no stack.
      return {
        code: "GUEST_SYNTAX_ERROR",
        name: "SyntaxError",
        message:
          `Cannot link the guest source: ${detail.message}; import only names the module exports`,
      };
    }
    return this.#classify(detail, limits);
  }

  #classify(
    error: FailureDetail,
    limits: RunLimits,
    name: string | undefined = error.name,
  ): FailureDetail {
    if (name === "InternalError" && error.message === "out of memory") {
      return runFailures.outOfMemory(limits.memoryLimitBytes);
    }
    if (name === "InternalError" && error.message === "stack overflow") {
      return runFailures.stackOverflow();
    }
    const code: ErrorCode = isErrorCode(error.code)
      ? error.code
      : "GUEST_ERROR";
    return { code, name: error.name, message: error.message };
  }
}

/** The failure of a run a denial or an interrupt ended, whatever followed. */
function endedBy(state: RunState, limits: RunLimits): FailureDetail | null {
  if (state.denial !== null) return toFailure(state.denial);
  if (state.interrupt === "aborted") return runFailures.aborted();
  if (state.interrupt === "timeout") {
    return runFailures.timeout(limits.timeoutMs);
  }
  return null;
}

/**
 * Drives QuickJS's job queue until a promise settles. A promise still
 * pending with no job left is stalled: no host API can settle it.
 */
function settle(
  runtime: QuickJSRuntime,
  context: QuickJSContext,
  handle: QuickJSHandle,
  state: RunState,
): Outcome {
  for (;;) {
    const promiseState: JSPromiseState = context.getPromiseState(handle);
    if (promiseState.type === "fulfilled") {
      return { kind: "value", handle: promiseState.value };
    }
    if (promiseState.type === "rejected") {
      return { kind: "error", handle: promiseState.error };
    }
    if (state.denial !== null || state.interrupt !== null) {
      return { kind: "ended" };
    }
    if (!runtime.hasPendingJob()) return { kind: "stalled" };
    const jobs = runtime.executePendingJobs();
    if (jobs.error) return { kind: "error", handle: jobs.error };
  }
}

/** Seeds the context's `Math.random` from the host's random source. */
function reseed(context: QuickJSContext, reseedFn: QuickJSHandle): void {
  const seed = crypto.getRandomValues(new Uint32Array(4));
  const words = Array.from(seed, (word) => context.newNumber(word));
  context.unwrapResult(
    context.callFunction(reseedFn, context.undefined, ...words),
  );
}

function syntaxFailure(
  message: string,
  fileName: string | null | undefined,
  stack: string | null | undefined,
): FailureDetail {
  const file = fileName ?? GUEST_MODULE_NAME;
  const position = /:(\d+):(\d+)\s*$/.exec((stack ?? "").split("\n")[0] ?? "");
  const where = position === null
    ? ""
    : ` at line ${position[1]}, column ${position[2]}`;
  if (file !== GUEST_MODULE_NAME) {
    return {
      code: "PACK_MODULE_SYNTAX",
      name: "SyntaxError",
      message: `A pack module is not a valid ES module: ${message}${where} in ${
        JSON.stringify(file)
      }; reinstall a vetted version of the pack`,
    };
  }
  return {
    code: "GUEST_SYNTAX_ERROR",
    name: "SyntaxError",
    message:
      `The guest source is not a valid ES module: ${message}${where}; fix the syntax error`,
  };
}

/** Waits, on a host timer, until the run's deadline or its abort. */
function waitForDeadline(state: RunState): Promise<void> {
  return new Promise((resolve) => {
    const remaining = Math.max(0, state.deadline - now());
    const signal = state.signal;
    const done = (reason: "timeout" | "aborted") => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      state.interrupt ??= reason;
      resolve();
    };
    const onAbort = () => done("aborted");
    const timer = setTimeout(() => done("timeout"), remaining);
    if (signal?.aborted) {
      done("aborted");
      return;
    }
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/**
 * Creates a QuickJS loader over a catalog. The WebAssembly module is
 * instantiated once here; each run gets a fresh QuickJS runtime and context
 * with its own limits, hardened before any pack or guest module evaluates.
 * The caller owns the returned loader and must dispose it.
 *
 * @param options The catalog, the build variant and default limits.
 * @returns The loader.
 * @throws {TypeError} When the catalog or an option has the wrong type.
 * @throws {RangeError} When a limit is out of range.
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
  options: QuickJSLoaderOptions,
): Promise<QuickJSLoader> {
  if (typeof options !== "object" || options === null) {
    throw new TypeError(
      "Cannot create the QuickJS loader: options must be an object",
    );
  }
  const { catalog } = options;
  const variant: unknown = options.variant ?? singlefileVariant;
  if (
    typeof catalog !== "object" || catalog === null ||
    typeof catalog.resolveForExecution !== "function"
  ) {
    throw new TypeError(
      "Cannot create the QuickJS loader: catalog must be a SandboxModuleCatalog",
    );
  }
  if (
    typeof variant !== "object" || variant === null ||
    (variant as { type?: unknown }).type !== "sync"
  ) {
    throw new TypeError(
      "Cannot create the QuickJS loader: variant must be a quickjs-emscripten sync variant",
    );
  }
  const limits = readLimits(
    "create the QuickJS loader",
    options,
    DEFAULT_LIMITS,
  );
  const sync = variant as QuickJSSyncVariant;
  const [engine] = await Promise.all([createEngine(sync), initLexer()]);
  return new QuickJSLoaderImpl(catalog, sync, limits, engine);
}
