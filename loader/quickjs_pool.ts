// This module is browser compatible.

/**
 * The QuickJS pool: the loader's `run()`, with each run on a runner the
 * pool can kill (a Deno subprocess in Deno, a Web Worker in browsers), so
 * no guest can stall the caller's thread, a run still going at its limit
 * is ended whatever it is doing, and runs use more than one core.
 *
 * @module
 */

import { hasOwnKey } from "../protocol/host_fields.ts";
import type { SandboxModuleCatalog } from "../catalog/types.ts";
import { readCatalogOption } from "./_catalog_option.ts";
import { CordonError } from "../protocol/cordon_error.ts";
import type { Declaration, DeclarationInput } from "../protocol/declaration.ts";
import {
  type ReadDeclaration,
  readDeclaration,
} from "../protocol/read_declaration.ts";
import {
  DEFAULT_MAX_QUEUED,
  MAX_QUEUED_RANGE,
  MAX_TIMER_MS,
  type OptionKeys,
  readIntegerOption,
  readOptions,
} from "../protocol/options.ts";
import type { LogLevel } from "../protocol/log_levels.ts";
import {
  createLogCollector,
  type FailureDetail,
  failureResult,
  type LogCollector,
  runFailures,
} from "../protocol/run_result.ts";
import type { SandboxResult } from "../protocol/sandbox_result.ts";
import { startRunTelemetry } from "../protocol/run_telemetry.ts";
import { waitInLine } from "../protocol/waiting_line.ts";
import { FairLine } from "../protocol/fair_line.ts";
import { CountsByRequester, requesterKey } from "../protocol/requester_key.ts";
import type { Requester } from "../protocol/delivery.ts";
import { deferred } from "./_deferred.ts";
import {
  DEFAULT_LIMITS,
  LIMIT_KEYS,
  readLimits,
  type RunLimits,
} from "./_limits.ts";
import {
  DEFAULT_RUN_INPUT_BOUNDS,
  readRunInputBounds,
  RUN_INPUT_BOUND_KEYS,
  type RunInputBoundOptions,
  type RunInputBounds,
} from "../protocol/run_inputs.ts";
import {
  inputRefusal,
  type PreparedRun,
  prepareRun,
  readRunSettings,
  type RunSettings,
} from "./_prepare.ts";
import {
  denoRuntime,
  isTrustedScriptUrl,
  nodeTooOldForRunners,
  nodeWorkerRunners,
  nodeWorkerThreads,
  processRunners,
  type RunnerPort,
  type SpawnRunner,
  unreadOutput,
  workerRunners,
} from "./_runner_port.ts";
import { readRunnerMessage, type RunnerMessage } from "./_runner_protocol.ts";
import {
  createQuickJSLoader,
  type QuickJSLoader,
  type QuickJSRunOptions,
} from "./quickjs_loader.ts";

/** Where a pool's runs execute. */
export type QuickJSPoolIsolation = "process" | "worker" | "in-thread";

/**
 * A `TrustedScriptURL` of the Trusted Types API, made by a policy of the
 * page (`trustedTypes.createPolicy(…).createScriptURL(url)`): what a page
 * whose Content-Security-Policy has `require-trusted-types-for 'script'`
 * must give as a worker's script. Its text is the URL.
 */
export interface TrustedScriptUrl {
  /** The URL. */
  toString(): string;
  /** The URL. */
  toJSON(): string;
}

