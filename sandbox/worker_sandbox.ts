/**
 * The worker tier: each run in a fresh Deno Web Worker with every
 * permission denied, hosted by a worker host subprocess.
 *
 * @module
 */

import {
  DEFAULT_RUN_INPUT_BOUNDS,
  readRunInputBounds,
  RUN_INPUT_BOUND_KEYS,
  type RunInputBoundOptions,
  type RunInputBounds,
} from "../protocol/run_inputs.ts";
import { CordonError } from "../protocol/cordon_error.ts";
import { type OptionKeys, readOptions } from "../protocol/options.ts";
import type { FailureDetail, LogCollector } from "../protocol/run_result.ts";
import { RESIDENT_POLL_MS, runFailures } from "../protocol/run_result.ts";
import type { DeclarationInput } from "../protocol/declaration.ts";
import type { SandboxResult } from "../protocol/sandbox_result.ts";
import { type Answer, driveRun, failed } from "./_drive.ts";
import {
  type CheckedRun,
  checkInteger,
  checkRun,
  defaultConcurrency,
  readMaxLogBytes,
  readMaxQueued,
  readMemoryLimitBytes,
  readTimeoutMs,
} from "./_options.ts";
import { crashFailure, hostExitFailure, realmFailure } from "./_outcome.ts";
import {
  readResidentBytes,
  residentBoundBytes,
  watchResidentMemory,
} from "./resident_memory.ts";
import { Slots } from "../protocol/slots.ts";
import { WorkerHost } from "./_worker_host.ts";
import type { Sandbox, SandboxRunOptions } from "./types.ts";

export type { Sandbox, SandboxRunOptions } from "./types.ts";

/** How long an idle worker has to confirm it stopped before its host is killed. */
const STOP_GRACE_MS = 200;
/** How long a host and its worker may take to start a run. */
const STARTUP_LIMIT_MS = 30_000;
/**
 * How much more than at rest a host may hold after a run and still take
 * another. Deno keeps some of a run's memory in the host once its worker
 * has ended (a Blob's bytes until the Blob is collected, which never
 * happens then; heap its allocator holds on to), and the next run's
 * resident bound would count it against that run.
 */
const HOST_GROWTH_LIMIT_BYTES = 32 * 1024 * 1024;

/** Options of {@linkcode createWorkerSandbox}. */
export interface WorkerSandboxOptions extends RunInputBoundOptions {
  /**
   * How many worker hosts to start at once, each with a fresh, never-used
   * worker waiting, so a run does not pay for starting one. Every host of a
   * pooled sandbox starts its next worker while a run goes on. No worker
   * ever runs two guests.
   *
   * @default {0}
   */
  pool?: number | undefined;
  /**
   * The most runs at once; each has a host process of its own, and more
   * runs wait in a queue.
   *
   * @default {the larger of pool and navigator.hardwareConcurrency}
   */
  concurrency?: number | undefined;
  /**
   * The most runs that may wait for one of the `concurrency` slots. A run
   * past it is refused at once with `SANDBOX_BUSY` (nothing ran: send it
   * again once runs finish), so a caller that submits faster than runs
   * finish cannot grow the host's memory without end. The default leaves
   * ordinary bursts alone (a thousand runs at once all wait and run).
   *
   * @default {100000}
   */
  maxQueued?: number | undefined;
  /**
   * The default time limit of a run, in milliseconds.
   *
   * @default {5000}
   */
  timeoutMs?: number | undefined;
  /**
   * The default cap on captured console output, in bytes of UTF-8.
   *
   * @default {65536}
   */
  maxLogBytes?: number | undefined;
  /**
   * The V8 heap cap of each worker (and of its host), in bytes. A run that
   * exceeds it ends its host and resolves with `OUT_OF_MEMORY`. Memory
   * outside the V8 heap (ArrayBuffer contents, WebAssembly memory) is not
   * counted there; on Linux, a child whose resident memory passes this
   * plus 128 MiB is ended with `OUT_OF_MEMORY` too.
   *
   * @default {134217728}
   */
  memoryLimitBytes?: number | undefined;
}

/** The worker tier. The caller owns it and must dispose it. */
export interface WorkerSandbox extends Sandbox {
  /** Always `"worker"`. */
  readonly tier: "worker";
  /**
   * Starts the pool's hosts and waits until each has a fresh worker
   * waiting. Without a pool it resolves at once.
   *
   * @returns When the pool is warm.
   * @throws {CordonError} With code `SANDBOX_UNAVAILABLE` when a host
   * cannot start, or `SANDBOX_DISPOSED` after disposal, also one that
   * comes while it waits.
   */
  ready(): Promise<void>;
}

