// This module is browser compatible.

/**
 * Runs a prepared declaration in a QuickJS engine: the guest scan, the
 * module hooks, the limits and the classification of failures. The
 * in-thread loader runs it on the caller's thread; a pool runner runs it on
 * its own thread or process with the bytes its host verified.
 *
 * @module
 */

import { hasOwnKey } from "../protocol/host_fields.ts";
import type {
  JSModuleLoadResult,
  JSModuleNormalizeResult,
  JSPromiseState,
  QuickJSContext,
  QuickJSHandle,
  QuickJSRuntime,
  QuickJSSyncVariant,
} from "quickjs-emscripten-core";
import type { ResolvedModule } from "../catalog/types.ts";
import { type ErrorCode, isErrorCode } from "../protocol/error_codes.ts";
import {
  createLogCollector,
  type FailureDetail,
  type LogCollector,
  runFailures,
} from "../protocol/run_result.ts";
import { resultOverBound } from "../protocol/run_inputs.ts";
import type { JsonValue, LogEntry } from "../protocol/sandbox_result.ts";
import { isLogLevel } from "../protocol/log_levels.ts";
import { operatorJson } from "../protocol/operator_text.ts";
import {
  dynamicImportDenial,
  IMPORT_DENIED_ERROR_NAME,
} from "../policy/import_specifier.ts";
import {
  createImportPolicy,
  GUEST_MODULE_NAME,
  type ImportAllowed,
  type ImportDenied,
  type ImportPolicy,
} from "../policy/import_policy.ts";
import {
  createEngine,
  type Engine,
  IDLE_HOOKS,
  type RunHooks,
} from "./_engine.ts";
import { OUT_OF_MEMORY_LEVEL } from "./_hardening.ts";
import { hostStackCapBytes, ON_WORKER_THREAD } from "./_host_stack.ts";
import {
  DEFAULT_LIMITS,
  MAX_STACK_SIZE_BYTES,
  type RunLimits,
} from "./_limits.ts";
import type { PreparedRun, RunSettings } from "./_prepare.ts";
import { scanPackModule } from "../policy/scan_guest.ts";
import { GuestPlans } from "./_guest_plans.ts";
import { type WarmGraph, WarmGraphs } from "./_warm_graphs.ts";

const MAIN_MODULE_NAME = "cordon:main";
const LINKED_MODULE_NAME = "cordon:linked";
const DENIED_MODULE_NAME = "cordon:denied";
/** The module that evaluates a guest's pack modules before a warm copy. */
const WARM_MODULE_NAME = "cordon:packs";
/** The most a warm graph's packs may log at their top level, in bytes. */
const WARM_LOG_BYTES = 64 * 1024;
const BOOTSTRAP_SOURCE = `import * as guest from "${GUEST_MODULE_NAME}";
import "${LINKED_MODULE_NAME}";
export { guest };
`;
const PACK_SCAN_CACHE_SIZE = 4096;
/** QuickJS's memory limit when it has none. */
const NO_QUICKJS_LIMIT = -1;
/** The memory a failed run may use beyond its limit while its error is described. */
const DESCRIBE_HEADROOM_BYTES = 4 * 1024 * 1024;
/**
 * How many pending jobs run between two checks of the deadline. A guest
 * can queue jobs without end, so the queue is never drained in one call.
 */
const JOBS_PER_STEP = 16;

/** A pack module's scan, with the text it read. */
interface PackScan {
  source: string;
  found: ImportDenied | null;
}

