/**
 * The process tier: each run in its own `deno run` subprocess with no
 * permissions, a V8 heap cap and a hard kill on timeout.
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
import type { LogCollector } from "../protocol/run_result.ts";
import { runFailures } from "../protocol/run_result.ts";
import type { DeclarationInput } from "../protocol/declaration.ts";
import type { SandboxResult } from "../protocol/sandbox_result.ts";
import { isLogLevel } from "../protocol/log_levels.ts";
import { type Answer, driveRun, failed } from "./_drive.ts";
import type { RealmOutcome } from "./_guest_realm.ts";
import { createFrameParser } from "./_nonce_frames.ts";
import { HeldSteps } from "./_held_steps.ts";
import {
  type CheckedRun,
  checkEnv,
  checkGrantList,
  checkInteger,
  checkRun,
  defaultConcurrency,
  readMaxLogBytes,
  readMaxQueued,
  readMemoryLimitBytes,
  readTimeoutMs,
} from "./_options.ts";
import {
  crashFailure,
  deepSourceFailure,
  isLoaderStackOverflow,
  isOutOfMemoryReport,
  readRealmOutcome,
  realmFailure,
  RUST_STACK_REPORT_LINE,
  unreadOutputFailure,
} from "./_outcome.ts";
import { watchResidentMemory } from "./resident_memory.ts";
import { Slots } from "../protocol/slots.ts";
import { PROCESS_BOOTSTRAP_URL, v8Flags } from "./_sources.ts";
import { readValueLine, resultBound } from "./_result_bound.ts";
import {
  BASE_FLAGS,
  killChild,
  readText,
  spawnDeno,
  TextTail,
} from "./_spawn.ts";
import type { Sandbox, SandboxRunOptions } from "./types.ts";

export type { Sandbox, SandboxRunOptions } from "./types.ts";

/** How long a child may take to start and read its input. */
const STARTUP_LIMIT_MS = 30_000;