const WORKER_OPTION_KEYS: OptionKeys<WorkerSandboxOptions> = {
  pool: true,
  concurrency: true,
  maxQueued: true,
  timeoutMs: true,
  maxLogBytes: true,
  memoryLimitBytes: true,
  ...RUN_INPUT_BOUND_KEYS,
};

/**
 * Creates a worker sandbox.
 *
 * Each run gets a fresh Web Worker with every Deno permission denied, in a
 * host subprocess that runs one guest at a time. The host is there because
 * Deno's `worker.terminate()` does not stop a worker stuck in a JavaScript
 * loop: on timeout or abort the idle worker is asked to stop itself, and a
 * worker that does not answer within 200 ms has its whole host killed, so
 * a timed-out guest stops using CPU before the run resolves. The host is
 * started with `--unstable-worker-options`, so the caller's process needs
 * neither that flag nor the `"unstable": ["worker-options"]` setting; it
 * needs permission to run the Deno executable (`--allow-run`). A host
 * exits when its stdin ends; on Linux, when the caller may also run
 * `/usr/bin/setpriv`, it starts through `setpriv --pdeathsig KILL`, so the
 * kernel kills it when the caller dies.
 *
 * @param options The sandbox's settings.
 * @returns The sandbox. The caller owns it and must dispose it.
 * @throws {TypeError} When an option has the wrong type or is unknown.
 * @throws {RangeError} When an option is out of range.
 *
 * @example Run guest code in a worker
 * ```ts ignore
 * import { createWorkerSandbox } from "@cordon/cordon/sandbox/worker";
 * import assert from "node:assert/strict";
 *
 * await using sandbox = createWorkerSandbox({ pool: 1 });
 * const result = await sandbox.run(
 *   "export default (context) => context.a + context.b;",
 *   { context: { a: 2, b: 3 } },
 * );
 * assert.equal(result.ok && result.value, 5);
 * ```
 */
export function createWorkerSandbox(
  given: WorkerSandboxOptions = {},
): WorkerSandbox {
  const options = readOptions(
    "create the worker sandbox",
    given ?? null,
    WORKER_OPTION_KEYS,
  );
  const pool = options.pool === undefined
    ? 0
    : checkInteger(options.pool, "pool", 0, 256);
  const concurrency = options.concurrency === undefined
    ? Math.max(pool, defaultConcurrency())
    : checkInteger(options.concurrency, "concurrency", 1, 1024);
  if (pool > concurrency) {
    throw new RangeError(
      `pool must not exceed concurrency (${concurrency}), got ${pool}`,
    );
  }
  return new WorkerSandboxImpl({
    pool,
    concurrency,
    timeoutMs: readTimeoutMs(options.timeoutMs),
    maxQueued: readMaxQueued(options.maxQueued),
    maxLogBytes: readMaxLogBytes(options.maxLogBytes),
    bounds: readRunInputBounds(
      "configure the sandbox",
      options,
      DEFAULT_RUN_INPUT_BOUNDS,
    ),
    memoryLimitBytes: readMemoryLimitBytes(options.memoryLimitBytes),
  });
}

interface Settings {
  bounds: RunInputBounds;
  maxQueued: number;
  pool: number;
  concurrency: number;
  timeoutMs: number;
  maxLogBytes: number;
  memoryLimitBytes: number;
}

interface ActiveRun {
  /** Ends the run with this answer once its host is dead. */
  dispose(): void;
}

class WorkerSandboxImpl implements WorkerSandbox {
  readonly tier = "worker" as const;
  #settings: Settings;
  #slots: Slots;
  #hosts = new Set<WorkerHost>();
  #idle: WorkerHost[] = [];
  #active = new Set<ActiveRun>();
  /** The least each host held as a run's guest started: its rest. */
  #restingBytes = new WeakMap<WorkerHost, number>();
  #disposed = false;
  #disposing: Promise<void> | undefined;

  constructor(settings: Settings) {
    this.#settings = settings;
    this.#slots = new Slots(settings.concurrency, settings.maxQueued);
    this.#fillPool();
  }