/** What the module hooks and interrupt handler share during one run. */
interface RunState {
  phase: "link" | "run" | "done";
  denial: ImportDenied | null;
  interrupt: "timeout" | "aborted" | "memory" | null;
  deadline: number;
  signal: AbortSignal | undefined;
  abandoned: (() => boolean) | undefined;
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

/** The guest source and the modules it imports statically. */
interface GuestModule {
  source: string;
  imports: readonly ImportAllowed[];
  /** The module name of each static import, as the guest scan resolved it. */
  names: ReadonlyMap<string, string>;
  /** The key of the warm graph of `imports`. */
  warmKey: string;
}

/** No guest: while a warm graph's pack modules evaluate. */
const NO_GUEST: GuestModule = Object.freeze({
  source: "",
  imports: [],
  names: new Map(),
  warmKey: "",
});

/** What one run answers: its value as JSON data, or its failure. */
export type Answer = FailureDetail | { value: JsonValue };

/**
 * Where a guest starts when it imports packs: a warm graph's copy, or the
 * memory its packs were just evaluated in under the run's reserve, with
 * what they logged.
 */
type PackStart = { graph: WarmGraph } | { evaluated: readonly LogEntry[] };

/** What one run's engine section answers. */
type EngineAnswer = Answer | "stalled";

const now: () => number = () => performance.now();

/** Why the run must stop now: its caller is gone or its deadline passed. */
function dueInterrupt(state: RunState): "aborted" | "timeout" | null {
  if (state.signal?.aborted || state.abandoned?.()) return "aborted";
  return now() > state.deadline ? "timeout" : null;
}

/** Whether `engine` can run a run of `limitBytes` now. */
function holds(engine: Engine, limitBytes: number): boolean {
  return !engine.broken && engine.capacityBytes >= limitBytes;
}

/** A catalog that gave a pack module something other than its text. */
function sourceMissing(module: ResolvedModule): ImportDenied {
  const type = typeof module.source;
  const given = module.source === null
    ? "null"
    : `${/^[aeiou]/.test(type) ? "an" : "a"} ${type}`;
  return {
    ok: false,
    code: "CATALOG_FAILED",
    name: "CatalogError",
    message:
      `The catalog gave pack module "${module.id}" no source text (its source is ${given}); fix the catalog, which must implement SandboxModuleCatalog`,
  };
}

function toFailure(denial: ImportDenied): FailureDetail {
  return { code: denial.code, name: denial.name, message: denial.message };
}

/**
 * Runs prepared declarations one engine at a time. It replaces its engine
 * after a host-level fault, when a run needs a larger memory limit than
 * the engine holds, and after a run that grew the engine's memory past
 * the bound, so the host gets that memory back.
 */
export class Executor {
  readonly #variant: QuickJSSyncVariant;
  readonly #packScans = new Map<string, PackScan>();
  readonly #warmGraphs = new WarmGraphs();
  readonly #guestPlans = new GuestPlans();
  /** The engine whose memory the warm graphs copy. */
  #warmEngine: Engine | null = null;
  #engine: Engine | null;
  #replacing: Promise<Engine> | undefined;
  /**
   * The most QuickJS stack a run on this thread may use (see
   * `_host_stack.ts`): no cap until a run needs the thread measured.
   */
  #stackCapBytes: number = MAX_STACK_SIZE_BYTES;
  #stackMeasured = false;
  #retired = 0;
  #held = 0;
  #disposed = false;

  constructor(variant: QuickJSSyncVariant, engine: Engine) {
    this.#variant = variant;
    this.#engine = engine;
  }

  /**
   * Creates an executor whose first engine holds runs of up to
   * `memoryLimitBytes`.
   */
  static async create(
    variant: QuickJSSyncVariant,
    memoryLimitBytes: number,
  ): Promise<Executor> {
    return new Executor(variant, await createEngine(variant, memoryLimitBytes));
  }

  /** How many engines were dropped so far, for a fault or for their memory. */
  get retired(): number {
    return this.#retired;
  }

  /**
   * Keeps the engine for a run from its start, before its preparation
   * waits, so a run under way when the executor is disposed still finishes.
   * Dispose the returned hold when the run ended.
   */
  hold(): Disposable {
    this.#held++;
    let released = false;
    return {
      [Symbol.dispose]: () => {
        if (released) return;
        released = true;
        this.#held--;
        this.#dropWhenIdle();
      },
    };
  }

  /** Drops the engine once no run holds it. */
  dispose(): void {
    this.#disposed = true;
    this.#dropWhenIdle();
  }