/** The first stderr line of V8's report on an exhausted heap. */
const V8_REPORT =
  /^(?:<--- Last few GCs --->|#\s*Fatal JavaScript|FATAL ERROR: .*heap)/;

/**
 * Whether a child's end can be V8's, which ends a process with a signal
 * (SIGTRAP) after its report on an exhausted heap. Guest code may write
 * that report to stderr itself and exit, but it cannot signal its own
 * process: Deno allows that without run permission, so the bootstrap
 * refuses `Deno.kill`. Windows has no signals to tell them apart.
 */
function endedByV8(status: Deno.CommandStatus): boolean {
  return status.signal !== null || Deno.build.os === "windows";
}

/**
 * Whether a child ended as the kernel ends one past its CPU limit: SIGXCPU,
 * or SIGKILL a second of CPU later when the guest listens for SIGXCPU.
 * This process's own SIGKILL (timeout, abort, memory) is told apart before;
 * the system's out-of-memory killer, which also sends SIGKILL, is not.
 */
function endedByCpuLimit(status: Deno.CommandStatus): boolean {
  return status.signal === "SIGXCPU" || status.signal === "SIGKILL";
}

/** Options of {@linkcode createProcessSandbox}. */
export interface ProcessSandboxOptions extends RunInputBoundOptions {
  /**
   * The default time limit of a run, in milliseconds. The child is killed
   * when it is over. On Linux, where this process may run
   * `/usr/bin/prlimit`, the kernel also ends a child past twice this in
   * whole seconds, plus one, of CPU time, which holds while this process's
   * event loop is blocked.
   *
   * @default {5000}
   */
  timeoutMs?: number | undefined;
  /**
   * The default cap on captured output, in bytes of UTF-8.
   *
   * @default {65536}
   */
  maxLogBytes?: number | undefined;
  /**
   * The child's V8 heap cap, in bytes (`--max-old-space-size`, rounded up
   * to whole MiB). A run over it resolves with `OUT_OF_MEMORY`. Memory
   * outside the V8 heap (ArrayBuffer contents, WebAssembly memory) is not
   * counted there; on Linux, a child whose resident memory passes this
   * plus 128 MiB is ended with `OUT_OF_MEMORY` too.
   *
   * @default {134217728}
   */
  memoryLimitBytes?: number | undefined;
  /**
   * The most children at once; more runs wait in a queue.
   *
   * @default {navigator.hardwareConcurrency}
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
   * Paths guest code may read (`--allow-read=`). Relative paths resolve
   * against the caller's working directory.
   *
   * @default {[]}
   */
  allowRead?: string[] | undefined;
  /**
   * Paths guest code may write (`--allow-write=`).
   *
   * @default {[]}
   */
  allowWrite?: string[] | undefined;
  /**
   * Hosts guest code may reach (`--allow-net=`), such as `"127.0.0.1:8080"`.
   *
   * @default {[]}
   */
  allowNet?: string[] | undefined;
  /**
   * The child's whole environment; guest code may read exactly these
   * variables. The caller's own environment never reaches the child. Names
   * the runtime reads for the child itself are refused (`DENO_*`,
   * `NODE_*`, `LD_*`, `HTTP_PROXY` and the others the overview lists).
   *
   * @default {{}}
   */
  env?: Record<string, string> | undefined;
}

/** The process tier. The caller owns it and must dispose it. */
export interface ProcessSandbox extends Sandbox {
  /** Always `"process"`. */
  readonly tier: "process";
}

const PROCESS_OPTION_KEYS: OptionKeys<ProcessSandboxOptions> = {
  timeoutMs: true,
  maxLogBytes: true,
  memoryLimitBytes: true,
  ...RUN_INPUT_BOUND_KEYS,
  concurrency: true,
  maxQueued: true,
  allowRead: true,
  allowWrite: true,
  allowNet: true,
  env: true,
};

/**
 * Creates a process sandbox.
 *
 * Each run starts `deno run` (the caller's own Deno executable) with
 * `--no-prompt`, `--no-config`, `--no-remote`, `--no-npm`, no permissions
 * besides the ones the options grant, a V8 heap cap, no code generation
 * from strings and an empty environment. The guest source and context reach
 * the child on stdin. The answer comes back on stdout in frames that start
 * with a per-run secret the guest never sees, so whatever guest code prints
 * is kept as log lines and cannot pose as the answer. On timeout or abort
 * the child is killed with SIGKILL; it cannot have started processes of
 * its own, since run permission is never granted. Nothing is written to
 * disk. The caller's process needs permission to run the Deno executable
 * (`--allow-run`). On Linux, when it may also run `/usr/bin/setpriv`, each
 * child starts through `setpriv --pdeathsig KILL`, so the kernel kills it
 * when the caller dies, even of SIGKILL and with its guest stuck in a loop;
 * when it may run `/usr/bin/prlimit`, each child also gets a CPU time limit
 * (see `timeoutMs`).
 *
 * @param options The sandbox's settings.
 * @returns The sandbox. The caller owns it and must dispose it.
 * @throws {TypeError} When an option has the wrong type or is unknown.
 * @throws {RangeError} When an option is out of range.
 *
 * @example Run guest code in a subprocess
 * ```ts ignore
 * import { createProcessSandbox } from "@cordon/cordon/sandbox/process";
 * import assert from "node:assert/strict";
 *
 * await using sandbox = createProcessSandbox({ memoryLimitBytes: 64 * 1024 * 1024 });
 * const result = await sandbox.run("export default [1, 2, 3].map((n) => n * 2);");
 * assert.deepEqual(result.ok && result.value, [2, 4, 6]);
 * assert.equal(result.metrics.exitCode, 0);
 * ```
 */
export function createProcessSandbox(
  given: ProcessSandboxOptions = {},
): ProcessSandbox {
  const options = readOptions(
    "create the process sandbox",
    given ?? null,
    PROCESS_OPTION_KEYS,
  );
  const grants: string[] = [];
  const grant = (flag: string, value: unknown, name: string) => {
    if (value === undefined) return;
    const list = checkGrantList(value, name);
    if (list.length > 0) grants.push(`--allow-${flag}=${list.join(",")}`);
  };
  grant("read", options.allowRead, "allowRead");
  grant("write", options.allowWrite, "allowWrite");
  grant("net", options.allowNet, "allowNet");
  const env = options.env === undefined ? {} : checkEnv(options.env);
  const names = Object.keys(env);
  if (names.length > 0) grants.push(`--allow-env=${names.join(",")}`);
  const memoryLimitBytes = readMemoryLimitBytes(options.memoryLimitBytes);
  return new ProcessSandboxImpl({
    timeoutMs: readTimeoutMs(options.timeoutMs),
    maxLogBytes: readMaxLogBytes(options.maxLogBytes),
    bounds: readRunInputBounds(
      "configure the sandbox",
      options,
      DEFAULT_RUN_INPUT_BOUNDS,
    ),
    concurrency: options.concurrency === undefined
      ? defaultConcurrency()
      : checkInteger(options.concurrency, "concurrency", 1, 1024),
    memoryLimitBytes,
    maxQueued: readMaxQueued(options.maxQueued),
    args: [
      ...BASE_FLAGS,
      v8Flags(memoryLimitBytes),
      ...grants,
      PROCESS_BOOTSTRAP_URL,
    ],
    env,
  });
}

interface Settings {
  bounds: RunInputBounds;
  maxQueued: number;
  timeoutMs: number;
  maxLogBytes: number;
  concurrency: number;
  memoryLimitBytes: number;
  args: string[];
  env: Record<string, string>;
}

/**
 * What comes before a value's text in the child's frame of a result: its
 * bytes are counted there before the text is parsed.
 */
const VALUE_FRAME_PREFIX = '{"t":"result","outcome":{"ok":true,"value":';

function randomNonce(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  let text = "";
  for (const byte of bytes) text += byte.toString(16).padStart(2, "0");
  return `\u001e${text}:`;
}

class ProcessSandboxImpl implements ProcessSandbox {
  readonly tier = "process" as const;
  #settings: Settings;
  #slots: Slots;
  #active = new Set<Deno.ChildProcess>();
  #pending = new Set<Promise<unknown>>();
  #disposed = false;
  #disposing: Promise<void> | undefined;

  constructor(settings: Settings) {
    this.#settings = settings;
    this.#slots = new Slots(settings.concurrency, settings.maxQueued);
  }

  run(
    declaration: DeclarationInput | string,
    options?: SandboxRunOptions,
  ): Promise<SandboxResult> {
    if (this.#disposed) {
      return Promise.reject(
        new CordonError(
          "SANDBOX_DISPOSED",
          runFailures.disposed("process sandbox").message,
        ),
      );
    }
    let run: CheckedRun;
    try {
      run = checkRun(declaration, options, {
        tier: "process",
        timeoutMs: this.#settings.timeoutMs,
        maxLogBytes: this.#settings.maxLogBytes,
        bounds: this.#settings.bounds,
      });
    } catch (error) {
      return Promise.reject(error);
    }
    const result = driveRun({
      tier: "process",
      run,
      slots: this.#slots,
      disposed: () => this.#disposed,
      execute: (logs, effective) => this.#execute(effective, logs),
    });
    this.#pending.add(result);
    const forget = () => this.#pending.delete(result);
    result.then(forget, forget);
    return result;
  }

  [Symbol.asyncDispose](): Promise<void> {
    if (this.#disposing !== undefined) return this.#disposing;
    this.#disposed = true;
    this.#slots.close();
    for (const child of this.#active) killChild(child);
    this.#disposing = Promise.allSettled([...this.#pending]).then(() => {});
    return this.#disposing;
  }

  async #execute(run: CheckedRun, logs: LogCollector): Promise<Answer> {
    if (this.#disposed) return failed(runFailures.disposed("process sandbox"));
    const settings = this.#settings;
    const spawned = spawnDeno(settings.args, settings.env, "process sandbox", {
      timeoutMs: run.timeoutMs,
    });
    if (!spawned.ok) return failed(spawned.failure);
    const { child, cpuLimited } = spawned;
    this.#active.add(child);
    const held = new HeldSteps(child);
    held.undo(() => this.#active.delete(child));
    try {
      return await this.#talk(child, cpuLimited, run, logs, held);
    } finally {
      await held.release();
    }
  }

  /**
   * Sends the run to its child and reads the answer, recording in `held`
   * each step to undo, so that every path out undoes them all. A child the
   * kernel ended at its CPU limit (`cpuLimited`) answers `TIMEOUT`.
   */
  async #talk(
    child: Deno.ChildProcess,
    cpuLimited: boolean,
    run: CheckedRun,
    logs: LogCollector,
    held: HeldSteps,
  ): Promise<Answer> {
    const settings = this.#settings;
    const nonce = randomNonce();
    let stopped: Answer | undefined;
    let started = false;
    let outcome: RealmOutcome | "invalid" | undefined;
    const stop = (answer: Answer) => {
      if (stopped !== undefined || outcome !== undefined) return;
      stopped = answer;
      held.clearTimer();
      killChild(child);
    };
    const onAbort = () => stop(failed(runFailures.aborted()));
    const signal = run.signal;
    if (signal !== undefined) {
      held.undo(() => signal.removeEventListener("abort", onAbort));
      signal.addEventListener("abort", onAbort, { once: true });
    }
    held.undo(watchResidentMemory(
      child.pid,
      settings.memoryLimitBytes,
      () => stop(failed(runFailures.outOfMemory(settings.memoryLimitBytes))),
    ));
    held.setTimer(
      () =>
        stop(failed(crashFailure(
          `the process did not start within ${STARTUP_LIMIT_MS} ms`,
        ))),
      STARTUP_LIMIT_MS,
    );

    const onFrame = (json: string) => {
      let value: RealmOutcome | undefined;
      let parsed: unknown;
      try {
        value = outcome === undefined
          ? readValueLine(json, VALUE_FRAME_PREFIX, run.maxResultBytes)
          : undefined;
        if (value === undefined) parsed = JSON.parse(json);
      } catch (error) {
        // Only a frame that is not JSON is the child's: any other throw is
        // of this process's reading, which ends the run and names it.
        if (!(error instanceof SyntaxError)) throw error;
      }
      if (value !== undefined) {
        outcome = value;
        held.clearTimer();
        return;
      }
      // A frame that is JSON but no object (`null`) is as broken as one
      // that is not JSON.
      if (typeof parsed !== "object" || parsed === null) {
        outcome ??= "invalid";
        return;
      }
      const frame = parsed as Record<string, unknown>;
      if (frame.t === "started" && !started) {
        started = true;
        held.clearTimer();
        if (stopped === undefined) {
          held.setTimer(
            () => stop(failed(runFailures.timeout(run.timeoutMs))),
            run.timeoutMs,
          );
        }
      } else if (frame.t === "log") {
        if (
          stopped === undefined && typeof frame.level === "string" &&
          isLogLevel(frame.level) && typeof frame.message === "string"
        ) {
          logs.push(frame.level, frame.message);
        }
      } else if (frame.t === "result" && outcome === undefined) {
        outcome = readRealmOutcome(frame.outcome) ?? "invalid";
        held.clearTimer();
      }
    };
    const lineLimit = run.maxLogBytes + 1;
    const stdout = createFrameParser(
      nonce,
      onFrame,
      (line) => {
        if (stopped === undefined) logs.push("log", line);
      },
      lineLimit,
    );
    // V8's report on an exhausted heap and Rust's on a thread out of stack
    // (each after a blank line) are not guest output: blank lines wait
    // until a line shows whether a report began.
    let inReport = false;
    let blankLines = 0;
    const stderrTail = new TextTail(16 * 1024);
    const stderr = createFrameParser(nonce, () => {}, (line) => {
      if (
        inReport || V8_REPORT.test(line) || RUST_STACK_REPORT_LINE.test(line)
      ) {
        inReport = true;
        return;
      }
      if (line === "") {
        blankLines++;
        return;
      }
      if (stopped !== undefined) return;
      for (; blankLines > 0; blankLines--) logs.push("error", "");
      logs.push("error", line);
    }, lineLimit);

    // The payload is one line; stdin then stays open until the child has
    // exited, so a child whose parent dies sees its end and exits too.
    const writer = child.stdin.getWriter();
    held.undo(() => void writer.close().catch(() => {}));
    writer.write(
      new TextEncoder().encode(
        `{"nonce":${
          JSON.stringify(nonce)
        },"parent":${Deno.pid},"maxLogBytes":${run.maxLogBytes},"result":${
          JSON.stringify(resultBound(run.maxResultBytes))
        },"parseOnly":${run.parseOnly},"source":${
          JSON.stringify(run.source)
        },"context":${run.contextJson}}\n`,
      ),
    ).catch(() => {
      // The child ended before reading its input; its exit says why.
    });
    // A throw of the code that reads the child is a fault of this process:
    // the child, no longer heard, is ended, and the run says why.
    let readFault: { error: unknown } | undefined;
    const unread = (error: unknown) => {
      readFault ??= { error };
      killChild(child);
    };
    const status = await held.read([
      child.status.finally(() => writer.close().catch(() => {})),
      readText(child.stdout, (text) => stdout.push(text)).then(() =>
        stdout.end()
      ).catch(unread),
      readText(child.stderr, (text) => {
        stderrTail.push(text);
        stderr.push(text);
      }).then(() => stderr.end()).catch(unread),
    ]);
    held.clearTimer();

    const exitCode = status.code;
    if (readFault !== undefined) {
      // Nothing read from the child is trusted: not even an answer.
      return failed(unreadOutputFailure("process", readFault.error), exitCode);
    }
    if (typeof outcome === "object") {
      return outcome.ok
        ? { ok: true, value: outcome.value, exitCode }
        : failed(realmFailure(outcome), exitCode);
    }
    if (this.#disposed && stopped === undefined) {
      return failed(runFailures.disposed("process sandbox"), exitCode);
    }
    if (stopped !== undefined) return { ...stopped, exitCode };
    if (outcome === "invalid") {
      return failed(
        crashFailure("the process sent an invalid answer"),
        exitCode,
      );
    }
    if (endedByV8(status) && isOutOfMemoryReport(stderrTail.text)) {
      return failed(
        runFailures.outOfMemory(settings.memoryLimitBytes),
        exitCode,
      );
    }
    if (
      isLoaderStackOverflow({
        signal: status.signal,
        stderrTail: stderrTail.text,
      })
    ) {
      return failed(deepSourceFailure(), exitCode);
    }
    if (started && cpuLimited && endedByCpuLimit(status)) {
      return failed(runFailures.timeout(run.timeoutMs), exitCode);
    }
    return failed(
      crashFailure(
        `the process exited with code ${exitCode}${
          status.signal === null ? "" : ` (${status.signal})`
        }${started ? "" : " before it started the guest"}`,
      ),
      exitCode,
    );
  }
}
