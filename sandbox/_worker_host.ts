/**
 * The parent's handle of one worker host process: starts it, sends it
 * runs, reads its answers and reports how it ended.
 *
 * @module
 */

import type { FailureDetail } from "../protocol/run_result.ts";
import type { LogEntry } from "../protocol/sandbox_result.ts";
import { isLogLevel } from "../protocol/log_levels.ts";
import { rootFolder } from "../protocol/host_environment.ts";
import type { RealmOutcome } from "./_guest_realm.ts";
import type { HostWatch } from "./_worker_host_main.ts";
import { readRealmOutcome } from "./_outcome.ts";
import { readValueLine, resultBound } from "./_result_bound.ts";
import { v8Flags, workerHostUrl } from "./_sources.ts";
import {
  BASE_FLAGS,
  killChild,
  readText,
  spawnDeno,
  splitLines,
  TextTail,
} from "./_spawn.ts";

/** What a host reports about its current run. */
export interface HostRunEvents {
  /** The guest module is about to be evaluated. */
  started(): void;
  /** One console line. */
  log(level: LogEntry["level"], message: string): void;
  /** The answer; `undefined` when the host sent something invalid. */
  result(outcome: RealmOutcome | undefined): void;
  /** The host found the run past its deadline or its memory bound. */
  over(reason: "timeout" | "memory"): void;
  /** The idle worker stopped itself when asked. */
  stopped(): void;
  /** The worker died of an error the bootstrap could not catch. */
  failed(message: string): void;
  /** The host process ended, before or during the run. */
  exited(exit: HostExit): void;
}

/** How a host process ended. */
export interface HostExit {
  /** The exit code (128 + the signal number when killed by a signal). */
  code: number;
  /** The signal that ended it, if any. */
  signal: string | null;
  /** The end of its stderr. */
  stderrTail: string;
  /**
   * What this process's code threw on the host's output, for which it
   * killed the host.
   */
  readFault?: { error: unknown };
}

/** Options of {@linkcode WorkerHost.start}. */
export interface WorkerHostOptions {
  /** Whether to keep one fresh worker started ahead of runs. */
  keepReady: boolean;
  /** The V8 heap cap of each isolate in the host, in bytes. */
  memoryLimitBytes: number;
}

/** One worker host process, running at most one guest at a time. */
export class WorkerHost {
  #child: Deno.ChildProcess;
  #writer: WritableStreamDefaultWriter<Uint8Array>;
  #encoder = new TextEncoder();
  #runId: string | undefined;
  #events: HostRunEvents | undefined;
  /** What comes before the value's text in the current run's result line. */
  #valuePrefix = "";
  #maxResultBytes = 0;
  #warm = false;
  #everWarm = false;
  #warmWaiters: (() => void)[] = [];
  #alive = true;
  /** How the process ended, once it has. */
  #exit: HostExit | undefined;
  #stderr = new TextTail(16 * 1024);
  /** What the code that reads the host threw first, if it did. */
  #readFault: { error: unknown } | undefined;
  /** Settles when the process has ended and its output is read. */
  readonly exited: Promise<HostExit>;
  /** The process id. */
  readonly pid: number;

  /**
   * Starts a host process.
   *
   * @param options The host's settings.
   * @returns The host, or a `SANDBOX_UNAVAILABLE` failure.
   */
  static start(options: WorkerHostOptions): WorkerHost | FailureDetail {
    const spawned = spawnDeno(
      [
        ...BASE_FLAGS,
        "--unstable-worker-options",
        v8Flags(options.memoryLimitBytes),
        workerHostUrl(options.keepReady),
      ],
      {},
      "worker sandbox",
      // The host reads no path: it starts where it always can.
      { cwd: rootFolder() },
    );
    return spawned.ok ? new WorkerHost(spawned.child) : spawned.failure;
  }