  #dropWhenIdle(): void {
    if (!this.#disposed || this.#held > 0) return;
    this.#engine = null;
    this.#warmEngine = null;
    this.#warmGraphs.clear();
    this.#guestPlans.clear();
    this.#packScans.clear();
  }

  /**
   * Measures the thread's stack once a run could outgrow it: a stack limit
   * above the default, or any run on a worker thread, whose native stack
   * may be half a main thread's. The measurement takes a throwaway module
   * and tens of milliseconds, so a main thread with default limits (every
   * process's first run, too) never pays it: there the default fits.
   */
  async #capStackFor(limits: RunLimits): Promise<void> {
    if (this.#stackMeasured) return;
    if (
      limits.maxStackSizeBytes <= DEFAULT_LIMITS.maxStackSizeBytes &&
      !ON_WORKER_THREAD
    ) return;
    this.#stackCapBytes = await hostStackCapBytes(this.#variant);
    this.#stackMeasured = true;
  }

  /** An engine that holds `limitBytes`, replacing one that cannot; `null` once disposed. */
  async #engineFor(limitBytes: number): Promise<Engine | null> {
    while (this.#engine !== null && !holds(this.#engine, limitBytes)) {
      const old = this.#engine;
      this.#replacing ??= createEngine(this.#variant, limitBytes).finally(
        () => {
          this.#replacing = undefined;
        },
      );
      const fresh = await this.#replacing;
      if (this.#engine === old) {
        this.#engine = fresh;
        this.#retired++;
      }
    }
    return this.#engine;
  }

  #scanPack(module: ResolvedModule): ImportDenied | null {
    const key = `${module.id} ${module.digest}`;
    const cached = this.#packScans.get(key);
    // A catalog may give other bytes under the same id and digest: a
    // scan holds for the text it read. The same string compares at once.
    if (cached !== undefined && cached.source === module.source) {
      return cached.found;
    }
    const found = scanPackModule(module.source);
    if (this.#packScans.size >= PACK_SCAN_CACHE_SIZE) this.#packScans.clear();
    this.#packScans.set(key, { source: module.source, found });
    return found;
  }

  /**
   * Runs a prepared declaration: scans the guest source, then evaluates it
   * and its packs in the engine with the run's limits.
   *
   * @returns The answer, or `null` when the executor was disposed.
   */
  async execute(
    prepared: PreparedRun,
    settings: RunSettings,
    logs: LogCollector,
  ): Promise<Answer | null> {
    const { limits, signal } = settings;
    await this.#capStackFor(limits);
    let engine = await this.#engineFor(limits.memoryLimitBytes);
    // Another run may have used the engine while this one waited: check
    // again with no wait between the check and the run.
    while (engine !== null && !holds(engine, limits.memoryLimitBytes)) {
      engine = await this.#engineFor(limits.memoryLimitBytes);
    }
    if (engine === null) return null;
    if (signal?.aborted) return runFailures.aborted();
    const { declaration, resolution } = prepared;
    const policy = createImportPolicy(resolution);
    const plan = this.#guestPlans.planFor(
      declaration.source,
      resolution,
      policy,
    );
    if (hasOwnKey(plan, "ok")) return toFailure(plan);

    const state: RunState = {
      phase: "link",
      denial: null,
      interrupt: null,
      // Set when the guest's modules start loading.
      deadline: Infinity,
      signal,
      abandoned: settings.abandoned,
    };
    let answer: EngineAnswer;
    try {
      answer = this.#execute(
        engine,
        {
          source: declaration.source,
          imports: plan.imports,
          names: plan.names,
          warmKey: plan.warmKey,
        },
        policy,
        settings,
        state,
        logs,
      );
    } catch (error) {
      // A fault outside QuickJS's own checks (the host's call stack, a trap
      // in the WebAssembly module) leaves the module unusable: replace it.
      engine.broken = true;
      if (engine.hostAllocationRefused()) {
        return runFailures.outOfMemory(limits.memoryLimitBytes);
      }
      if (error instanceof RangeError) return runFailures.stackOverflow();
      return {
        code: "SANDBOX_CRASHED",
        name: "SandboxCrashedError",
        message: `The QuickJS sandbox failed: ${
          error instanceof Error ? error.message : String(error)
        }; the loader replaced its WebAssembly module, so run again`,
      };
    } finally {
      state.phase = "done";
      engine.hooks = IDLE_HOOKS;
      if (engine.grown()) engine.broken = true;
    }
    if (answer === "stalled") {
      // Nothing can settle the guest's promise any more: its result is
      // known, but it ends at the deadline, as a timeout, like elsewhere.
      await waitForDeadline(state);
      answer = endedBy(state, limits) ?? runFailures.timeout(limits.timeoutMs);
    }
    return answer;
  }

  /** The module loader, normaliser, interrupt and console of one run. */
  #hooksFor(
    engine: Engine,
    guest: GuestModule,
    policy: ImportPolicy,
    state: RunState,
    logs: LogCollector,
  ): RunHooks {
    return {
      load: (name): JSModuleLoadResult => {
        if (name === GUEST_MODULE_NAME) return guest.source;
        if (name === LINKED_MODULE_NAME) return "";
        const module = policy.moduleByName(name);
        if (module === undefined) {
          return { error: new Error(`Cannot load ${name}`) };
        }
        if (typeof module.source !== "string") {
          // The catalog's fault, not the guest's: a user may write one.
          state.denial ??= sourceMissing(module);
          return { error: new Error(state.denial.message) };
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
        // cordon's own modules name what they import exactly: the guest,
        // and pack modules the policy already allowed the guest.
        if (base === MAIN_MODULE_NAME || base === WARM_MODULE_NAME) {
          if (requested === LINKED_MODULE_NAME) state.phase = "run";
          return requested;
        }
        // The guest scan already asked the policy about each static import.
        const scanned = base === GUEST_MODULE_NAME
          ? guest.names.get(requested)
          : undefined;
        if (scanned !== undefined) return scanned;
        const decision = policy.resolve(base, requested);
        if (decision.ok) return decision.name;
        state.denial ??= decision;
        return DENIED_MODULE_NAME;
      },
      interrupt: () => {
        // Once interrupted, always: a guest that catches the interrupt is
        // interrupted again at its next check.
        if (state.denial !== null || state.interrupt !== null) return true;
        state.interrupt = dueInterrupt(state);
        if (state.interrupt !== null) return true;
        // A guest that catches "out of memory" and keeps allocating would
        // otherwise run on at its limit until its deadline.
        if (engine.exhausted() || engine.refusedTooOften()) {
          state.interrupt ??= "memory";
          return true;
        }
        return false;
      },
      log: (level, text) => {
        // What a guest does after its interrupt is not part of its run.
        if (state.interrupt !== null) return false;
        // Memory ran out while a console line was formatted: the run ends
        // at the next check, whatever the guest does with the error. An
        // error worded as QuickJS's own is the guest's throw unless the
        // engine saw the limit met: the console then throws it on as is.
        if (level === OUT_OF_MEMORY_LEVEL) {
          if (!memoryRanOut(engine)) return true;
          state.interrupt = "memory";
          return false;
        }
        if (isLogLevel(level)) logs.push(level, text);
        return !logs.truncated;
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
    guest: GuestModule,
    policy: ImportPolicy,
    settings: RunSettings,
    state: RunState,
    logs: LogCollector,
  ): EngineAnswer {
    const { limits, contextJson, maxResultBytes } = settings;
    const { runtime, context } = engine;
    state.deadline = now() + limits.timeoutMs;
    const start = this.#packStart(engine, guest, policy, limits, state);
    // A denial or an interrupt while the packs were evaluated ends the run
    // here: its interrupt handler would stop any code run now, the host's
    // own (the reseed) at whatever point QuickJS next checks it.
    const ended = endedBy(state, limits);
    if (ended !== null) return ended;
    if (start === null || hasOwnKey(start, "graph")) {
      // The runtime's limits live in its memory: set them after the restore.
      engine.restore(start?.graph.snapshot);
      applyLimits(runtime, limits, this.#stackCapBytes);
      if (!engine.reserve(limits.memoryLimitBytes)) {
        return runFailures.outOfMemory(limits.memoryLimitBytes);
      }
    }
    engine.hooks = this.#hooksFor(engine, guest, policy, state, logs);
    reseed(context, engine.reseedFn);
    const packLogs = start === null
      ? []
      : hasOwnKey(start, "graph")
      ? start.graph.logs
      : start.evaluated;
    for (const entry of packLogs) logs.push(entry.level, entry.message);
    const fail = (error: QuickJSHandle | null, loading = false) =>
      this.#failureOf(engine, error, state, limits, loading);
    // A promise's value, or the run's answer when it did not fulfil in time.
    const valueOf = (
      promise: QuickJSHandle,
    ): { handle: QuickJSHandle } | { answer: EngineAnswer } => {
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
      const evaluated = context.evalCode(BOOTSTRAP_SOURCE, MAIN_MODULE_NAME, {
        type: "module",
      });
      if (evaluated.error) return fail(evaluated.error, true);
      const loaded = valueOf(evaluated.value);
      if (hasOwnKey(loaded, "answer")) return loaded.answer;
      const guest = context.getProp(loaded.handle, "guest");
      const contextArg = contextJson === undefined
        ? context.undefined
        : context.newString(contextJson);
      // Every character takes a byte at least: the guest stops writing a
      // text past as many characters as the bound has bytes.
      const called = context.callFunction(
        engine.runFn,
        context.undefined,
        guest,
        contextArg,
        context.newNumber(maxResultBytes),
      );
      if (called.error) return fail(called.error);
      const settled = valueOf(called.value);
      if (hasOwnKey(settled, "answer")) return settled.answer;
      return this.#answerOf(engine, settled.handle, settings);
    } catch (error) {
      // The module's state is unknown after a fault outside QuickJS's checks.
      engine.broken = true;
      throw error;
    }
  }

  /**
   * Reads what the hardening's `run` answered: the JSON text of the
   * guest's value, `{ error }`, its failure's JSON text, or `{ tooLarge }`.
   */
  #answerOf(
    engine: Engine,
    answered: QuickJSHandle,
    settings: RunSettings,
  ): Answer {
    const { limits, maxResultBytes } = settings;
    const { context } = engine;
    if (context.typeof(answered) === "string") {
      // QuickJS copies the text out as UTF-8 into the run's memory, with
      // the run's reserve still taken: a copy that does not fit comes
      // back empty, which no JSON text is.
      const json = context.getString(answered);
      if (json === "") return runFailures.outOfMemory(limits.memoryLimitBytes);
      return resultOverBound(json, maxResultBytes) ??
        { value: JSON.parse(json) as JsonValue };
    }
    if (context.typeof(context.getProp(answered, "tooLarge")) === "boolean") {
      return runFailures.resultTooLarge(maxResultBytes);
    }
    if (engine.exhausted()) {
      return runFailures.outOfMemory(limits.memoryLimitBytes);
    }
    const error = JSON.parse(
      context.getString(context.getProp(answered, "error")),
    ) as FailureDetail;
    // A built-in that cannot even make its "out of memory" error (the
    // parse of a large context) throws null, which the run's catch
    // describes as any thrown value: the limit, when the engine saw it
    // met, as for a null that escapes the run.
    if (isThrownNull(error) && memoryRanOut(engine)) {
      return runFailures.outOfMemory(limits.memoryLimitBytes);
    }
    return classify(error, limits, engine);
  }

  /**
   * Where the guest starts: a warm graph of the modules it imports, found
   * or made now by evaluating them from the base snapshot and copying the
   * memory; or the memory they were just evaluated in with the run's
   * reserve taken, as the run itself would have, when no run checked yet
   * that their top level fits memory and stack limits as small as this
   * run's (what it allocates and lets go again, and the stack it takes,
   * while it runs are not in a copy). `null`
   * when the guest imports none, or when the graph cannot be kept warm;
   * the run then evaluates its packs itself, as the first run would have,
   * so it fails or logs exactly as without warm graphs. The run's deadline,
   * signal, import policy and memory limit hold while the packs evaluate
   * here.
   */
  #packStart(
    engine: Engine,
    guest: GuestModule,
    policy: ImportPolicy,
    limits: RunLimits,
    state: RunState,
  ): PackStart | null {
    if (guest.imports.length === 0) return null;
    const graphs = this.#warmGraphs;
    if (this.#warmEngine !== engine) {
      graphs.clear();
      this.#warmEngine = engine;
    }
    const key = guest.warmKey;
    if (graphs.refusedFor(key, limits)) return null;
    if (!graphs.fitFor(key, limits)) {
      const evaluated = this.#evaluateInPlace(
        engine,
        guest.imports,
        policy,
        limits,
        state,
      );
      // Refused for runs with limits no larger than this one's only: it
      // may have failed for this run's limits alone.
      if (evaluated === "refused") graphs.refuse(key, limits);
      if (evaluated === "fits" || typeof evaluated !== "string") {
        graphs.fits(key, limits);
      }
      return typeof evaluated === "string" ? null : { evaluated };
    }
    const found = graphs.get(key);
    if (found !== undefined) return { graph: found };
    const made = this.#evaluatePacks(
      engine,
      guest.imports,
      policy,
      limits,
      state,
    );
    if (made === "refused") graphs.refuse(key, limits);
    if (made === "refused" || made === "ended") return null;
    graphs.add(key, made);
    return { graph: made };
  }

  /**
   * Evaluates the guest's pack modules from the base snapshot with the
   * run's reserve taken, as the run itself would, and leaves them there
   * for the guest to link against.
   *
   * @returns What their top level logged, when it ran to its end within
   * the run's limits; `"fits"` when it did but logged more than the run
   * keeps, which the run's guest must not add to; `"ended"` when the run's
   * deadline, signal, memory or a denial ended it; `"failed"` when an
   * allocation was refused, which a larger limit may not be; `"refused"`
   * when it failed otherwise. The run then evaluates them itself and meets
   * the same end.
   */
  #evaluateInPlace(
    engine: Engine,
    imports: readonly ImportAllowed[],
    policy: ImportPolicy,
    limits: RunLimits,
    state: RunState,
  ): readonly LogEntry[] | "fits" | "ended" | "failed" | "refused" {
    const logs = createLogCollector(limits.maxLogBytes);
    const outcome = this.#evaluateImports(
      engine,
      imports,
      { policy, limits, state, logs, reserved: true },
    );
    if (outcome === "ended") return "ended";
    if (
      outcome === "unreserved" || engine.growthRefused() ||
      engine.hostAllocationRefused()
    ) return "failed";
    if (outcome.kind !== "value" || engine.runtime.hasPendingJob()) {
      return "refused";
    }
    return logs.truncated ? "fits" : logs.logs;
  }

  /**
   * Evaluates the guest's pack modules, in the guest's order, in the base
   * snapshot, and copies the memory. No reserve is taken meanwhile, so the
   * copy ends where the packs' allocations end; what the copy holds above
   * the base counts against each run's limit when its reserve is taken,
   * and a run with a limit as small as this one's saw what they use while
   * they run fit (see {@linkcode Executor.#packStart}).
   *
   * @returns The graph; `"ended"` when the run's deadline, signal, memory
   * or a denial ended it; `"refused"` when it cannot be kept warm.
   */
  #evaluatePacks(
    engine: Engine,
    imports: readonly ImportAllowed[],
    policy: ImportPolicy,
    limits: RunLimits,
    state: RunState,
  ): WarmGraph | "ended" | "refused" {
    const { runtime } = engine;
    const logs = createLogCollector(WARM_LOG_BYTES);
    const lengthAtStart = engine.memory.buffer.byteLength;
    const outcome = this.#evaluateImports(
      engine,
      imports,
      { policy, limits, state, logs, reserved: false },
    );
    if (outcome === "ended") return "ended";
    if (outcome === "unreserved") return "refused";
    // Memory the packs grew stays with the engine: replace it after the run.
    if (engine.grownSince(lengthAtStart)) {
      engine.broken = true;
      return "refused";
    }
    if (outcome.kind !== "value" || runtime.hasPendingJob()) return "refused";
    if (logs.truncated) return "refused";
    const snapshot = engine.capture();
    return snapshot === null ? "refused" : { snapshot, logs: logs.logs };
  }

  /**
   * Writes back the base snapshot and evaluates `imports` there, with the
   * run's reserve taken when `reserved`.
   *
   * @returns How their evaluation ended; `"ended"` when the run's
   * deadline, signal, memory or a denial ended it; `"unreserved"` when the
   * reserve could not be taken.
   */
  #evaluateImports(
    engine: Engine,
    imports: readonly ImportAllowed[],
    { policy, limits, state, logs, reserved }: {
      policy: ImportPolicy;
      limits: RunLimits;
      state: RunState;
      logs: LogCollector;
      reserved: boolean;
    },
  ): Outcome | "ended" | "unreserved" {
    const { runtime, context } = engine;
    engine.restore();
    applyLimits(runtime, limits, this.#stackCapBytes);
    if (reserved && !engine.reserve(limits.memoryLimitBytes)) {
      return "unreserved";
    }
    engine.hooks = this.#hooksFor(engine, NO_GUEST, policy, state, logs);
    reseed(context, engine.reseedFn);
    const source =
      imports.map((module) => `import ${JSON.stringify(module.name)};\n`).join(
        "",
      ) + `import "${LINKED_MODULE_NAME}";\n`;
    const evaluated = context.evalCode(source, WARM_MODULE_NAME, {
      type: "module",
    });
    const outcome: Outcome = evaluated.error
      ? { kind: "error", handle: evaluated.error }
      : settle(runtime, context, evaluated.value, state);
    engine.hooks = IDLE_HOOKS;
    // The guest's own imports are normalised again when it links.
    state.phase = "link";
    if (state.denial !== null || state.interrupt !== null) return "ended";
    return outcome;
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
    // Text the host copies in (a module's source, the context's JSON) that
    // did not fit: QuickJS never saw it, whatever the guest made of that.
    if (engine.hostAllocationRefused()) {
      return runFailures.outOfMemory(limits.memoryLimitBytes);
    }
    // Read first: the probe below may grow the memory, which clears it.
    const refused = engine.growthRefused();
    // When even the error could not be made whole, what was thrown tells
    // nothing (often `null`): the heap tells that the limit ended the run.
    if (engine.exhausted()) {
      return runFailures.outOfMemory(limits.memoryLimitBytes);
    }
    // `null` after an allocation the limit refused: QuickJS could not even
    // make its error, and what it was building is freed by now. (Its
    // uninitialized marker, which a built-in that fails without making an
    // error throws, is told in the context: describe answers
    // OUT_OF_MEMORY for it, as marshal.isOutOfMemory reads it.)
    if (refused && context.sameValue(error, context.null)) {
      return runFailures.outOfMemory(limits.memoryLimitBytes);
    }
    // Describing the error must not fail for the limit that raised it
    // (QuickJS's own, set to refuse everything once the guest asked too
    // often).
    engine.makeRoom(DESCRIBE_HEADROOM_BYTES);
    runtime.setMemoryLimit(NO_QUICKJS_LIMIT);
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
    // Told before a SyntaxError is read as the source's: QuickJS's parser
    // words a stack it exhausts on nested statements (blocks, try, labels)
    // as a SyntaxError "stack overflow", on nested expressions as its
    // InternalError: both are the stack limit. So is a regular expression
    // literal whose compiled code does not fit, a SyntaxError "out of
    // memory": the memory limit.
    if (detail.code === "STACK_OVERFLOW" || detail.code === "OUT_OF_MEMORY") {
      return classify(detail, limits, engine);
    }
    if (detail.name === "SyntaxError" && phase === "link") {
      return syntaxFailure(detail.message, detail.fileName, detail.stack);
    }
    if (detail.name === "SyntaxError" && loading && detail.stack === "") {
      // Linking failed: no code ran, so the error has no stack. A guest's
      // own top-level SyntaxError with an empty stack reads the same; it
      // only relabels its own failure, and telling the two apart cost a
      // module and a console call on every run.
      return {
        code: "GUEST_SYNTAX_ERROR",
        name: "SyntaxError",
        message:
          `Cannot link the guest source: ${detail.message}; import only names the module exports`,
      };
    }
    return classify(detail, limits, engine);
  }
}