/** Options of {@linkcode createQuickJSPool}. */
export interface QuickJSPoolOptions extends RunInputBoundOptions {
  /** Where declared packs come from; the pool prefetches and verifies with it. */
  catalog: SandboxModuleCatalog;
  /**
   * How many runners run at once.
   *
   * @default {2}
   */
  size?: number | undefined;
  /**
   * Where runs execute: `process` (Deno subprocesses, the default in
   * Deno and only there), `worker` (Web Workers, the default in browsers,
   * or Node's `worker_threads` from Node 20.16, the default there; refused
   * in Deno, whose `terminate()` cannot stop a runner inside a long
   * built-in call, and in an older Node) or `in-thread` (one in-thread
   * loader, the fallback where Workers are unavailable, never taken in
   * Node; it cannot stop a long built-in call or keep the caller's thread
   * free).
   */
  isolation?: QuickJSPoolIsolation | undefined;
  /**
   * The runner module, `quickjs_runner.ts` or a bundle of it. Browsers
   * need a bundle of `@cordon/cordon/loader/runner` served as JavaScript;
   * Node needs the file URL of the Node build's
   * `dist/node/loader/quickjs_runner.js`. A relative string resolves against
   * this module's URL, not the working directory. A page that requires
   * Trusted Types (`require-trusted-types-for 'script'`) passes a
   * {@linkcode TrustedScriptUrl} of an absolute URL, unless its default
   * policy accepts the runner's URL.
   *
   * @default {new URL("./quickjs_runner.ts", import.meta.url)}
   */
  runnerUrl?: string | URL | TrustedScriptUrl | undefined;
  /**
   * The most runs that may wait for a runner: runs handed to the pool that
   * hold no runner yet, past the runners that are free. A run beyond it
   * resolves at once with `SANDBOX_BUSY` (nothing ran: send it again once
   * runs finish), so a caller that submits faster than the runners finish
   * cannot grow the host's memory without end. The default leaves ordinary
   * bursts alone: a thousand runs handed at once to a pool of two all wait
   * and run. Ignored by the `in-thread` fallback, which has no queue.
   *
   * @default {100000}
   */
  maxQueued?: number | undefined;
  /**
   * The most runs of one requester (a run's `requester`, by its
   * `principalId` and `tenantId`; runs without one count together) that
   * may wait for a runner, counted as `maxQueued` counts. A run beyond it
   * resolves at once with `SANDBOX_BUSY`, so one tenant cannot fill the
   * whole queue and have every other tenant refused. Ignored by the
   * `in-thread` fallback, which has no queue.
   *
   * @default {maxQueued}
   */
  maxQueuedPerRequester?: number | undefined;
  /**
   * How long past a run's `timeoutMs` the pool waits for its runner's own
   * answer before it kills the runner, in milliseconds.
   *
   * @default {50}
   */
  killGraceMs?: number | undefined;
  /**
   * How long a runner may take to start, in milliseconds.
   *
   * @default {30000}
   */
  startTimeoutMs?: number | undefined;
  /**
   * The default wall-time limit of a run, in milliseconds.
   *
   * @default {5000}
   */
  timeoutMs?: number | undefined;
  /**
   * The default memory limit of a run, in bytes.
   *
   * @default {67108864}
   */
  memoryLimitBytes?: number | undefined;
  /**
   * The default stack limit of a run, in bytes.
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

/**
 * Runs declarations in QuickJS off the caller's thread. Dispose it to end
 * its runners.
 */
export interface QuickJSPool extends AsyncDisposable, Disposable {
  /**
   * Runs a declaration on the next free runner, with the same results,
   * codes and messages as {@linkcode QuickJSLoader.run}. A run still going
   * at `timeoutMs` plus the kill grace is ended by killing its runner; a
   * signal ends a computing guest at once the same way.
   *
   * @param declaration The guest source and the packs it may import, or
   * the source alone (a declaration without packages).
   * @param options The context value, a signal, the requester and limits.
   * @returns The result.
   * @throws {TypeError} When an option has the wrong type or is unknown.
   * @throws {RangeError} When a limit is out of range.
   * @throws {CordonError} `SANDBOX_DISPOSED` after the pool was disposed.
   */
  run(
    declaration: DeclarationInput | string,
    options?: QuickJSRunOptions,
  ): Promise<SandboxResult>;
  /** Where the runs execute. */
  readonly isolation: QuickJSPoolIsolation;
  /** How many runners run at once. */
  readonly size: number;
  /** How many runners were replaced so far: killed, crashed or recycled. */
  readonly replacements: number;
  /** Whether the pool was disposed. */
  readonly disposed: boolean;
}

const DEFAULT_SIZE = 2;
const MAX_SIZE = 64;
const DEFAULT_KILL_GRACE_MS = 50;
const DEFAULT_START_TIMEOUT_MS = 30_000;

/** What ended a run on a runner, from the pool's side. */
type Settled =
  | { kind: "message"; message: Extract<RunnerMessage, { kind: "result" }> }
  | { kind: "failure"; failure: FailureDetail };

/**
 * The lines a runner sent while its guest ran, for the answer of a run the
 * runner never answered (killed, aborted, crashed): held to the run's own
 * `maxLogBytes` here, whatever the runner sends.
 */
interface SentLogs extends LogCollector {
  /** The runner dropped a line at the cap: keep no more, and say so. */
  markTruncated(): void;
}

function sentLogs(maxLogBytes: number): SentLogs {
  // Made at the first line: most runs log nothing.
  let collector: LogCollector | null = null;
  let marked = false;
  return {
    push(level: LogLevel, message: string) {
      if (marked) return;
      collector ??= createLogCollector(maxLogBytes);
      collector.push(level, message);
    },
    markTruncated() {
      marked = true;
    },
    get logs() {
      return collector?.logs ?? [];
    },
    get truncated() {
      return marked || (collector?.truncated ?? false);
    },
  };
}

function crashed(detail: string): FailureDetail {
  return {
    code: "SANDBOX_CRASHED",
    name: "SandboxCrashedError",
    message:
      `The QuickJS runner ended without an answer (${detail}): the pool replaced it, so run again`,
  };
}

/** A failure that arrives when `signal` aborts; dispose it to stop listening. */
function failureOnAbort(
  signal: AbortSignal | undefined,
): Disposable & { failure: Promise<FailureDetail> } {
  const { promise, resolve } = deferred<FailureDetail>();
  const onAbort = () => resolve(runFailures.aborted());
  if (signal?.aborted) onAbort();
  else signal?.addEventListener("abort", onAbort, { once: true });
  return {
    failure: promise,
    [Symbol.dispose]: () => signal?.removeEventListener("abort", onAbort),
  };
}

/**
 * One runner of the pool: started, ready, and told one run at a time.
 * It is replaced, in the background, whenever it is killed or ends.
 */
class Slot {
  readonly #spawn: SpawnRunner;
  readonly #memoryLimitBytes: number;
  readonly #startTimeoutMs: number;
  readonly #onReplaced: () => void;
  #port: RunnerPort | null = null;
  #ready: Promise<void> = Promise.resolve();
  #isReady = false;
  #pending: ((settled: Settled) => void) | null = null;
  /** Where the lines of the run under way go. */
  #logs: SentLogs | null = null;
  #nextId = 0;
  #closed = false;
  /**
   * Whether a run has this slot: only then does its runner keep the
   * process alive, so a script that ends without disposing the pool exits.
   */
  #held = false;
  /** Killed runners not yet gone, so closing can wait for them. */
  readonly #dying = new Set<Promise<void>>();