  run(
    declaration: DeclarationInput | string,
    options?: SandboxRunOptions,
  ): Promise<SandboxResult> {
    if (this.#disposed) return Promise.reject(disposedError());
    let run: CheckedRun;
    try {
      run = checkRun(declaration, options, {
        tier: "worker",
        timeoutMs: this.#settings.timeoutMs,
        maxLogBytes: this.#settings.maxLogBytes,
        bounds: this.#settings.bounds,
      });
    } catch (error) {
      return Promise.reject(error);
    }
    return driveRun({
      tier: "worker",
      run,
      slots: this.#slots,
      disposed: () => this.#disposed,
      execute: (logs, effective) => {
        if (this.#disposed) {
          return Promise.resolve(
            failed(runFailures.disposed("worker sandbox")),
          );
        }
        const host = this.#takeHost();
        if (!(host instanceof WorkerHost)) {
          return Promise.resolve(failed(host.error));
        }
        return this.#execute(host, effective, logs);
      },
    });
  }

  async ready(): Promise<void> {
    if (this.#disposed) throw disposedError();
    if (this.#settings.pool === 0) return;
    const failure = this.#fillPool();
    if (failure !== undefined) {
      throw new CordonError("SANDBOX_UNAVAILABLE", failure);
    }
    await Promise.all(this.#idle.map(async (host) => {
      // Idle hosts are unreferenced; waiting on one must keep the loop alive.
      host.ref();
      await host.whenWarm();
      if (this.#idle.includes(host)) host.unref();
    }));
    // A disposal meanwhile ended the hosts, which settles their warm-ups.
    if (this.#disposed) throw disposedError();
  }

  [Symbol.asyncDispose](): Promise<void> {
    if (this.#disposing !== undefined) return this.#disposing;
    this.#disposed = true;
    this.#slots.close();
    for (const run of this.#active) run.dispose();
    const hosts = [...this.#hosts];
    for (const host of hosts) {
      // An idle host is unreferenced; referencing it keeps the event loop
      // alive until its exit, which disposal awaits.
      host.ref();
      host.kill();
    }
    this.#idle = [];
    this.#disposing = Promise.all(hosts.map((host) => host.exited)).then(
      () => {},
    );
    return this.#disposing;
  }

  /** Starts hosts until the pool is full; returns why one could not start. */
  #fillPool(): string | undefined {
    while (!this.#disposed && this.#hosts.size < this.#settings.pool) {
      const host = this.#startHost();
      if (!(host instanceof WorkerHost)) return host.error.message;
      this.#idle.push(host);
      host.unref();
    }
    return undefined;
  }

  #startHost(): WorkerHost | { error: FailureDetail } {
    const started = WorkerHost.start({
      keepReady: this.#settings.pool > 0,
      memoryLimitBytes: this.#settings.memoryLimitBytes,
    });
    if (!(started instanceof WorkerHost)) return { error: started };
    this.#hosts.add(started);
    started.exited.then(() => this.#forget(started, started.everWarm));
    return started;
  }

  #takeHost(): WorkerHost | { error: FailureDetail } {
    this.#idle = this.#idle.filter((host) => host.alive);
    const warm = this.#idle.findIndex((host) => host.warm);
    const index = warm >= 0 ? warm : this.#idle.length - 1;
    if (index >= 0) return this.#idle.splice(index, 1)[0]!;
    return this.#startHost();
  }

  /** Drops an ended host; a pool host that had been healthy is replaced. */
  #forget(host: WorkerHost, healthy: boolean): void {
    this.#hosts.delete(host);
    const index = this.#idle.indexOf(host);
    if (index >= 0) this.#idle.splice(index, 1);
    if (healthy && !this.#disposed) this.#fillPool();
  }

  /** Notes what a host holds as a guest starts, before it allocates much. */
  #noteRest(host: WorkerHost): void {
    const bytes = readResidentBytes(host.pid);
    if (bytes === null) return;
    const rest = this.#restingBytes.get(host);
    if (rest === undefined || bytes < rest) this.#restingBytes.set(host, bytes);
  }

  /** Whether a host kept so much of its last run that the next has less room. */
  #outgrewRest(host: WorkerHost): boolean {
    const rest = this.#restingBytes.get(host);
    const bytes = readResidentBytes(host.pid);
    return rest !== undefined && bytes !== null &&
      bytes > rest + HOST_GROWTH_LIMIT_BYTES;
  }

  #putBack(host: WorkerHost): void {
    if (this.#disposed || !host.alive || this.#outgrewRest(host)) {
      host.kill();
      return;
    }
    host.unref();
    this.#idle.push(host);
  }