/**
 * Whether the engine itself saw the run's memory run out: a growth of its
 * memory refused, a host copy that did not fit, or a heap used up now.
 * What guest code throws, or words as QuickJS's "out of memory", cannot
 * make any of these true without really asking for more than is left.
 */
function memoryRanOut(engine: Engine): boolean {
  return engine.limitMet() || engine.exhausted();
}

/** The marshalling's words for a thrown `null` (realm/marshal.ts). */
const THROWN_NULL_MESSAGE = "Guest code threw a non-Error value: null";

function isThrownNull(error: FailureDetail): boolean {
  return error.name === "NonErrorThrown" &&
    error.message === THROWN_NULL_MESSAGE;
}

/**
 * A described failure as the run's answer. The hardening tells QuickJS's
 * errors by their class and own message, which guest code can copy (`new
 * InternalError("out of memory")`, a caught error's message rewritten), so
 * `OUT_OF_MEMORY` also needs the engine's own record that the limit was
 * met; without it the error is the guest's, with its name and message.
 */
function classify(
  error: FailureDetail,
  limits: RunLimits,
  engine: Engine,
): FailureDetail {
  if (error.code === "OUT_OF_MEMORY") {
    return memoryRanOut(engine)
      ? runFailures.outOfMemory(limits.memoryLimitBytes)
      : { code: "GUEST_ERROR", name: error.name, message: error.message };
  }
  if (error.code === "STACK_OVERFLOW") return runFailures.stackOverflow();
  const code: ErrorCode = isErrorCode(error.code) ? error.code : "GUEST_ERROR";
  return { code, name: error.name, message: error.message };
}