  constructor(
    spawn: SpawnRunner,
    memoryLimitBytes: number,
    startTimeoutMs: number,
    onReplaced: () => void,
  ) {
    this.#spawn = spawn;
    this.#memoryLimitBytes = memoryLimitBytes;
    this.#startTimeoutMs = startTimeoutMs;
    this.#onReplaced = onReplaced;
  }

  /** Whether the runner has started and waits for a run. */
  get isReady(): boolean {
    return this.#isReady;
  }

  /**
   * Starts a runner; resolves when it is ready, rejects when it cannot
   * start or ends before it is ready (killed, or the slot closed).
   */
  start(): Promise<void> {
    if (this.#closed) return Promise.reject(new Error("the pool was disposed"));
    this.#isReady = false;
    const { promise, resolve, reject } = deferred<void>();
    let started = false;
    const timer = setTimeout(() => {
      const stuck = this.#port === port;
      // Failed first: a Web Worker's kill reports its exit at once, and
      // that "killed" would take the place of the reason.
      fail(`it did not start within ${this.#startTimeoutMs} ms`);
      if (stuck) this.#bury(port);
    }, this.#startTimeoutMs);
    const fail = (detail: string) => {
      clearTimeout(timer);
      if (!started) {
        // No run was given to it, and a runner that cannot start is tried
        // again by the next run, never in a loop. A run waiting for it
        // learns now: a runner buried before it was ready (the slot
        // closed) has no other end.
        if (this.#port === port) this.#port = null;
        reject(new Error(detail));
        return;
      }
      if (this.#port === port) this.#lost(detail);
    };
    const handle = (data: unknown) => {
      const message = readRunnerMessage(data);
      if (message?.kind === "ready") {
        if (started) return;
        started = true;
        this.#isReady = true;
        clearTimeout(timer);
        port.hold(this.#held);
        resolve();
      } else if (message?.kind === "unavailable") {
        if (started) return;
        // Not a runner's fault another would avoid: refuse with its reason.
        clearTimeout(timer);
        this.#port = null;
        reject(
          new CordonError(
            message.code ?? "SANDBOX_UNAVAILABLE",
            message.message,
          ),
        );
        this.#bury(port);
      } else if (message !== null && message.id === this.#nextId) {
        // Only the run under way's: one already answered is over.
        this.#receive(message);
      }
    };
    let port: RunnerPort;
    try {
      port = this.#spawn({
        message: (data) => {
          if (this.#port !== port) return;
          try {
            handle(data);
          } catch (error) {
            // A throw of this code is a fault of the pool, not of the guest:
            // left to escape it would end a Node host (an uncaught exception
            // of a worker's listener) or stop a Deno runner's reading. The
            // run ends saying what was thrown, and the runner, whose messages
            // the pool no longer follows, is killed. Failed first, as at the
            // start timeout: the kill's own end would take the reason's place.
            fail(unreadOutput(error));
            this.#bury(port);
          }
        },
        exit: (detail) => fail(detail),
      });
    } catch (error) {
      clearTimeout(timer);
      return Promise.reject(error);
    }
    this.#port = port;
    port.send({ kind: "init", memoryLimitBytes: this.#memoryLimitBytes });
    this.#ready = promise;
    return promise;
  }

  /** A message of the run under way. */
  #receive(
    message: Exclude<RunnerMessage, { kind: "ready" | "unavailable" }>,
  ): void {
    if (message.kind === "log") {
      this.#logs?.push(message.level, message.message);
    } else if (message.kind === "truncated") {
      this.#logs?.markTruncated();
    } else {
      this.#settle({ kind: "message", message });
    }
  }

  /** The runner ended on its own: its run fails, and a new runner starts. */
  #lost(detail: string): void {
    this.#port = null;
    this.#isReady = false;
    this.#settle({ kind: "failure", failure: crashed(detail) });
    this.#replace();
  }

  #settle(settled: Settled): void {
    const pending = this.#pending;
    this.#pending = null;
    this.#logs = null;
    pending?.(settled);
  }

  /**
   * Whether a run has this slot: its runner, or the one that replaces it,
   * keeps the process alive while held. A runner still starting keeps it
   * alive either way, until it is ready.
   */
  hold(held: boolean): void {
    this.#held = held;
    if (this.#isReady) this.#port?.hold(held);
  }

  /** Kills the runner and starts another in the background. */
  kill(): void {
    const port = this.#port;
    this.#port = null;
    this.#isReady = false;
    if (port !== null) this.#bury(port);
    this.#replace();
  }

  #bury(port: RunnerPort): Promise<void> {
    // Whoever waits for its end (a disposal) keeps the process alive.
    port.hold(true);
    const gone = port.kill();
    this.#dying.add(gone);
    void gone.then(() => this.#dying.delete(gone));
    return gone;
  }

  #replace(): void {
    if (this.#closed) return;
    this.#onReplaced();
    // A runner that cannot start is retried by the run that next needs it.
    this.start().catch(() => {});
  }

  /**
   * Resolves once the runner is ready, starting one if there is none, so a
   * replacement's start does not count against the next run's time.
   *
   * @returns `null` when ready, or the failure when no runner could start.
   */
  async ready(): Promise<FailureDetail | null> {
    try {
      if (this.#port === null) await this.start();
      else await this.#ready;
    } catch (error) {
      if (this.#closed) return runFailures.disposed("QuickJS pool");
      return crashed(error instanceof Error ? error.message : String(error));
    }
    if (this.#closed) return runFailures.disposed("QuickJS pool");
    return this.#port === null ? crashed("it ended before its run") : null;
  }

  /**
   * Sends one prepared run to the ready runner; the pool ends it early with
   * {@linkcode kill}. The lines the runner sends meanwhile go to `logs`.
   */
  run(
    prepared: PreparedRun,
    settings: RunSettings,
    logs: SentLogs,
  ): Promise<Settled> {
    const port = this.#port;
    if (port === null) {
      // The pool may close between a runner's ready and this call.
      const failure = this.#closed
        ? runFailures.disposed("QuickJS pool")
        : crashed("gone");
      return Promise.resolve({ kind: "failure", failure });
    }
    const { promise, resolve } = deferred<Settled>();
    this.#pending = resolve;
    this.#logs = logs;
    port.send({
      kind: "run",
      id: ++this.#nextId,
      prepared,
      limits: settings.limits,
      contextJson: settings.contextJson,
      maxResultBytes: settings.maxResultBytes,
    });
    return promise;
  }

  /** Ends the runner for good; resolves once it is gone. */
  close(): Promise<void> {
    this.#closed = true;
    const port = this.#port;
    this.#port = null;
    this.#isReady = false;
    if (port !== null) this.#bury(port);
    const gone = Promise.all([...this.#dying]).then(() => {});
    this.#settle({
      kind: "failure",
      failure: runFailures.disposed("QuickJS pool"),
    });
    return gone;
  }
}

/** The key of the line a run waits in: where every run without a requester waits. */
const NO_REQUESTER = "";

/** The key of the line a requester's runs wait in, by its ids. */
function lineKeyOf(requester: Requester | undefined): string {
  if (requester === undefined) return NO_REQUESTER;
  return requesterKey(requester.principalId, requester.tenantId);
}

/** The bounds on the runs that wait for a runner. */
interface QueueBounds {
  maxQueued: number;
  maxQueuedPerRequester: number;
}

/**
 * Runs on a fixed set of killable runners. Waiting runs take turns by
 * requester, so a requester with many runs waiting delays another's run by
 * at most one of its own per round; one requester's runs go in the order
 * they came.
 */
class QuickJSPoolImpl implements QuickJSPool {
  readonly #catalog: SandboxModuleCatalog;
  readonly #limits: RunLimits;
  readonly #inputBounds: RunInputBounds;
  readonly #killGraceMs: number;
  readonly #queueBounds: QueueBounds;
  /** Runs handed to the pool that hold no runner yet, by their line's key. */
  readonly #unplaced = new CountsByRequester();
  readonly #idle: Slot[];
  readonly #slots: readonly Slot[];
  readonly #waiting = new FairLine<string, (slot: Slot | null) => void>();
  readonly #counter: { replacements: number };
  readonly isolation: QuickJSPoolIsolation;
  #disposed = false;
  #closing: Promise<void> = Promise.resolve();
  /** Aborts at disposal: it ends the preparations of runs under way. */
  readonly #ending = new AbortController();

  constructor(
    catalog: SandboxModuleCatalog,
    limits: RunLimits,
    inputBounds: RunInputBounds,
    killGraceMs: number,
    queueBounds: QueueBounds,
    isolation: QuickJSPoolIsolation,
    slots: Slot[],
    counter: { replacements: number },
  ) {
    this.#queueBounds = queueBounds;
    this.#counter = counter;
    this.#catalog = catalog;
    this.#limits = limits;
    this.#inputBounds = inputBounds;
    this.#killGraceMs = killGraceMs;
    this.isolation = isolation;
    this.#slots = slots;
    this.#idle = [...slots];
  }

  get size(): number {
    return this.#slots.length;
  }

  get replacements(): number {
    return this.#counter.replacements;
  }

  get disposed(): boolean {
    return this.#disposed;
  }

  [Symbol.dispose](): void {
    void this.#close();
  }

  /** Ends every runner; resolves once they are gone. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.#close();
  }

  #close(): Promise<void> {
    if (!this.#disposed) {
      this.#disposed = true;
      this.#ending.abort();
      this.#closing = Promise.all(this.#slots.map((slot) => slot.close()))
        .then(() => {});
      for (const waiter of this.#waiting.takeAll()) waiter(null);
    }
    return this.#closing;
  }

  async run(
    declaration: DeclarationInput | string,
    options: QuickJSRunOptions = {},
  ): Promise<SandboxResult> {
    this.#assertAlive();
    // Read once, before anything else: the declaration is the author's
    // data, a failure whatever it is, and never read again.
    const read = readDeclaration(declaration);
    const settings = readRunSettings(
      options,
      this.#limits,
      this.#inputBounds,
    );
    const telemetry = startRunTelemetry("quickjs");
    try {
      return telemetry.end(await this.#run(read, settings));
    } catch (error) {
      telemetry.endThrown(error);
      throw error;
    }
  }

  async #run(
    read: ReadDeclaration,
    settings: RunSettings,
  ): Promise<SandboxResult> {
    const started = performance.now();
    const fail = (detail: FailureDetail, logs = createLogCollector(0)) =>
      failureResult(detail, logs, {
        tier: "quickjs",
        durationMs: performance.now() - started,
      });
    const { signal } = settings;
    if (signal?.aborted) return fail(runFailures.aborted());
    if (!read.ok) return fail(read.error);
    const refused = inputRefusal(read.declaration, settings);
    if (refused !== null) return fail(refused);
    const key = lineKeyOf(settings.requester);
    const refusal = this.#queueRefusal(key);
    if (refusal !== null) return fail(refusal);
    // Counted from here, before its packs are fetched: a run being
    // prepared holds memory as a waiting one does.
    this.#unplaced.add(key, 1);
    let prepared: PreparedRun | FailureDetail;
    let slot: Slot | null = null;
    try {
      prepared = await this.#prepare(read.declaration, settings);
      if (!hasOwnKey(prepared, "code")) {
        slot = await this.#acquire(key, signal);
      }
    } finally {
      this.#unplaced.add(key, -1);
    }
    if (hasOwnKey(prepared, "code")) return fail(prepared);
    if (slot === null) {
      return fail(
        this.#disposed
          ? runFailures.disposed("QuickJS pool")
          : runFailures.aborted(),
      );
    }
    // A finished run's result carries its logs; these are for a run its
    // runner never answered.
    const logs = sentLogs(settings.limits.maxLogBytes);
    try {
      const settled = await this.#runOn(slot, prepared, settings, logs);
      if (settled.kind === "failure") return fail(settled.failure, logs);
      if (settled.message.recycle) slot.kill();
      return settled.message.result;
    } finally {
      this.#release(slot);
    }
  }

  /**
   * Prepares a run (prefetch, entitlement) until the caller's signal, the
   * run's time limit or the pool's disposal ends it: a disposed pool
   * answers its runs at once, as it does those waiting for a runner, and
   * its catalog is told to stop fetching for them.
   */
  async #prepare(
    declaration: Declaration,
    settings: RunSettings,
  ): Promise<PreparedRun | FailureDetail> {
    const { signal } = settings;
    const ending = this.#ending.signal;
    const prepared = await prepareRun(this.#catalog, declaration, {
      ...settings,
      signal: signal === undefined ? ending : AbortSignal.any([signal, ending]),
    });
    const endedByDisposal = hasOwnKey(prepared, "code") && ending.aborted &&
      !signal?.aborted;
    return endedByDisposal ? runFailures.disposed("QuickJS pool") : prepared;
  }

  #assertAlive(): void {
    if (this.#disposed) {
      const { code, message } = runFailures.disposed("QuickJS pool");
      throw new CordonError(code, message);
    }
  }

  /**
   * Runs on `slot` until its answer, the deadline plus grace, or the
   * signal. The deadline starts once the runner is ready, so a replaced
   * runner's start does not count against the run.
   */
  async #runOn(
    slot: Slot,
    prepared: PreparedRun,
    settings: RunSettings,
    logs: SentLogs,
  ): Promise<Settled> {
    const { limits, signal } = settings;
    const aborted = failureOnAbort(signal);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timedOut = deferred<FailureDetail>();
    slot.hold(true);
    try {
      const notReady = await Promise.race([slot.ready(), aborted.failure]);
      if (notReady !== null) return { kind: "failure", failure: notReady };
      // Held to the longest delay a timer takes: past it a timer fires at
      // once, and the largest timeoutMs killed every run before it ran.
      timer = setTimeout(
        () => timedOut.resolve(runFailures.timeout(limits.timeoutMs)),
        Math.min(limits.timeoutMs + this.#killGraceMs, MAX_TIMER_MS),
      );
      const settled = await Promise.race([
        slot.run(prepared, settings, logs),
        Promise.race([timedOut.promise, aborted.failure]).then((failure) => ({
          kind: "failure" as const,
          failure,
        })),
      ]);
      if (settled.kind === "failure") slot.kill();
      return settled;
    } finally {
      slot.hold(false);
      clearTimeout(timer);
      aborted[Symbol.dispose]();
    }
  }

  /**
   * Why a run of the requester whose line is `key` cannot wait, or `null`
   * when it can: the runs that would wait with it, less the free runners,
   * already reach `maxQueued`, or its requester's reach
   * `maxQueuedPerRequester`.
   */
  #queueRefusal(key: string): FailureDetail | null {
    const free = this.#idle.length;
    const { maxQueued, maxQueuedPerRequester } = this.#queueBounds;
    if (this.#unplaced.total - free >= maxQueued) {
      return runFailures.busy("QuickJS pool", maxQueued);
    }
    if (this.#unplaced.of(key) - free >= maxQueuedPerRequester) {
      return runFailures.requesterBusy("QuickJS pool", maxQueuedPerRequester);
    }
    return null;
  }

  /**
   * The next free slot, or `null` when the signal aborts or the pool ends
   * first. A run that finds none waits in its requester's line (`key`).
   */
  #acquire(key: string, signal: AbortSignal | undefined): Promise<Slot | null> {
    if (signal?.aborted || this.#disposed) return Promise.resolve(null);
    // The ready runner used last (its code and caches are warm), before
    // one just replaced that may still be starting.
    const at = this.#idle.findLastIndex((slot) => slot.isReady);
    const [free] = this.#idle.splice(at === -1 ? 0 : at, 1);
    if (free !== undefined) return Promise.resolve(free);
    return waitInLine(this.#waiting.lineOf(key), signal, null);
  }

  /** Hands the slot to the run whose turn it is, or keeps it free. */
  #release(slot: Slot): void {
    if (this.#disposed) return;
    const next = this.#waiting.takeNext();
    if (next !== undefined) next(slot);
    else this.#idle.push(slot);
  }
}

/**
 * The fallback where no runner can start: one in-thread loader. Disposing
 * it ends the runs in flight with `SANDBOX_DISPOSED`, as a pool of runners
 * does, through a signal each run follows: a run computing without a check
 * sees it at its next interrupt check.
 */
class InThreadPool implements QuickJSPool {
  readonly #loader: QuickJSLoader;
  readonly #closing = new AbortController();
  readonly isolation: QuickJSPoolIsolation = "in-thread";
  readonly size = 1;
  readonly replacements = 0;

  constructor(loader: QuickJSLoader) {
    this.#loader = loader;
  }

  get disposed(): boolean {
    return this.#loader.disposed;
  }

  async run(
    declaration: DeclarationInput | string,
    options: QuickJSRunOptions = {},
  ): Promise<SandboxResult> {
    if (this.#loader.disposed) {
      const { code, message } = runFailures.disposed("QuickJS pool");
      throw new CordonError(code, message);
    }
    // Options of a wrong shape are left for the loader to refuse.
    if (typeof options !== "object" || options === null) {
      return this.#loader.run(declaration, options);
    }
    const closing = this.#closing.signal;
    const caller: unknown = options.signal;
    // A wrong signal is left for the loader to refuse with its TypeError.
    const signal = caller instanceof AbortSignal
      ? AbortSignal.any([caller, closing])
      : caller === undefined
      ? closing
      : caller;
    const result = await this.#loader.run(declaration, {
      ...options,
      signal: signal as AbortSignal,
    });
    const ended = !result.ok &&
      ["ABORTED", "SANDBOX_DISPOSED"].includes(result.error.code);
    if (!ended || !closing.aborted) return result;
    if (caller instanceof AbortSignal && caller.aborted) return result;
    return { ...result, error: runFailures.disposed("QuickJS pool") };
  }

  [Symbol.dispose](): void {
    this.#closing.abort();
    this.#loader[Symbol.dispose]();
  }

  [Symbol.asyncDispose](): Promise<void> {
    this[Symbol.dispose]();
    return Promise.resolve();
  }
}

const POOL_OPTION_KEYS: OptionKeys<QuickJSPoolOptions> = {
  ...LIMIT_KEYS,
  ...RUN_INPUT_BOUND_KEYS,
  catalog: true,
  size: true,
  isolation: true,
  runnerUrl: true,
  killGraceMs: true,
  startTimeoutMs: true,
  maxQueued: true,
  maxQueuedPerRequester: true,
};

function defaultIsolation(): QuickJSPoolIsolation {
  if (denoRuntime() !== undefined) return "process";
  // A Node too old for the runners is refused, not given the in-thread
  // loader: that cannot stop a long built-in call, which the caller who
  // made a pool relies on.
  if (
    nodeWorkerThreads() !== undefined || nodeTooOldForRunners() !== undefined
  ) {
    return "worker";
  }
  return typeof Worker === "function" ? "worker" : "in-thread";
}

/**
 * This module's URL, apart from any `new URL()`: webpack 5 reads
 * `new URL("./quickjs_runner.ts", import.meta.url)` as a file to bundle,
 * and fails the build of an app that bundles cordon's Node build or a
 * bundle of it, which hold no such file beside them.
 */
const MODULE_URL: string = import.meta.url;

function readRunnerUrl(value: unknown): URL {
  if (value === undefined) return new URL("./quickjs_runner.ts", MODULE_URL);
  if (isTrustedScriptUrl(value)) return readTrustedRunnerUrl(value);
  if (typeof value !== "string" && !(value instanceof URL)) {
    throw new TypeError(
      "Cannot create the QuickJS pool: runnerUrl must be a string or a URL",
    );
  }
  try {
    return new URL(value, MODULE_URL);
  } catch {
    throw new TypeError(
      `Cannot create the QuickJS pool: runnerUrl is not a URL: ${
        String(value)
      }`,
    );
  }
}

/**
 * The URL of a `TrustedScriptURL` runnerUrl. It must be absolute: the Worker
 * constructor resolves it against the page, where a string runnerUrl
 * resolves against this module.
 */
function readTrustedRunnerUrl(value: unknown): URL {
  const text = String(value);
  if (!URL.canParse(text)) {
    throw new TypeError(
      `Cannot create the QuickJS pool: runnerUrl is a TrustedScriptURL of a relative URL: ${text}; make it of an absolute URL`,
    );
  }
  return new URL(text);
}

function spawnerFor(
  isolation: "process" | "worker",
  runnerUrl: URL,
  script: unknown,
): SpawnRunner {
  const deno = denoRuntime();
  if (isolation === "worker") {
    if (deno !== undefined) {
      // A runner inside one long built-in call is a long WebAssembly call,
      // which Deno's terminate() leaves running: the run would answer
      // TIMEOUT while its thread kept a core busy until the call returned.
      throw new CordonError(
        "SANDBOX_UNAVAILABLE",
        'Cannot create the QuickJS pool: isolation "worker" cannot stop a runner in Deno, whose worker.terminate() leaves a long built-in call running; use "process" (grant --allow-run) or "in-thread"',
      );
    }
    const oldNode = nodeTooOldForRunners();
    if (oldNode !== undefined) {
      throw new CordonError(
        "SANDBOX_UNAVAILABLE",
        `Cannot create the QuickJS pool: its runners need Node 20.16 or later (process.getBuiltinModule), and this is Node ${oldNode}; upgrade Node, or pass isolation "in-thread", which cannot stop a long built-in call`,
      );
    }
    const threads = nodeWorkerThreads();
    if (threads !== undefined) return nodeWorkerRunners(threads, runnerUrl);
    if (typeof Worker !== "function") {
      throw new CordonError(
        "SANDBOX_UNAVAILABLE",
        'Cannot create the QuickJS pool: this runtime has no Web Workers; use isolation "in-thread" or "process"',
      );
    }
    return workerRunners(runnerUrl, script);
  }
  if (deno === undefined) {
    throw new CordonError(
      "SANDBOX_UNAVAILABLE",
      'Cannot create the QuickJS pool: isolation "process" needs Deno; use "worker" in browsers and Node',
    );
  }
  return processRunners(deno, runnerUrl);
}

async function startAll(slots: readonly Slot[]): Promise<void> {
  try {
    await Promise.all(slots.map((slot) => slot.start()));
  } catch (error) {
    await Promise.all(slots.map((slot) => slot.close()));
    // A runtime's refusal already says what to change.
    if (error instanceof CordonError) throw error;
    const detail = error instanceof Error ? error.message : String(error);
    throw new CordonError(
      "SANDBOX_UNAVAILABLE",
      `Cannot start the QuickJS pool's runners: ${detail}; ${
        startRemedy(error)
      }`,
    );
  }
}

/**
 * What a page of an opaque origin can do: no URL is of its origin, so no
 * Worker of a URL may start there, wherever the runner is served.
 */
const OPAQUE_ORIGIN_REMEDY =
  "this page's origin is opaque (a document sandboxed without allow-same-origin, by an iframe's sandbox attribute or a Content-Security-Policy sandbox directive), where a Worker may not start from runnerUrl; add allow-same-origin to the sandbox, or run guests on the page's own thread with createQuickJSLoader(), which cannot stop a long built-in call";

/** Whether this context's origin is opaque (a sandboxed document's is). */
function hasOpaqueOrigin(): boolean {
  return (globalThis as { origin?: unknown }).origin === "null";
}

/**
 * What to check when runners do not start, for the runtime the pool is in
 * and the way they failed: in Deno a refused start asks for the run
 * permission, in a page of an opaque origin the sandbox is named, and any
 * other failure points at the runner's URL.
 */
function startRemedy(error: unknown): string {
  if (denoRuntime() !== undefined) {
    const name = error instanceof Error ? error.name : "";
    return name === "NotCapable" || name === "PermissionDenied"
      ? "grant --allow-run (in Deno the runners are Deno subprocesses)"
      : "leave runnerUrl out, or pass the URL of the package's loader/quickjs_runner.ts";
  }
  if (nodeWorkerThreads() !== undefined) {
    return "pass runnerUrl: the file URL of the Node build's dist/node/loader/quickjs_runner.js";
  }
  if (hasOpaqueOrigin()) return OPAQUE_ORIGIN_REMEDY;
  return "serve a bundle of @cordon/cordon/loader/runner from this page's origin as JavaScript and pass its runnerUrl";
}

/**
 * Creates a pool of QuickJS runners over a catalog, each on a thread or
 * process of its own that the pool kills when a run must end. Every run is
 * prepared on the caller's side: the catalog prefetches, verifies and
 * resolves its packs and the entitlement policy is asked, so a runner only
 * ever receives verified bytes. The caller owns the returned pool and must
 * dispose it, which ends its runners; a runner waiting for a run does not
 * keep a Deno or Node process alive, so a script that forgets to still
 * exits once its runs are answered.
 *
 * @param options The catalog, the pool's size and isolation, and default limits.
 * @returns The pool, once every runner is ready.
 * @throws {TypeError} When the catalog is not an object, its
 *   `resolveForExecution`, `authorizeDelivery` or `summaries` is not a
 *   function or reading one throws, or an option has the wrong type or is
 *   unknown.
 * @throws {RangeError} When a limit or count is out of range.
 * @throws {CordonError} `SANDBOX_UNAVAILABLE` when the runners cannot start,
 * or the runtime cannot give the isolation asked for: `worker` in Deno
 * (whose `worker.terminate()` cannot stop a long built-in call), `process`
 * outside Deno, `worker` without Web Workers or in a Node older than 20.16
 * (the default there too), or runners that refuse to
 * compile WebAssembly (a runner script served with a
 * Content-Security-Policy without `'wasm-unsafe-eval'`).
 *
 * @example Run a guest that never ends, without stalling the caller
 * ```ts ignore
 * import { createQuickJSPool } from "@cordon/cordon/loader";
 * import { createDiskCatalog } from "@cordon/cordon/catalog/disk";
 * import assert from "node:assert/strict";
 *
 * await using pool = await createQuickJSPool({
 *   catalog: await createDiskCatalog("./packs"),
 *   size: 2,
 * });
 * const result = await pool.run(
 *   { source: "export default Array.prototype.indexOf.call({ length: 2e9 }, 1);" },
 *   { timeoutMs: 200 },
 * );
 * assert.equal(!result.ok && result.error.code, "TIMEOUT");
 * ```
 */
export async function createQuickJSPool(
  given: QuickJSPoolOptions,
): Promise<QuickJSPool> {
  const options = readOptions(
    "create the QuickJS pool",
    given ?? null,
    POOL_OPTION_KEYS,
  );
  const where = "create the QuickJS pool";
  const catalog = readCatalogOption(where, options.catalog);
  const size = readIntegerOption(where, "size", options.size, DEFAULT_SIZE, {
    min: 1,
    max: MAX_SIZE,
  });
  const killGraceMs = readIntegerOption(
    where,
    "killGraceMs",
    options.killGraceMs,
    DEFAULT_KILL_GRACE_MS,
    { min: 0, max: 60_000, unit: "milliseconds" },
  );
  const startTimeoutMs = readIntegerOption(
    where,
    "startTimeoutMs",
    options.startTimeoutMs,
    DEFAULT_START_TIMEOUT_MS,
    { min: 1, max: 600_000, unit: "milliseconds" },
  );
  const maxQueued = readIntegerOption(
    where,
    "maxQueued",
    options.maxQueued,
    DEFAULT_MAX_QUEUED,
    MAX_QUEUED_RANGE,
  );
  const maxQueuedPerRequester = readIntegerOption(
    where,
    "maxQueuedPerRequester",
    options.maxQueuedPerRequester,
    maxQueued,
    MAX_QUEUED_RANGE,
  );
  const limits = readLimits("create the QuickJS pool", options, DEFAULT_LIMITS);
  const inputBounds = readRunInputBounds(
    where,
    options,
    DEFAULT_RUN_INPUT_BOUNDS,
  );
  const isolation = options.isolation ?? defaultIsolation();
  if (!["process", "worker", "in-thread"].includes(isolation)) {
    throw new TypeError(
      'Cannot create the QuickJS pool: isolation must be "process", "worker" or "in-thread"',
    );
  }
  if (isolation === "in-thread") {
    return new InThreadPool(
      await createQuickJSLoader({ catalog, ...limits, ...inputBounds }),
    );
  }
  const runnerUrl = readRunnerUrl(options.runnerUrl);
  // A TrustedScriptURL goes to the Worker constructor as it came.
  const script = isTrustedScriptUrl(options.runnerUrl)
    ? options.runnerUrl
    : runnerUrl;
  const spawn = spawnerFor(isolation, runnerUrl, script);
  const counter = { replacements: 0 };
  const slots = Array.from(
    { length: size },
    () =>
      new Slot(spawn, limits.memoryLimitBytes, startTimeoutMs, () => {
        counter.replacements++;
      }),
  );
  await startAll(slots);
  return new QuickJSPoolImpl(
    catalog,
    limits,
    inputBounds,
    killGraceMs,
    { maxQueued, maxQueuedPerRequester },
    isolation,
    slots,
    counter,
  );
}