  #execute(
    host: WorkerHost,
    run: CheckedRun,
    logs: LogCollector,
  ): Promise<Answer> {
    const { promise, resolve } = Promise.withResolvers<Answer>();
    const id = crypto.randomUUID();
    const memoryLimitBytes = this.#settings.memoryLimitBytes;
    let phase: "starting" | "running" | "stopping" | "done" = "starting";
    let pending: Answer = failed(crashFailure("the worker host was stopped"));
    let timer: ReturnType<typeof setTimeout> | undefined;

    const settle = (answer: Answer, hostUsable: boolean): void => {
      if (phase === "done") return;
      phase = "done";
      clearTimeout(timer);
      stopWatch();
      run.signal?.removeEventListener("abort", onAbort);
      this.#active.delete(active);
      host.release();
      if (hostUsable) this.#putBack(host);
      else host.kill();
      resolve(answer);
    };

    const stop = (answer: Answer): void => {
      if (phase !== "starting" && phase !== "running") return;
      phase = "stopping";
      pending = answer;
      clearTimeout(timer);
      host.stop(id);
      timer = setTimeout(() => host.kill(), STOP_GRACE_MS);
    };

    // Ends the run with `answer` by killing its host at once, for what the
    // guest is not asked to stop: a disposal, or its memory. A run already
    // being stopped keeps the reason it was stopped for, as on the process
    // tier: its deadline came first, or its caller aborted it.
    const abandon = (answer: Answer): void => {
      if (phase === "done") return;
      if (phase !== "stopping") {
        phase = "stopping";
        pending = answer;
      }
      host.kill();
    };

    const onAbort = () => stop(failed(runFailures.aborted()));
    const active: ActiveRun = {
      dispose: () => abandon(failed(runFailures.disposed("worker sandbox"))),
    };
    this.#active.add(active);
    run.signal?.addEventListener("abort", onAbort, { once: true });

    timer = setTimeout(() => {
      if (phase !== "starting") return;
      phase = "stopping";
      pending = failed(
        crashFailure(
          `the worker did not start within ${STARTUP_LIMIT_MS} ms`,
        ),
      );
      host.kill();
    }, STARTUP_LIMIT_MS);

    const stopWatch = watchResidentMemory(
      host.pid,
      memoryLimitBytes,
      () => abandon(failed(runFailures.outOfMemory(memoryLimitBytes))),
    );
    host.ref();
    host.run(
      id,
      run.source,
      run.contextJson,
      run.maxLogBytes,
      run.maxResultBytes,
      run.parseOnly,
      {
        timeoutMs: run.timeoutMs,
        graceMs: STOP_GRACE_MS,
        residentBytes: residentBoundBytes(memoryLimitBytes),
        pollMs: RESIDENT_POLL_MS,
      },
      {
        started: () => {
          if (phase !== "starting") return;
          phase = "running";
          this.#noteRest(host);
          clearTimeout(timer);
          timer = setTimeout(
            () => stop(failed(runFailures.timeout(run.timeoutMs))),
            run.timeoutMs,
          );
        },
        log: (level, message) => {
          if (phase === "starting" || phase === "running") {
            logs.push(level, message);
          }
        },
        result: (outcome) => {
          if (outcome === undefined) {
            phase = "stopping";
            pending = failed(
              crashFailure("the worker host sent an invalid answer"),
            );
            host.kill();
          } else if (phase === "stopping") {
            // The guest answered after its deadline; its worker closed itself.
            settle(pending, true);
          } else if (outcome.ok) {
            settle({ ok: true, value: outcome.value }, true);
          } else {
            settle(failed(realmFailure(outcome)), true);
          }
        },
        // The host holds the run's limits itself, as its deadline and
        // watch below do, for a caller whose event loop was too busy to.
        over: (reason) =>
          reason === "memory"
            ? abandon(failed(runFailures.outOfMemory(memoryLimitBytes)))
            : stop(failed(runFailures.timeout(run.timeoutMs))),
        stopped: () => settle(pending, true),
        // A worker that died of an uncaught error may not have stopped its
        // code; its host is not trusted with another run.
        failed: (message) =>
          settle(
            failed(crashFailure(`the guest worker failed: ${message}`)),
            false,
          ),
        exited: (exit) =>
          settle(
            phase === "stopping"
              ? pending
              : failed(hostExitFailure(exit, memoryLimitBytes), exit.code),
            false,
          ),
      },
    );
    return promise;
  }
}

function disposedError(): CordonError {
  return new CordonError(
    "SANDBOX_DISPOSED",
    runFailures.disposed("worker sandbox").message,
  );
}