/** The failure of a run a denial or an interrupt ended, whatever followed. */
function endedBy(state: RunState, limits: RunLimits): FailureDetail | null {
  if (state.denial !== null) return toFailure(state.denial);
  if (state.interrupt === "aborted") return runFailures.aborted();
  if (state.interrupt === "memory") {
    return runFailures.outOfMemory(limits.memoryLimitBytes);
  }
  if (state.interrupt === "timeout") {
    return runFailures.timeout(limits.timeoutMs);
  }
  return null;
}

/**
 * Drives QuickJS's job queue until a promise settles, a few jobs at a
 * time with the deadline and the signal checked between steps. A promise
 * still pending with no job left is stalled: no host API can settle it.
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
    state.interrupt ??= dueInterrupt(state);
    if (state.denial !== null || state.interrupt !== null) {
      return { kind: "ended" };
    }
    if (!runtime.hasPendingJob()) return { kind: "stalled" };
    const jobs = runtime.executePendingJobs(JOBS_PER_STEP);
    if (jobs.error) return { kind: "error", handle: jobs.error };
  }
}

/**
 * Sets the run's stack limit on the runtime, no larger than the thread's
 * native stack holds, so QuickJS's catchable check comes first. The memory
 * limit is the engine's reserve; QuickJS's own is lifted, since it refuses
 * a large block before the memory is asked, which leaves the engine no
 * record that the limit was met (see {@linkcode memoryRanOut}).
 */
function applyLimits(
  runtime: QuickJSRuntime,
  limits: RunLimits,
  stackCapBytes: number,
): void {
  runtime.setMemoryLimit(NO_QUICKJS_LIMIT);
  runtime.setMaxStackSize(Math.min(limits.maxStackSizeBytes, stackCapBytes));
}

/**
 * Seeds the context's `Math.random` (four words) and keys its `crypto`
 * (eight more) from the host's random source.
 */
function reseed(context: QuickJSContext, reseedFn: QuickJSHandle): void {
  const seed = crypto.getRandomValues(new Uint32Array(12));
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
        operatorJson(file)
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