  private constructor(child: Deno.ChildProcess) {
    this.#child = child;
    this.pid = child.pid;
    this.#writer = child.stdin.getWriter();
    // A throw of the code that reads the host is a fault of this process:
    // the host, no longer heard, is ended, and the run hears why.
    const unread = (error: unknown) => {
      this.#readFault ??= { error };
      this.kill();
    };
    const stdout = readText(
      child.stdout,
      splitLines((line) => this.#receive(line)),
    ).catch(unread);
    const stderr = readText(child.stderr, (text) => this.#stderr.push(text))
      .catch(unread);
    this.exited = Promise.all([child.status, stdout, stderr]).then(
      ([status]) => {
        this.#alive = false;
        this.#writer.close().catch(() => {});
        this.#wakeWarmWaiters();
        const exit: HostExit = {
          code: status.code,
          signal: status.signal,
          stderrTail: this.#stderr.text,
          ...(this.#readFault === undefined ? {} : {
            readFault: this.#readFault,
          }),
        };
        this.#exit = exit;
        // Only the run under way hears of it: a host serves many runs, and
        // a callback per run on `exited` would keep every run's source,
        // logs and answer alive for as long as the host lives.
        this.#events?.exited(exit);
        return exit;
      },
    );
  }

  /** Whether the process is still running. */
  get alive(): boolean {
    return this.#alive;
  }

  /** Whether a fresh worker is started and waiting for a run. */
  get warm(): boolean {
    return this.#warm;
  }

  /** Whether a fresh worker was ever reported ready: the host works. */
  get everWarm(): boolean {
    return this.#everWarm;
  }

  /**
   * Waits until a fresh worker is waiting, or the host has ended.
   *
   * @returns When either happened.
   */
  whenWarm(): Promise<void> {
    if (this.#warm || !this.#alive) return Promise.resolve();
    return new Promise((resolve) => this.#warmWaiters.push(resolve));
  }

  /**
   * Hands the host one run. The host must be idle.
   *
   * @param id The run's unguessable id.
   * @param source The guest source.
   * @param contextJson The context as JSON text.
   * @param maxLogBytes The console budget.
   * @param maxResultBytes The bound on the value's JSON text.
   * @param parseOnly Whether to parse the source without running it.
   * @param watch The limits the host holds the run to itself.
   * @param events Receives what happens.
   */
  run(
    id: string,
    source: string,
    contextJson: string,
    maxLogBytes: number,
    maxResultBytes: number,
    parseOnly: boolean,
    watch: HostWatch,
    events: HostRunEvents,
  ): void {
    this.#runId = id;
    this.#events = events;
    this.#valuePrefix = `{"t":"result","id":${
      JSON.stringify(id)
    },"outcome":{"ok":true,"value":`;
    this.#maxResultBytes = maxResultBytes;
    this.#warm = false;
    const exit = this.#exit;
    if (exit !== undefined) {
      // It ended before this run: the run hears of it once it is under way.
      Promise.resolve().then(() => {
        if (this.#events === events) events.exited(exit);
      });
      return;
    }
    this.#send(
      `{"t":"run","id":${
        JSON.stringify(id)
      },"maxLogBytes":${maxLogBytes},"result":${
        JSON.stringify(resultBound(maxResultBytes))
      },"parseOnly":${parseOnly},"watch":${JSON.stringify(watch)},"source":${
        JSON.stringify(source)
      },"context":${contextJson}}\n`,
    );
  }

  /**
   * Asks the current run's worker to stop; it answers `stopped` when it was
   * idle, and nothing when it is stuck in code.
   *
   * @param id The run's id.
   */
  stop(id: string): void {
    if (this.#runId === id) {
      this.#send(`{"t":"stop","id":${JSON.stringify(id)}}\n`);
    }
  }

  /** Forgets the current run; later messages about it are ignored. */
  release(): void {
    this.#runId = undefined;
    this.#events = undefined;
  }

  /** Ends the process at once. */
  kill(): void {
    killChild(this.#child);
  }

  /** Lets the process keep the caller's event loop alive. */
  ref(): void {
    if (this.#alive) this.#child.ref();
  }

  /** Stops the process from keeping the caller's event loop alive. */
  unref(): void {
    if (this.#alive) this.#child.unref();
  }

  #send(line: string): void {
    this.#writer.write(this.#encoder.encode(line)).catch(() => {});
  }

  #wakeWarmWaiters(): void {
    for (const wake of this.#warmWaiters.splice(0)) wake();
  }

  #receive(line: string): void {
    let value: RealmOutcome | undefined;
    let message: unknown;
    try {
      value = this.#events === undefined
        ? undefined
        : readValueLine(line, this.#valuePrefix, this.#maxResultBytes);
      if (value === undefined) message = JSON.parse(line);
    } catch (error) {
      // Only a line that is not JSON is the host's: any other throw is of
      // this process's reading, which ends the host and names it.
      if (!(error instanceof SyntaxError)) throw error;
    }
    if (value !== undefined) {
      this.#events!.result(value);
      return;
    }
    // Only the host writes to its stdout; a broken line means a broken host.
    // One that is JSON but no object (`null`) is as broken: reading `t` from
    // it threw, which ended the reading of stdout and left the host alive
    // and unheard until the run's deadline.
    if (typeof message !== "object" || message === null) {
      this.kill();
      return;
    }
    this.#handle(message as Record<string, unknown>);
  }

  #handle(message: Record<string, unknown>): void {
    if (message.t === "warm") {
      this.#warm = true;
      this.#everWarm = true;
      this.#wakeWarmWaiters();
      return;
    }
    const events = this.#events;
    if (events === undefined || message.id !== this.#runId) return;
    switch (message.t) {
      case "started":
        events.started();
        break;
      case "log":
        if (
          typeof message.level === "string" && isLogLevel(message.level) &&
          typeof message.message === "string"
        ) {
          events.log(message.level, message.message);
        }
        break;
      case "result":
        events.result(readRealmOutcome(message.outcome));
        break;
      case "over":
        if (message.reason === "timeout" || message.reason === "memory") {
          events.over(message.reason);
        }
        break;
      case "stopped":
        events.stopped();
        break;
      case "failed":
        events.failed(String(message.message));
        break;
    }
  }
}
